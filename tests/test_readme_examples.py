"""The README as a new user follows it: in a fresh folder with no ../shared beside it, with only a
local mirror in place of the network (QRELKIT_MIRROR), `qrelkit data fetch trec-dl-2019`, then
every command block of examples 2-4 and of the worked example run as written (the shell's `qrelkit`
is this checkout's), each output compared with what the README shows after it."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bundle_mirror import dl19_mirror, serve
from conftest import SHARED_DATA

from qrelkit.io.bundles import load_bundle

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("onnxruntime", reason="example 3 judges with the ONNX MiniLM (pip install '.[onnx]')")


def readme_blocks() -> list[str]:
    return re.findall(r"^```[a-z]*\n(.*?)^```$", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.M | re.S)


def block_starting(prefix: str) -> tuple[str, str]:
    """The command block that starts with ``prefix`` and the block after it (what it prints)."""
    blocks = readme_blocks()
    number = next(i for i, block in enumerate(blocks) if block.startswith(prefix))
    return blocks[number], blocks[number + 1]


def shown_lines(block: str) -> list[str]:
    """The README's output lines, with its `… note` annotations cut and run times masked."""
    lines = [re.sub(r"\s+… .*$", "", line).rstrip() for line in block.splitlines()]
    return [mask(line) for line in lines if line]


def mask(line: str) -> str:
    return re.sub(r"in [\d.]+s \([\d.]+/s\)", "in _s (_/s)", line.rstrip())


def in_order(shown: list[str], printed: str) -> list[str]:
    """The shown lines missing from the printed output, or printed out of order."""
    lines, position, missing = [mask(line) for line in printed.splitlines()], 0, []
    for line in shown:
        found = next((i for i in range(position, len(lines)) if lines[i].startswith(line)), None)
        if found is None:
            missing.append(line)
        else:
            position = found + 1
    return missing


@pytest.fixture(scope="module")
def user(tmp_path_factory) -> dict:
    """A user's folder (the clone's configs/, nothing else), a data folder, a mirror on 127.0.0.1."""
    shared = SHARED_DATA / "trec-dl-2019"
    if not (shared / "umbrela-gpt4o.qrels").is_file():
        pytest.skip(f"TREC DL 2019 data not found at {shared} (it stands in for NIST's login-only runs in the mirror)")
    base = tmp_path_factory.mktemp("newuser")
    dl19_mirror(load_bundle("trec-dl-2019"), base / "mirror", shared)
    shutil.copytree(ROOT / "configs", base / "clone" / "configs")
    shim = base / "bin" / "qrelkit"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m qrelkit.cli "$@"\n')
    shim.chmod(0o755)
    with serve(base / "mirror") as (url, _):
        env = {
            "PATH": f"{shim.parent}:{os.environ['PATH']}",
            "PYTHONPATH": str(ROOT),
            "HOME": str(base / "home"),
            "QRELKIT_DATA": str(base / "data"),
            "QRELKIT_MIRROR": url,
            "QRELKIT_PROGRESS_SECONDS": "3600",
        }
        yield {"cwd": base / "clone", "env": env, "data": base / "data"}


