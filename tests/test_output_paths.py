"""An output path is never a surprise (issue 36, items 4 and 9): every command that writes a file
refuses one that exists without `--force`, never writes over its own database or an input even
with it, and writes through a temporary file renamed at the end, so a SIGKILL or a full disk while
writing (judgments as JSON Lines, CSV or Parquet, TREC qrels, an HTML page) leaves the old file, or
none, at the path asked for: never part of a new one."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hostile import ROOT, one_error, qrelkit, snapshot
from test_disk_full import small_disk  # noqa: F401 (the fixture: a 4 MiB tmpfs, root only)

from qrelkit.judges import Judgment
from qrelkit.storage import Store
from qrelkit.storage.judgments import JudgeRunInfo, ensure_judge_run, write_judgments

OLD = "the old file, which must survive\n"
QRELS = "".join(f"q{q} 0 d{d} {(q + d) % 3}\n" for q in range(1, 6) for d in range(1, 9))
MODEL = "".join(f"q{q} 0 d{d} {(q * d) % 3}\n" for q in range(1, 6) for d in range(1, 9))


@pytest.fixture
def track(tmp_path) -> Path:
    """Human and model qrels, three runs, and a database holding the human qrels and a judge run."""
    (tmp_path / "human.qrels").write_text(QRELS)
    (tmp_path / "model.qrels").write_text(MODEL)
    (tmp_path / "runs").mkdir()
    for r in range(3):
        lines = [
            f"q{q} Q0 d{d} {rank} {10 - rank}.{r} run{r}"
            for q in range(1, 6)
            for rank, d in enumerate([(d + r) % 8 + 1 for d in range(8)], 1)
        ]
        (tmp_path / "runs" / f"run{r}.run").write_text("\n".join(lines) + "\n")
    db = tmp_path / "b.duckdb"
    assert qrelkit("load", "qrels", tmp_path / "human.qrels", "--db", db).returncode == 0
    with Store(db) as store:
        ensure_judge_run(store, JudgeRunInfo("aaaa1111", "openai", {"model": "m"}, "t", "h" * 64, {"id": "t"}, "model-x"))
        write_judgments(
            store, "aaaa1111", [Judgment("q1", f"d{i}", "ok", score=1.0, parsed=1.0, raw_output="Relevance: 1") for i in range(9)]
        )
    return tmp_path


def compare_args(track: Path, *more: object) -> list[object]:
    return ["compare", "--judge", track / "model.qrels", "--reference-qrels", track / "human.qrels", "--runs", track / "runs",
            "--resamples", "0", "--permutations", "0", *more]  # fmt: skip


def report_args(track: Path, *more: object) -> list[object]:
    return ["report", "--model-qrels", track / "model.qrels", "--reference-qrels", track / "human.qrels", "--runs", track / "runs",
            "--resamples", "0", *more]  # fmt: skip


def writers(track: Path, out: Path) -> dict[str, list[object]]:
    """Each command that writes a file, asked to write ``out`` (its suffix chosen by the caller)."""
    db = track / "b.duckdb"
    return {
        "compare --html": compare_args(track, "--html", out),
        "report --out": report_args(track, "--out", out),
        "nrg --plot": ["nrg", "--qrels", track / "human.qrels", "--runs", track / "runs", "--plot", out],
        "fd --plot": ["fd", "--qrels", track / "human.qrels", "--runs", track / "runs", "--plot", out, "--db", db],
        "export qrels": ["export", "qrels", out, "--name", "human", "--db", db],
        "export judgments": ["export", "judgments", out, "--db", db],
    }


SUFFIX = {"compare --html": ".html", "report --out": ".html", "nrg --plot": ".png", "fd --plot": ".png", "export qrels": ".qrels"}


# -- 4: an existing file, the database, an input ----------------------------------------------------------


@pytest.mark.parametrize("command", list(SUFFIX) + ["export judgments"])
def test_an_existing_output_is_refused_without_force_and_left_as_it_was(track, command):
    out = track / f"out{SUFFIX.get(command, '.jsonl')}"
    out.write_text(OLD)
    error = one_error(qrelkit(*writers(track, out)[command]), 2)
    assert error == f"error: {out} exists; pass --force to overwrite it"
    assert out.read_text() == OLD


@pytest.mark.parametrize("command", ["compare --html", "report --out", "nrg --plot"])
def test_force_writes_over_an_existing_output(track, command):
    out = track / f"out{SUFFIX[command]}"
    out.write_text(OLD)
    done = qrelkit(*writers(track, out)[command], "--force")
    assert done.returncode == 0, done.stderr
    assert out.read_bytes()[:4] in (b"<!DO", b"\x89PNG")  # the new page or plot, whole
    assert not [p for p in track.iterdir() if ".partial" in p.name]  # no temporary file left behind


def test_compare_never_writes_its_page_over_the_database_it_reads(track):
    db = track / "b.duckdb"
    before = snapshot(db)
    args = ["compare", "--judge", "human", "--reference-qrels", "human", "--runs", track / "runs", "--resamples", "0"]
    error = one_error(qrelkit(*args, "--permutations", "0", "--db", db, "--html", db, "--force"), 2)
    assert error == f"error: {db} is this command's --db {db}: an input is never written over; name another output"
    assert snapshot(db) == before and db.read_bytes()[8:12] == b"DUCK"


def test_export_qrels_never_writes_over_its_own_database(track):
    db = track / "b.duckdb"
    before = snapshot(db)
    error = one_error(qrelkit("export", "qrels", db, "--name", "human", "--db", db, "--force"), 2)
    assert error == f"error: {db} is this command's --db {db}: an input is never written over; name another output"
    assert snapshot(db) == before


@pytest.mark.parametrize("command", ["nrg --plot", "compare --html"])
def test_an_output_is_never_written_over_an_input_file(track, command):
    qrels = track / "human.qrels"
    error = one_error(qrelkit(*writers(track, qrels)[command], "--force"), 2)
    assert f"error: {qrels} is this command's " in error and "an input is never written over" in error
    assert qrels.read_text() == QRELS


def test_a_report_is_never_written_over_the_qrels_it_audits(track):
    model = track / "model.html"  # a page's name, holding the model qrels
    model.write_text(MODEL)
    args = ["report", "--model-qrels", model, "--reference-qrels", track / "human.qrels", "--runs", track / "runs", "--resamples", "0"]
    error = one_error(qrelkit(*args, "--out", model, "--force"), 2)
    assert error == f"error: {model} is this command's input {model}: an input is never written over; name another output"
    assert model.read_text() == MODEL


def test_a_resampling_refuses_earlier_outputs_without_force(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "restrain.json").write_text(OLD)
    (tmp_path / "t.tsv").write_text("t1\tboil an egg\n")
    (tmp_path / "q.qrels").write_text("t1 0 p 1\n")
    args = ["resample", "restrain", "--train-topics", tmp_path / "t.tsv", "--test-topics", tmp_path / "t.tsv"]
    error = one_error(
        qrelkit(*args, "--train-qrels", tmp_path / "q.qrels", "--out", out, "--interpolate-top", "1", "--exclude-top", "1"), 2
    )
    assert error == f"error: {out / 'restrain.json'} exists; pass --force to overwrite it"
    assert (out / "restrain.json").read_text() == OLD


# -- 9: SIGKILL while writing ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def many_judgments(tmp_path_factory) -> Path:
    """A database of 60,000 judgments with 400-character answers: tens of MB in every format, so a
    kill lands while the file is being written."""
    db = tmp_path_factory.mktemp("many") / "many.duckdb"
    answer = "The passage answers it. " * 16 + "Relevance: 2"
    with Store(db) as store:
        ensure_judge_run(store, JudgeRunInfo("cccc3333", "openai", {"model": "m"}, "t", "h" * 64, {"id": "t"}, "model-x"))
        for start in range(0, 60_000, 10_000):
            batch = [Judgment(f"q{i % 50}", f"d{i}", "ok", score=2.0, parsed=2.0, raw_output=answer) for i in range(start, start + 10_000)]
            write_judgments(store, "cccc3333", batch)
    assert qrelkit("import", "scores", write_scores(db.parent), "--name", "big", "--db", db).returncode == 0
    graded = qrelkit("grade", "--judge-run", "big", "--method", "identity", "--name", "big", "--db", db)
    assert graded.returncode == 0, graded.stderr
    return db


def write_scores(folder: Path) -> Path:
    path = folder / "scores.tsv"
    path.write_text("".join(f"q{i % 200}\td{i}\t{i % 4}\n" for i in range(400_000)))
    return path


def killed_while_writing(folder: Path, *args: object) -> subprocess.CompletedProcess:
    """The command, SIGKILLed once a new file in ``folder`` holds 64 KiB (its output, under any name)."""
    environ = {"PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}", "PATH": "/usr/bin:/bin"}
    command = [sys.executable, str(ROOT / "tests" / "kill_when_written.py"), str(folder), str(64 << 10), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env=environ, timeout=300)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_a_sigkill_while_judgments_are_exported_leaves_no_partial_file(tmp_path, many_judgments, suffix):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / f"judgments{suffix}"
    done = killed_while_writing(out_dir, "export", "judgments", out, "--judge-run", "cccc3333", "--db", many_judgments)
    assert done.returncode == -signal.SIGKILL, done.stderr  # killed in the middle: the file was still being written
    assert not out.exists()  # no cut .jsonl that reads as a smaller file, no partial .csv, no unreadable .parquet


def test_a_sigkill_while_qrels_are_exported_leaves_no_partial_file(tmp_path, many_judgments):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "big.qrels"
    done = killed_while_writing(out_dir, "export", "qrels", out, "--judge-run", "big", "--db", many_judgments)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert not out.exists()


@pytest.mark.parametrize("command", ["compare --html", "report --out", "export qrels", "export judgments"])
def test_a_sigkill_before_the_rename_keeps_the_old_file_whole(track, command):
    out = track / f"out{SUFFIX.get(command, '.csv')}"
    out.write_text(OLD)
    done = qrelkit(*writers(track, out)[command], "--force", env={"QRELKIT_CRASH_AT": "output-before-rename"})
    assert done.returncode == -signal.SIGKILL, done.stderr  # the new file was whole, in its temporary, when the process died
    assert out.read_text() == OLD


# -- 9: a full disk while writing --------------------------------------------------------------------------


def fill(disk: Path, leave: int) -> None:
    """Fill the tmpfs to within ``leave`` bytes."""
    import os

    stats = os.statvfs(disk)
    (disk / "filler").write_bytes(b"\0" * max(stats.f_bavail * stats.f_frsize - leave, 0))


@pytest.mark.parametrize("output", ["judgments.jsonl", "judgments.csv", "judgments.parquet", "big.qrels", "compare.html", "report.html"])
def test_a_full_disk_while_writing_keeps_the_old_file_and_says_so_in_one_line(track, small_disk, many_judgments, output):  # noqa: F811
    out = small_disk / output
    out.write_text(OLD)
    fill(small_disk, 8 << 10)  # 8 KiB left: less than any of these outputs
    args = {
        "judgments": ["export", "judgments", out, "--judge-run", "cccc3333", "--db", many_judgments],
        "big": ["export", "qrels", out, "--name", "big", "--db", many_judgments],
        "compare": writers(track, out)["compare --html"],
        "report": writers(track, out)["report --out"],
    }[out.stem]
    error = one_error(qrelkit(*args, "--force"), 3)
    assert error.startswith(f"error: cannot write {out}: ") and error.endswith("; nothing was written there"), error
    assert out.read_text() == OLD
    assert sorted(p.name for p in small_disk.iterdir()) == sorted(["filler", out.name])  # no temporary file left behind


def test_export_judgments_reads_back_after_a_forced_rewrite(tmp_path, many_judgments):
    out = tmp_path / "j.parquet"
    out.write_text(OLD)
    done = qrelkit("export", "judgments", out, "--judge-run", "cccc3333", "--db", many_judgments, "--force")
    assert done.returncode == 0, done.stderr
    assert pq.read_metadata(out).num_rows == 60_000
    assert json.loads(qrelkit("show", "--db", many_judgments, "--json").stdout)  # the database is still readable
