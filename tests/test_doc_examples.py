"""Every example of README.md and docs/*.md runs, and prints what its page shows (tests/doc_examples.py
has the rules, and `python tests/doc_examples.py --update` rewrites the pages from the program)."""

from __future__ import annotations

import pytest
from doc_blocks import pages
from doc_compare import json_in
from doc_examples import problems, quote_problems
from doc_runner import ROOT, PageRun, Session, shared_data

PAGES = pages(ROOT)


def _marks(example) -> list:
    return [pytest.mark.slow] if example.marker("slow") is not None or example.marker("shared") is not None else []


EXAMPLES = [pytest.param(page.name, example.number, id=example.id, marks=_marks(example)) for page in PAGES for example in page.examples]


class _Runs(dict):
    """A page's run, made on its first test."""

    def __init__(self, session: Session):
        super().__init__()
        self.session = session

    def __missing__(self, name: str) -> PageRun:
        self[name] = PageRun(next(p for p in PAGES if p.name == name), self.session)
        return self[name]


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> dict[str, PageRun]:
    """One folder a page; the session's data folder and shared runs."""
    return _Runs(Session(tmp_path_factory.mktemp("doc-examples")))


@pytest.mark.parametrize(("page", "number"), EXAMPLES)
def test_the_example_prints_what_its_page_shows(runs, page, number):
    run = runs[page]
    example = run.page.examples[number - 1]
    outcome = run.outcome(number)
    if outcome.skipped:
        pytest.skip(outcome.skipped)
    assert outcome.failed is None, outcome.failed
    found = problems(example, run.shown_output(example)) + quote_problems(run, example)
    assert not found, f"{example.id} (line {example.first}) does not print what the page shows:\n" + "\n".join(found)