def shell(block: str, user: dict) -> str:
    """Run a README block in bash from the user's folder, $D and $E set as the README sets them."""
    # $D as a shell that already ran the README's first block has it (before that fetch, `data path` names the missing folder)
    prefix = "set -e\nD=$(qrelkit data path trec-dl-2019 2>/dev/null) || true\n"
    script = prefix + block.replace("<id printed by qrelkit judge>", "99183483")
    done = subprocess.run(["bash", "-c", script], cwd=user["cwd"], env=user["env"], capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not (user["cwd"].parent / "shared").exists()
    return done.stdout


def summary_text(page: Path) -> str:
    text = page.read_text(encoding="utf-8")
    box = text[text.index("<section class=summary") : text.index("</section>")]
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", box)))


def table_rows(after: str) -> dict[str, list[str]]:
    """The README's markdown table after the line ``after``: first cell -> the other cells."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
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


def ci3(pair: list[float]) -> str:
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def ci1(pair: list[float]) -> str:
    return f"[{pair[0]:.1f}, {pair[1]:.1f}]"


@pytest.mark.slow
def test_a_new_user_fetches_the_data_and_every_readme_example_prints_what_the_readme_shows(user):
    # 2. audit qrels made elsewhere: fetch first, then agree
    commands, shown = block_starting("qrelkit data fetch trec-dl-2019")
    printed = shell(commands, user)
    assert "trec-dl-2019 in " in printed and "43 of 43 files" in printed
    assert in_order(shown_lines(shown), printed) == []

    # 3. judge with a local model: the dry run, then the job
    commands, shown = block_starting("qrelkit judge configs/dl19-minilm.yaml --dry-run")
    assert in_order(shown_lines(shown), shell(commands, user)) == []

    # 4. the report's summary box: every figure the README shows is on the page
    commands, shown = block_starting("qrelkit report --judge-run 99183483")
    shell(commands, user)
    box = summary_text(user["cwd"] / "dl19-minilm.html")
    for line in shown_lines(shown)[1:]:  # the title line is the report's wording, not a figure
        for figure in re.findall(r"\[[\d., ]+\]|\d[\d,]*\.\d+%?|\d[\d,]+ shared pairs|\d+ queries|\d+ runs", line):
            assert figure in box, (figure, box)

    # the worked example: its commands as written, then the two tables from the same commands' JSON
    commands, _ = block_starting("D=$(qrelkit data path trec-dl-2019)                       # after")
    printed = shell(commands, user)
    umbrela = json.loads(printed[: printed.index("\n}\n") + 2])
    common = "--reference-qrels $D/qrels.txt --runs $D/runs --groups $D/groups.tsv:family --map 3:2,2:2,1:1,0:0 --rel-level 2 --json"
    both_mapped = "--map-model 3:2,2:2,1:1,0:0"
    umbrela_groups = json.loads(shell(f"qrelkit agree --model-qrels $D/umbrela-gpt4o.qrels {common} {both_mapped}", user))
    minilm = json.loads(shell(f"qrelkit agree --model-qrels minilm-dl19 --db dl19.duckdb {common}", user))
    rows = table_rows("Two judges against NIST's 9,260 judgments")
    assert rows["Cohen's κ, four grades"][0] == f4(umbrela["labels"]["cohen_kappa"])
    assert rows["κ, both on 0–2 (NIST 3→2)"] == [f4(umbrela_groups["labels"]["cohen_kappa"]), f4(minilm["labels"]["cohen_kappa"])]
    linear, quadratic = (f4(umbrela["labels"][k]) for k in ("cohen_kappa_linear", "cohen_kappa_quadratic"))
    assert rows["κ linear / quadratic (four grades)"][0] == f"{linear} / {quadratic}"
    assert rows["κ binarised at grade ≥ 2"] == [
        f4(umbrela_groups["labels"]["cohen_kappa_binary"]),
        f4(minilm["labels"]["cohen_kappa_binary"]),
    ]
    for judge, column in ((umbrela, 0), (minilm, 1)):
        ndcg, ap = judge["systems"]["nDCG@10"], judge["systems"]["AP(rel=2)"]
        # a `*` marks an estimate outside its interval, explained below the table
        shown_tau = rows["Kendall τ, nDCG@10 over 37 runs [95% jackknife CI]"][column].rstrip("*")
        assert shown_tau == f"{f4(ndcg['kendall_tau'])} {ci3(ndcg['kendall_tau_ci95'])}"
        assert rows["τ_AP, nDCG@10"][column] == f4(ndcg["tau_ap"])
        assert rows["Kendall τ, AP(rel=2)"][column] == f4(ap["kendall_tau"])
    bias = table_rows("| measure | NIST qrels | UMBRELA qrels | MiniLM qrels |")
    for measure in ("nDCG@10", "AP(rel=2)"):
        mine, theirs = minilm["bias"]["neural"][measure], umbrela_groups["bias"]["neural"][measure]
        difference = f"{mine['difference']:.1f} {ci1(mine['difference_ci95'])}"
        assert bias[measure] == [f"{mine['reference']:.1f}", f"{theirs['model']:.1f}", f"{mine['model']:.1f}", difference]
