"""The Python API as a notebook uses it (issue 25): every public function takes qrels as a path, a
`Qrels`, a dict or a DataFrame and answers the same; every result has to_dict(), to_pandas() (with
an install hint when pandas is missing) and a short repr; a `qrelkit.Store` held in a notebook
never locks the command line out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import qrelkit
from qrelkit.errors import QrelkitError

pd = pytest.importorskip("pandas")

DEMO = Path(qrelkit.__file__).parent / "data" / "demo"
QRELS = DEMO / "qrels.txt"
RUNS = DEMO / "runs"


def qrels_forms() -> dict[str, object]:
    """The demo's qrels four ways (and as Arrow): a path, a Qrels, {qid: {docid: grade}}, and a
    DataFrame with ir_measures' column names."""
    qrels = qrelkit.read_qrels(QRELS)
    grades = {qid: dict(docs) for qid, docs in qrels.grades.items()}
    rows = [(qid, docid, grade) for qid, docs in grades.items() for docid, grade in docs.items()]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    import pyarrow as pa

    return {"path": str(QRELS), "Qrels": qrels, "dict": grades, "DataFrame": frame, "Arrow": pa.Table.from_pandas(frame)}


def without(payload: dict, *names: str) -> dict:
    """The payload with the keys that name the input (a file's name, "qrels" for a dict) left out."""
    return {k: v for k, v in payload.items() if k not in names}


CALLS = {
    "evaluate": lambda q: qrelkit.evaluate(q, RUNS, ["nDCG@10", "AP(rel=2)", "P@5"]).to_dict(per_query=True),
    "agree (model)": lambda q: without(qrelkit.agree(q, str(QRELS), RUNS, resamples=50).to_dict(), "model", "sources"),
    "audit (reference)": lambda q: without(qrelkit.audit(str(QRELS), q, RUNS, resamples=50).to_dict(), "reference", "sources"),
    "correlate": lambda q: qrelkit.correlate(q, RUNS, ["nDCG@10", "RR(rel=2)"]).to_dict(),
    "nrg": lambda q: qrelkit.nrg(q, RUNS).to_dict(),
    "grade": lambda q: qrelkit.grade(q, name="g", method="map", map={"0-1": 0, "2": 1, "3": 2}).to_dict(),
    # (the second call reuses the vectors the first embedded: what it says of them differs)
    "fd": lambda q: without(qrelkit.fd(q, RUNS, docs=DEMO / "passages.jsonl", k=[1, 5], resamples=20).to_dict(), "embedding"),
}


@pytest.mark.parametrize("function", list(CALLS))
def test_the_same_qrels_as_a_path_a_qrels_a_dict_and_a_dataframe_give_equal_results(function):
    answers = {form: CALLS[function](qrels) for form, qrels in qrels_forms().items()}
    first = answers["path"]
    assert first, function
    for form, answer in answers.items():
        assert answer == first, f"{function} with qrels as {form} differs from the path's"


def test_runs_as_objects_dicts_and_a_table_give_the_evaluation_of_the_files():
    runs = qrelkit.read_runs([RUNS])
    by_name = {run.name: run.scores for run in runs}
    table = pd.DataFrame(
        [(run.name, e.qid, e.docid, e.score) for run in runs for e in run.entries], columns=["run", "query_id", "doc_id", "score"]
    )
    expected = qrelkit.evaluate(QRELS, RUNS, ["nDCG@10", "RR(rel=2)"]).to_dict(per_query=True)
    for form in (runs, by_name, table, [str(RUNS / f"{run.name}.run") for run in runs]):
        assert qrelkit.evaluate(QRELS, form, ["nDCG@10", "RR(rel=2)"]).to_dict(per_query=True) == expected


def test_the_pure_functions_take_qrels_or_their_dicts():
    model = qrelkit.read_qrels(QRELS)
    grades = {qid: dict(docs) for qid, docs in model.grades.items()}
    assert qrelkit.label_agreement(model, model).to_dict() == qrelkit.label_agreement(grades, grades).to_dict()
    assert qrelkit.label_agreement(model, grades).cohen_kappa == pytest.approx(1.0)
    from qrelkit.evaluate.audit import audit

    runs = qrelkit.read_runs([RUNS])
    by_dicts = audit(grades, grades, runs, resamples=20).to_dict()
    assert without(by_dicts, "model", "reference") == without(audit(model, model, runs, resamples=20).to_dict(), "model", "reference")


def test_groups_given_as_a_dict_are_those_of_a_groups_file(tmp_path):
    (tmp_path / "groups.tsv").write_text("run\tfamily\ngood\tneural\nmixed\tneural\nlexical\tlexical\nshuffled\tlexical\n")
    by_file = qrelkit.agree(QRELS, QRELS, RUNS, groups=f"{tmp_path / 'groups.tsv'}:family", resamples=30).to_dict()["bias"]
    by_dict = qrelkit.agree(QRELS, QRELS, RUNS, groups={"neural": ["good", "mixed"], "lexical": ["lexical", "shuffled"]}, resamples=30)
    assert by_dict.to_dict()["bias"] == by_file


def test_integer_qids_in_a_dataframe_are_read_as_text():
    frame = pd.DataFrame({"query_id": [1, 1, 2], "doc_id": ["a", "b", "a"], "relevance": [2, 0, 1]})
    run = pd.DataFrame({"query_id": [1, 1, 2], "doc_id": ["a", "b", "a"], "score": [2.0, 1.0, 3.0]})
    evaluation = qrelkit.evaluate(frame, run, "P@1")
    assert evaluation.queries == ["1", "2"] and evaluation.to_dict()["runs"] == {"run": {"P@1": 1.0}}


