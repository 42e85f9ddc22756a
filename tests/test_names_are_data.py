"""Names are data (issue 36, item 3): a name holding a control character or a newline is refused
where it enters (a file's name, --name), one line, exit 2; and a name that is already in a database
(an older qrelkit's, a colleague's) is shown escaped in every output format: a LaTeX comment stays
one comment, Markdown shows `<script>` as text, the terminal gets no escape sequence."""

from __future__ import annotations

import duckdb
import pytest
from hostile import one_error, qrelkit, snapshot

EVIL = "evil\n\\input{hostname}"
QRELS = "".join(f"q{q} 0 d{d} {(q + d) % 3}\n" for q in range(1, 5) for d in range(1, 7))
MODEL = "".join(f"q{q} 0 d{d} {(q * d) % 3}\n" for q in range(1, 5) for d in range(1, 7))


@pytest.fixture
def track(tmp_path):
    (tmp_path / "human.qrels").write_text(QRELS)
    (tmp_path / "model.qrels").write_text(MODEL)
    (tmp_path / "runs").mkdir()
    for r in range(3):
        lines = [
            f"q{q} Q0 d{d} {rank} {9 - rank}.{r} run{r}"
            for q in range(1, 5)
            for rank, d in enumerate([(d + r) % 6 + 1 for d in range(6)], 1)
        ]
        (tmp_path / "runs" / f"run{r}.run").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_a_qrels_file_whose_name_ends_a_latex_comment_is_refused_as_a_judge(track):
    evil = track / f"{EVIL}.qrels"
    evil.write_text(MODEL)
    args = ["compare", "--judge", evil, "--reference-qrels", track / "human.qrels", "--runs", track / "runs", "--resamples", "0"]
    error = one_error(qrelkit(*args, "--permutations", "0", "--format", "latex"), 2)
    assert error == f"error: {str(evil)!r}: the name taken from the file 'evil\\n\\\\input{{hostname}}' holds the control " \
        "character '\\n': a name holds none; rename it or give --name"  # fmt: skip


@pytest.mark.parametrize("name", [EVIL, "bold\x1b[2Jcleared", "tab\there", "rtl\u202eoverride"])
def test_a_name_with_a_control_character_is_refused_when_loaded(track, name):
    db = track / "b.duckdb"
    assert qrelkit("load", "qrels", track / "human.qrels", "--db", db).returncode == 0
    before = snapshot(db)
    error = one_error(qrelkit("load", "qrels", track / "model.qrels", "--name", name, "--db", db), 2)
    assert f"the qrels set's name {name!r} holds the control character" in error
    assert snapshot(db) == before


def test_a_run_file_whose_name_holds_a_newline_is_refused_when_loaded(track):
    (track / "runs" / "bad\nname.run").write_text("q1 Q0 d1 1 1.0 t\n")
    db = track / "b.duckdb"
    error = one_error(qrelkit("load", "runs", track / "runs", "--db", db), 2)
    assert "the name taken from the file 'bad\\nname' holds the control character '\\n'" in error
    assert not db.exists() or snapshot(db).get("runs", []) == []


@pytest.fixture
def stored_evil(track):
    """A database whose judge set is named with a newline and LaTeX, and another with HTML: written
    past the loader's check, as an older qrelkit or a hand-edited file could hold them."""
    db = track / "b.duckdb"
    for name, file in (("human", "human.qrels"), ("model", "model.qrels"), ("html", "model.qrels")):
        assert qrelkit("load", "qrels", track / file, "--name", name, "--db", db).returncode == 0
    con = duckdb.connect(str(db))
    con.execute("UPDATE qrels_sets SET name = ? WHERE name = 'model'", [EVIL])
    con.execute("UPDATE qrels_sets SET name = '<script>alert(1)</script>|x' WHERE name = 'html'")
    con.close()
    return db


def compared(track, db, output):
    args = ["compare", "--judge", EVIL, "--judge", "<script>alert(1)</script>|x", "--reference-qrels", "human"]
    done = qrelkit(*args, "--runs", track / "runs", "--resamples", "0", "--permutations", "0", "--db", db, "--format", output)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_stored_name_stays_inside_its_latex_comment(track, stored_evil):
    latex = compared(track, stored_evil, "latex")
    assert not any(line.lstrip().startswith("\\input") for line in latex.splitlines())
    warned = [line for line in latex.splitlines() if line.startswith("% warning: ") and "evil" in line]
    assert warned and all(
        line.startswith("% warning: evil\\n\\input{hostname}") for line in warned
    )  # the notes' comments: the newline shown
    assert "evil\\textbackslash{}n\\textbackslash{}input\\{hostname\\}" in latex  # in a table cell: text, not a command


def test_a_stored_name_is_text_in_markdown(track, stored_evil):
    markdown = compared(track, stored_evil, "markdown")
    assert "<script>" not in markdown and "&lt;script&gt;alert(1)&lt;/script&gt;\\|x" in markdown
    assert "| evil\\\\n\\\\input{hostname} |" in markdown  # one line, its backslashes shown


def test_a_stored_name_reaches_the_terminal_escaped(track, stored_evil):
    con = duckdb.connect(str(stored_evil))
    con.execute("UPDATE qrels_sets SET name = 'bell\x07\x1b]0;owned\x07' WHERE name = 'human'")
    con.close()
    args = ["compare", "--judge", EVIL, "--reference-qrels", "bell\x07\x1b]0;owned\x07", "--runs", track / "runs"]
    done = qrelkit(*args, "--resamples", "0", "--permutations", "0", "--db", stored_evil)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "bell\\x07\\x1b]0;owned\\x07" in done.stdout
