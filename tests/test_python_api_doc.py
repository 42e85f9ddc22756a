"""docs/python-api.md runs as written (issue 25): every ```python block, in order, in one namespace,
as a notebook would run its cells, on TREC DL 2019; the figures the page asserts are checked there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "python-api.md"


def code_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def test_the_page_has_a_walkthrough_of_every_step():
    blocks = "\n".join(code_blocks(PAGE.read_text(encoding="utf-8")))
    for step in ("qrelkit.Store(", "qrelkit.evaluate(", "qrelkit.agree(", "qrelkit.audit(", "qrelkit.grade(", "qrelkit.judge("):
        assert step in blocks, step
    assert "qrelkit.judgments(" in blocks and ".to_pandas()" in blocks and ".savefig(" in blocks


def run_page(folder: Path) -> dict:
    """Every block of the page, in order, in one namespace, from ``folder``."""
    namespace: dict = {}
    for number, block in enumerate(code_blocks(PAGE.read_text(encoding="utf-8")), start=1):
        try:
            exec(compile(block, f"{PAGE.name} block {number}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"block {number} of {PAGE.name} failed: {exc!r}\n{block}") from exc
    return namespace


def test_every_code_block_of_the_python_api_page_runs(dl19, tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").symlink_to(ROOT / "configs")  # the page runs from a clone
    namespace = run_page(tmp_path)
    assert (tmp_path / "minilm-by-grade.png").stat().st_size > 10_000
    assert repr(namespace["minilm"]).startswith("Audit(model='minilm-dl19', reference='nist', queries=43, shared_pairs=600")


def test_the_page_runs_again_in_the_same_folder_beside_the_readmes_database(dl19, tmp_path, monkeypatch):
    """Issue 37: after the README's examples (their `dl19.duckdb` holds other sets) and a first run of
    the page, the page runs again with the same figures."""
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    from qrelkit import Store

    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    readme = Store("dl19.duckdb")
    readme.load_qrels(dl19 / "umbrela-gpt4o.qrels", name="umbrela")
    first = run_page(tmp_path)
    again = run_page(tmp_path)
    assert repr(again["minilm"]) == repr(first["minilm"]) and again["judged"].report.statuses == {"ok": 600}
    assert [s["name"] for s in Store("dl19.duckdb").contents()["qrels_sets"]] == ["umbrela"]  # the README's database untouched