def test_a_table_without_the_columns_names_what_it_looked_for():
    with pytest.raises(QrelkitError, match="no relevance column \\(looked for grade, relevance"):
        qrelkit.evaluate(pd.DataFrame({"qid": ["1"], "docid": ["a"], "value": [1]}), RUNS)
    with pytest.raises(QrelkitError, match="relevance grades are whole numbers; the table holds 0.5"):
        qrelkit.evaluate(pd.DataFrame({"qid": ["1"], "docid": ["a"], "relevance": [0.5]}), RUNS)


def test_every_result_has_to_dict_to_pandas_and_a_short_repr(tmp_path):
    db = tmp_path / "lab.duckdb"
    store = qrelkit.Store(db)
    store.load_qrels(QRELS)
    store.load_runs(sorted(RUNS.glob("*.run")))
    store.import_scores(_scores(tmp_path), name="imported")
    results = [
        qrelkit.evaluate("qrels", None, db=db),
        qrelkit.agree(QRELS, QRELS, RUNS, resamples=0),
        qrelkit.agree(QRELS, QRELS, RUNS, resamples=0).labels,
        qrelkit.correlate(QRELS, RUNS, ["nDCG@10", "P@5"]),
        qrelkit.nrg(QRELS, RUNS),
        qrelkit.grade(db=db, judge_run="imported", method="quantile"),
        qrelkit.judgments(db, "imported"),
    ]
    for result in results:
        json.dumps(result.to_dict(), default=str)
        assert isinstance(result.to_pandas(), pd.DataFrame) and len(result.to_pandas())
        shown = repr(result)
        assert "\n" not in shown and len(shown) < 300 and shown.startswith(type(result).__name__ + "(")
        assert "<table" in result._repr_html_()
    judged = qrelkit.judgments(db, "imported").to_pandas()
    assert set(judged.columns) >= {"judge_run_id", "qid", "docid", "status", "score", "raw_output"} and len(judged) == 120


def _scores(folder: Path) -> Path:
    from qrelkit.io.scores import read_scores

    path = folder / "scores.tsv"
    path.write_text("".join(f"{q.qid}\t{q.docid}\t{q.grade + 0.5}\n" for q in qrelkit.read_qrels(QRELS).entries))
    return read_scores(path)


def test_to_pandas_without_pandas_says_how_to_install_it():
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules["pandas"] = None  # as if pandas were not installed
        import qrelkit
        result = qrelkit.evaluate({str(QRELS)!r}, {str(RUNS)!r})
        try:
            result.to_pandas()
        except ModuleNotFoundError as exc:
            print(type(exc).__name__, exc.name, exc)
        print(result._repr_html_())
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, html = done.stdout.splitlines()[:2]
    hint = "to_pandas() needs pandas, which is not installed: pip install 'qrelkit[pandas]' (or pip install pandas)"
    assert first == f"MissingExtraError pandas {hint}"
    assert html.startswith("<p><code>Evaluation(runs=4, queries=12")  # a notebook without pandas still shows the result


# -- the store held in a notebook never locks the command line out ---------------------------------------------


def cli(*args: object, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "qrelkit.cli", *map(str, args)], capture_output=True, text=True, env={**os.environ, **(env or {})}
    )


NOTEBOOK = """
import sys, qrelkit
store = qrelkit.Store(sys.argv[1])
print(store.qrels_names(), flush=True)  # a read, as a notebook cell does
sys.stdin.readline()                    # the notebook stays open while the command line runs
store.load_qrels(sys.argv[2], name="later")  # and can still write afterwards
print(store.qrels_names(), flush=True)
"""


def test_a_notebook_store_stays_open_while_show_and_evaluate_run(tmp_path):
    db = tmp_path / "lab.duckdb"
    assert cli("load", "qrels", QRELS, "--db", db).returncode == 0
    assert cli("load", "runs", RUNS, "--db", db).returncode == 0
    notebook = subprocess.Popen(
        [sys.executable, "-c", NOTEBOOK, str(db), str(QRELS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert notebook.stdout.readline().strip() == "['qrels']"
        shown = cli("show", "--db", db, "--json", env={"QRELKIT_LOCK_WAIT": "0"})
        assert shown.returncode == 0, shown.stderr
        assert [s["name"] for s in json.loads(shown.stdout)["qrels_sets"]] == ["qrels"]
        evaluated = cli("evaluate", "--qrels", "qrels", "--db", db, "--json", env={"QRELKIT_LOCK_WAIT": "0"})
        assert evaluated.returncode == 0, evaluated.stderr
        assert json.loads(evaluated.stdout)["runs"] == qrelkit.evaluate(QRELS, RUNS).to_dict()["runs"]
        notebook.stdin.write("\n")
        notebook.stdin.flush()
        assert notebook.stdout.readline().strip() == "['later', 'qrels']"
    finally:
        notebook.kill()
        notebook.wait()


HOLDER = """
import sys, time
from qrelkit.storage import Store
store = Store(sys.argv[1])  # a writer holding the file, as a load does
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
store.close()
time.sleep(30)
"""


def test_a_reader_waits_for_a_brief_writer_then_names_a_long_one(tmp_path):
    db = tmp_path / "lab.duckdb"
    assert cli("load", "qrels", QRELS, "--db", db).returncode == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), "1.5"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        started = time.monotonic()
        shown = cli("show", "--db", db, env={"QRELKIT_LOCK_WAIT": "20"})
        assert shown.returncode == 0, shown.stderr  # waited for the writer to let go
        assert time.monotonic() - started < 20
    finally:
        holder.kill()
        holder.wait()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), "60"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        refused = cli("show", "--db", db, env={"QRELKIT_LOCK_WAIT": "0.5"})
        assert refused.returncode == 2
        assert f"is in use by process {holder.pid} " in refused.stderr
    finally:
        holder.kill()
        holder.wait()
