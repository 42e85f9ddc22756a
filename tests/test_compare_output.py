"""`compare` output a researcher can paste (issues 34 and 37): in a pipe or a file a plain table with every
name and number whole (a terminal's table squeezed to 80 columns printed `0.…`), LaTeX escaped and
without columns empty for every row, one warning line per warning; and a judge that shares no pair
with the reference is named and left out, not the end of the whole comparison (issue 36)."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from judge_tracks import write_track
from rich.console import Console

from qrelkit.commands.documents.judging import sweep
from qrelkit.report.document import Table
from qrelkit.report.render import plain, rich_table

LONG = "a-judge-with-a-rather-long-and-descriptive-name"


def cli(*args: object) -> subprocess.CompletedProcess:
    """Standard output is a pipe here, as in `qrelkit compare ... > table.txt`."""
    return subprocess.run([sys.executable, "-m", "qrelkit.cli", *map(str, args)], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def track(tmp_path_factory) -> dict[str, Path]:
    files = write_track(tmp_path_factory.mktemp("output") / "track")
    (files["judges"] / f"{LONG}.txt").write_text(files["binary"].read_text())
    elsewhere = files["judges"].parent / "elsewhere.txt"  # another collection's pairs: nothing shared with the reference
    elsewhere.write_text("z1 0 x1 1\nz1 0 x2 0\n")
    files["elsewhere"] = elsewhere
    return files


def compare(track: dict[str, Path], *extra: object) -> subprocess.CompletedProcess:
    return cli(
        "compare",
        "--judge",
        track["judges"],
        "--judge",
        track["elsewhere"],
        "--reference-qrels",
        track["qrels"],
        "--runs",
        track["runs"],
        "--measure",
        "nDCG@10",
        "--judge-measure",
        "Compat(p=0.9)",
        "--resamples",
        "50",
        "--permutations",
        "50",
        *extra,
    )


@pytest.fixture(scope="module")
def piped(track) -> subprocess.CompletedProcess:
    result = compare(track)
    assert result.returncode == 0, result.stderr
    return result


def test_a_piped_table_keeps_every_name_and_number_whole(piped):
    assert "…" not in piped.stdout and "┃" not in piped.stdout  # plain text, not a squeezed terminal table
    judges = piped.stdout.split("Judges against")[1].split("\n\n")[0].splitlines()
    header, rows = judges[1], {line.split()[0]: line for line in judges[3:]}
    assert sorted(rows) == sorted([LONG, "binary", "elsewhere", "exam"])
    assert re.search(r"compared +120 \(120\) +-?0\.\d{4} \[-?\d\.\d{3}, -?\d\.\d{3}\]", rows["binary"])
    assert "τ nDCG@10 vs Compat(p=0.9) [CI]" in header and "τ_AP nDCG@10 vs Compat(p=0.9)" in header
    for cost in ("failed/judged", "cost USD", "tokens in/out", "time s", "pairs/s"):  # judges from files: never any cost
        assert cost not in header


def test_a_judge_sharing_no_pair_with_the_reference_is_named_and_left_out(piped):
    row = next(line for line in piped.stdout.splitlines() if line.startswith("elsewhere "))
    assert "not compared" in row
    assert "elsewhere: not compared: shares no (qid, docid) pair with track/qrels.txt (2 pairs against 120): not compared" in piped.stdout
    assert "elsewhere −" not in piped.stdout and "− elsewhere" not in piped.stdout  # no difference with it


def test_every_judge_alone_sharing_no_pair_is_refused_naming_it(track):
    result = cli("compare", "--judge", track["elsewhere"], "--reference-qrels", track["qrels"], "--runs", track["runs"])
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "no judge could be compared: elsewhere shares no (qid, docid) pair with track/qrels.txt" in result.stderr.replace("\n", "")


def test_each_warning_is_one_line_naming_every_judge_it_concerns(piped):
    warnings = [line.removeprefix("warning: ") for line in piped.stdout.splitlines() if line.startswith("warning: ")]
    texts = [w.split(": ", 1)[1] for w in warnings]
    assert len(warnings) == len(set(texts))
    scale = next(w for w in warnings if "different scales" in w)
    assert scale.startswith(f"{LONG}, binary: ") or scale.startswith(f"binary, {LONG}: ")


LATEX_SPECIALS = re.compile(r"(?<!\\)[_%#&$^~]")


def _tabulars(latex: str) -> list[list[list[str]]]:
    """Each tabular's rows as cells (header first), the booktabs rules left out."""
    out = []
    for block in re.findall(r"\\begin\{tabular\}\{([lr]+)\}\n(.*?)\\end\{tabular\}", latex, re.S):
        spec, body = block
        rows = [line.removesuffix(r" \\").split(" & ") for line in body.splitlines() if not line.startswith("\\")]
        assert all(len(row) == len(spec) for row in rows), (spec, rows[0])
        out.append(rows)
    return out


def test_latex_is_escaped_and_has_no_column_empty_in_every_row(track):
    result = compare(track, "--format", "latex")
    assert result.returncode == 0, result.stderr
    tables = _tabulars(result.stdout)
    assert len(tables) == 3  # judges, paired differences, κ between the judges that give grades
    header = tables[0][0]
    assert r"$\tau$\_AP nDCG@10 vs Compat(p=0.9)" in header and r"$\kappa$ [CI]" in header
    for rows in tables:
        for row in rows:
            for cell in row:
                math_free = re.sub(r"\$[^$]*\$", "", cell)  # $\tau$ and the like are LaTeX's own
                assert not LATEX_SPECIALS.search(math_free), cell
        for column in range(1, len(rows[0])):
            assert any(row[column] not in ("--", "") for row in rows[1:]), rows[0][column]
    assert all(line.startswith("%") for line in result.stdout.splitlines() if "warning:" in line)  # notes are comments


def test_a_terminal_table_folds_a_number_rather_than_cutting_it(track):
    """Even 60 columns wide, a terminal shows no `…`: cells fold onto more lines."""
    result = json.loads(compare(track, "--json").stdout)
    assert result["judges"][0]["audit"] is not None
    table = Table("t", ["judge", "τ [CI]"], [[LONG, "0.8601 [0.792, 0.926]"]])
    console = Console(file=io.StringIO(), width=30, force_terminal=True, color_system=None)
    console.print(rich_table(table))
    shown = console.file.getvalue()
    assert "…" not in shown and "0.792" in shown.replace("\n", "").replace("│", "").replace(" ", "")


def test_a_sweeps_table_in_a_pipe_is_plain_and_whole():
    cell = SimpleNamespace(
        cell=SimpleNamespace(name=f"temperature=0.7,template={LONG}"),
        judge_run_id="0123456789abcdef",
        status="ok",
        report=SimpleNamespace(pairs=9260, already_ok=0, to_judge=9260, judged=9260, failed=3, estimate=None),
        outcome=SimpleNamespace(grading=SimpleNamespace(qrels=SimpleNamespace(name=f"graded-{LONG}"))),
    )
    outcome = SimpleNamespace(
        job=Path("sweep.yaml"), keys=["temperature", "template"], cells=[cell], dry_run=False, failed=[], interrupted=False
    )
    outcome.failure = lambda: None
    outcome.to_dict = lambda: {}
    text = plain(sweep(outcome, None)).rstrip("\n")
    assert "…" not in text
    row = text.splitlines()[-1].split()
    assert row == [f"temperature=0.7,template={LONG}", "0123456789abcdef", "ok", "9,260", "0", "9,260", "9,260", "3", f"graded-{LONG}"]