def table_rows(text: str, after: str) -> dict[str, list[str]]:
    """A page's Markdown table below the line ``after``: first cell -> the other cells."""
    rows = {}
    for line in text[text.index(after) :].splitlines()[1:]:
        if line.startswith("|"):
            cells = [c.strip().replace("**", "").replace("−", "-") for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
        elif rows:
            break
    return rows


def f4(value: float) -> str:
    return f"{value:.4f}"


def test_the_readmes_two_judge_tables_are_the_commands_json(runs):
    """README's worked example: each cell of its two tables is the value `agree --json` prints for it,
    in the README's folder after its commands ran (the MiniLM judge run among them)."""
    run = runs["README.md"]
    worked = next(e for e in run.page.examples if "--groups $D/groups.tsv:family --map" in e.code)
    outcome = run.outcome(worked.number)
    if outcome.skipped:
        pytest.skip(outcome.skipped)
    assert outcome.failed is None, outcome.failed
    common = "--reference-qrels $D/qrels.txt --runs $D/runs --groups $D/groups.tsv:family --map 3:2,2:2,1:1,0:0 --rel-level 2 --json"
    umbrela = json_in(run.shell("qrelkit agree --model-qrels $D/umbrela-gpt4o.qrels --reference-qrels $D/qrels.txt --runs $D/runs --json"))
    umbrela_mapped = json_in(run.shell(f"qrelkit agree --model-qrels $D/umbrela-gpt4o.qrels {common} --map-model 3:2,2:2,1:1,0:0"))
    minilm = json_in(run.shell(f"qrelkit agree --model-qrels minilm-dl19 --db dl19.duckdb {common}"))
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = table_rows(text, "Two judges against NIST's 9,260 judgments")
    assert rows["Cohen's κ, four grades"][0] == f4(umbrela["labels"]["cohen_kappa"])
    assert rows["κ, both on 0–2 (NIST 3→2)"] == [f4(umbrela_mapped["labels"]["cohen_kappa"]), f4(minilm["labels"]["cohen_kappa"])]
    linear, quadratic = (f4(umbrela["labels"][k]) for k in ("cohen_kappa_linear", "cohen_kappa_quadratic"))
    assert rows["κ linear / quadratic (four grades)"][0] == f"{linear} / {quadratic}"
    assert rows["κ binarised at grade ≥ 2"] == [
        f4(umbrela_mapped["labels"]["cohen_kappa_binary"]),
        f4(minilm["labels"]["cohen_kappa_binary"]),
    ]
    for judge, column in ((umbrela, 0), (minilm, 1)):
        ndcg, ap = judge["systems"]["nDCG@10"], judge["systems"]["AP(rel=2)"]
        low, high = ndcg["kendall_tau_ci95"]
        # a `*` marks an estimate outside its interval, explained below the table
        shown_tau = rows["Kendall τ, nDCG@10 over 37 runs [95% jackknife CI]"][column].rstrip("*")
        assert shown_tau == f"{f4(ndcg['kendall_tau'])} [{low:.3f}, {high:.3f}]"
        assert rows["τ_AP, nDCG@10"][column] == f4(ndcg["tau_ap"])
        assert rows["Kendall τ, AP(rel=2)"][column] == f4(ap["kendall_tau"])
    bias = table_rows(text, "| measure | NIST qrels | UMBRELA qrels | MiniLM qrels |")
    for measure in ("nDCG@10", "AP(rel=2)"):
        mine, theirs = minilm["bias"]["neural"][measure], umbrela_mapped["bias"]["neural"][measure]
        low, high = mine["difference_ci95"]
        difference = f"{mine['difference']:.1f} [{low:.1f}, {high:.1f}]"
        assert bias[measure] == [f"{mine['reference']:.1f}", f"{theirs['model']:.1f}", f"{mine['model']:.1f}", difference]


def test_the_python_page_has_a_walkthrough_of_every_step():
    page = next(p for p in PAGES if p.name == "docs/python-api.md")
    blocks = "\n".join(e.code for e in page.examples if e.kind == "python")
    for step in ("qrelkit.Store(", "qrelkit.evaluate(", "qrelkit.agree(", "qrelkit.audit(", "qrelkit.grade(", "qrelkit.judge("):
        assert step in blocks, step
    assert "qrelkit.judgments(" in blocks and ".to_pandas()" in blocks and ".savefig(" in blocks


def test_the_python_page_runs_again_in_the_same_folder_beside_the_readmes_database(tmp_path):
    """Issue 37: after the README's examples (their `dl19.duckdb` holds other sets) and a first run of
    the page, the page runs again with the same figures, and draws its figure."""
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    from qrelkit import Store

    run = PageRun(next(p for p in PAGES if p.name == "docs/python-api.md"), Session(tmp_path))
    dl19 = run.session.data() / "trec-dl-2019"
    if not (dl19 / "umbrela-gpt4o.qrels").is_file():
        pytest.skip(f"TREC DL 2019 is not at hand ({shared_data()})")
    Store(run.folder / "dl19.duckdb").load_qrels(dl19 / "umbrela-gpt4o.qrels", name="umbrela")
    first = [run.outcome(e.number) for e in run.page.examples]
    minilm = repr(run.namespace["minilm"])
    run.again()
    again = [run.outcome(e.number) for e in run.page.examples]
    assert [o.failed for o in first + again] == [None] * (2 * len(first))
    assert repr(run.namespace["minilm"]) == minilm and run.namespace["judged"].report.statuses == {"ok": 600}
    assert [s["name"] for s in Store(run.folder / "dl19.duckdb").contents()["qrels_sets"]] == ["umbrela"]  # the README's, untouched
    assert (run.folder / "minilm-by-grade.png").stat().st_size > 10_000


def test_every_module_and_name_the_pages_point_to_exists():
    """A page's prose names modules to import (`qrelkit.report.page` (`render_page`, `write_page`)):
    each module imports and has each public name listed in the brackets after it (docs/audit.md named a
    module and a function that had gone, with no example to fail)."""
    import re

    pointed = re.compile(r"`(qrelkit(?:\.\w+)+)`\s*(?:\(([^)]*)\))?")
    missing = []
    for page in PAGES:
        for found in pointed.finditer(page.path.read_text(encoding="utf-8")):
            dotted, listed = found.group(1), found.group(2) or ""
            target = _imported(dotted)
            names = re.findall(r"`([A-Za-z]\w*)`", listed)
            missing += [f"{page.name}: {dotted}"] if target is None else []
            missing += [f"{page.name}: {dotted}.{name}" for name in names if target is not None and not hasattr(target, name)]
    assert missing == []


def _imported(dotted: str):
    """The module or attribute ``dotted`` names (None when it is not there)."""
    import importlib

    parts = dotted.split(".")
    for at in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:at]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[at:]:
            target = getattr(target, attribute, None)
        return target
    return None
