"""`irds:<id>` topics, documents and qrels through ir_datasets, on a dataset of local files
registered in the test (a real dataset would download on first use)."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml
from fault_judges import OverlapJudge
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.errors import QrelkitError
from qrelkit.io import read_documents, read_qrels, read_topics
from qrelkit.io.irds import read_irds_documents, read_irds_qrels, read_irds_topics
from qrelkit.jobs import load_job, run_job
from qrelkit.storage import Store

# The jobs here name test judges by `module:Class`: the caller allows the import (a job file cannot).
load_job = partial(load_job, allow_import=True)

ir_datasets = pytest.importorskip("ir_datasets", reason="the irds extra is not installed (pip install 'qrelkit[irds]')")
from ir_datasets.datasets.base import Dataset  # noqa: E402
from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries  # noqa: E402
from ir_datasets.util import LocalDownload  # noqa: E402

runner = CliRunner()
DATASET = "qrelkit-test/tiny"
TOPICS = "q1\tgoldfish grow big\tponds and tanks\nq2\twifi versus bluetooth\tradio standards\n"
DOCS = "d1\tgoldfish grow big in ponds\nd2\tgoldfish are orange\nd3\twifi and bluetooth are radios\nd4\tcats sleep\n"
QRELS = "q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 2\nq2 0 d4 0\n"
RUN = "q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq2 Q0 d4 1 2.0 r\nq2 Q0 d3 2 1.0 r\n"


class TinyQuery(NamedTuple):
    """A query with an extra field, as many TREC collections have (description, narrative)."""

    query_id: str
    text: str
    narrative: str


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """The dataset's files, registered once with ir_datasets under DATASET (the registry is global)."""
    folder = tmp_path_factory.mktemp("irds")
    (folder / "queries.tsv").write_text(TOPICS)
    (folder / "docs.tsv").write_text(DOCS)
    (folder / "qrels.txt").write_text(QRELS)
    (folder / "r.run").write_text(RUN)
    if DATASET not in ir_datasets.registry:
        dataset = Dataset(
            TsvDocs(LocalDownload(folder / "docs.tsv")),
            TsvQueries(LocalDownload(folder / "queries.tsv"), query_cls=TinyQuery),
            TrecQrels(LocalDownload(folder / "qrels.txt"), {0: "not relevant", 1: "related", 2: "relevant"}),
        )
        ir_datasets.registry.register(DATASET, dataset)
    return folder


def test_irds_records_read_as_the_same_topics_documents_and_qrels_as_files(files, tmp_path):
    topics = read_irds_topics(DATASET)
    assert [(t.qid, t.text, t.fields) for t in topics] == [
        ("q1", "goldfish grow big", {"narrative": "ponds and tanks"}),
        ("q2", "wifi versus bluetooth", {"narrative": "radio standards"}),
    ]
    (tmp_path / "topics.tsv").write_text("".join(line.rsplit("\t", 1)[0] + "\n" for line in TOPICS.splitlines()))
    assert [(t.qid, t.text) for t in topics] == [(t.qid, t.text) for t in read_topics(tmp_path / "topics.tsv")]
    (tmp_path / "docs.jsonl").write_text(
        "".join(json.dumps(dict(zip(("docid", "text"), line.split("\t")))) + "\n" for line in DOCS.splitlines())
    )
    assert [(d.docid, d.text) for d in read_irds_documents(DATASET)] == [(d.docid, d.text) for d in read_documents(tmp_path / "docs.jsonl")]
    qrels = read_irds_qrels(DATASET)
    assert qrels.name == DATASET and qrels.source == f"irds:{DATASET}"
    assert qrels.grades == read_qrels(files / "qrels.txt").grades


def test_load_from_irds_ids_is_idempotent(files, tmp_path):
    db = str(tmp_path / "i.duckdb")
    for kind in ("topics", "docs", "qrels"):
        result = runner.invoke(app, ["load", kind, f"irds:{DATASET}", "--db", db])
        assert result.exit_code == 0, result.output
    again = runner.invoke(app, ["load", "qrels", f"irds:{DATASET}", "--db", db, "--name", "nist"])
    assert "loaded qrels 'nist' (4 rows)" in again.output
    assert (
        "already loaded, unchanged: qrels 'nist'"
        in runner.invoke(app, ["load", "qrels", f"irds:{DATASET}", "--db", db, "--name", "nist"]).output
    )
    with Store(db, read_only=True) as store:
        assert [(t.qid, t.fields) for t in store.topics()] == [
            ("q1", {"narrative": "ponds and tanks"}),
            ("q2", {"narrative": "radio standards"}),
        ]
        assert sorted(store.documents()) == ["d1", "d2", "d3", "d4"]
        assert store.qrels("nist").grades == store.qrels(DATASET).grades == read_qrels(files / "qrels.txt").grades
        assert store.qrels_origin("nist") == ("loaded", None, f"irds:{DATASET}")


def test_evaluate_with_irds_qrels_equals_the_qrels_file(files):
    as_file = runner.invoke(app, ["evaluate", "--qrels", str(files / "qrels.txt"), "--runs", str(files / "r.run"), "--json"])
    as_irds = runner.invoke(app, ["evaluate", "--qrels", f"irds:{DATASET}", "--runs", str(files / "r.run"), "--json"])
    assert as_irds.exit_code == 0, as_irds.output
    assert json.loads(as_irds.output)["runs"] == json.loads(as_file.output)["runs"]
    assert json.loads(as_irds.output)["runs"]["r"]["nDCG@10"] < 1.0  # the run puts d4 (grade 0) above d3 on q2


def test_a_job_collection_from_irds_judges_the_qrels_pool(files, tmp_path):
    spec = {
        "database": "j.duckdb",
        "collection": {"topics": f"irds:{DATASET}", "documents": f"irds:{DATASET}", "qrels": {"nist": f"irds:{DATASET}"}},
        "pool": {"qrels": "nist"},
        "judge": {"name": "fault_judges:OverlapJudge"},
        "allow_import": True,
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec))
    job = load_job(tmp_path / "job.yaml")
    assert str(job.collection.topics) == f"irds:{DATASET}"  # an id is not a path relative to the job file
    dry = run_job(job, dry_run=True, progress=False)
    assert (dry.pairs, dry.to_judge) == (4, 4) and not (tmp_path / "j.duckdb").exists()
    OverlapJudge.calls.clear()
    report = run_job(job, progress=False)
    assert report.statuses == {"ok": 4} and sorted(OverlapJudge.calls) == [("q1", "d1"), ("q1", "d2"), ("q2", "d3"), ("q2", "d4")]
    assert [load.status for load in run_job(job, dry_run=True, progress=False).loads] == ["unchanged"] * 3


def test_an_unknown_id_and_a_missing_extra_are_one_line(files, monkeypatch):
    with pytest.raises(QrelkitError, match=r"^irds:no-such/dataset: ir_datasets has no dataset of this id"):
        runner.invoke(app, ["evaluate", "--qrels", "irds:no-such/dataset", "--runs", str(files / "r.run")], catch_exceptions=False)
    monkeypatch.setitem(sys.modules, "ir_datasets", None)  # as if the extra were not installed
    with pytest.raises(
        QrelkitError, match=r"^irds:qrelkit-test/tiny: reading ir_datasets ids needs the irds extra: pip install 'qrelkit\[irds\]'"
    ):
        read_irds_qrels(DATASET)


def test_a_dry_run_starts_no_download_of_an_irds_dataset(files, tmp_path):
    """A dataset whose files ir_datasets would fetch (from a local HTTP server that counts requests):
    a dry run names it in one line and sends no request; a real run downloads it."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from ir_datasets.util import Download, RequestsDownload

    requests: list[str] = []

    class Files(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            body = TOPICS.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Files)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        remote = f"qrelkit-test/remote-{tmp_path.name}"
        url = f"http://127.0.0.1:{server.server_address[1]}/queries.tsv"
        queries = Download([RequestsDownload(url)], cache_path=str(tmp_path / "cache" / "queries.tsv"))
        dataset = Dataset(TsvDocs(LocalDownload(files / "docs.tsv")), TsvQueries(queries, query_cls=TinyQuery))
        ir_datasets.registry.register(remote, dataset)
        (tmp_path / "pairs.tsv").write_text("q1\td1\n")
        spec = {
            "database": "j.duckdb",
            "collection": {"topics": f"irds:{remote}", "documents": f"irds:{DATASET}"},
            "pool": {"pairs": "pairs.tsv"},
            "judge": {"name": "fault_judges:OverlapJudge"},
        }
        (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec))
        job = load_job(tmp_path / "job.yaml")
        with pytest.raises(QrelkitError) as refused:
            run_job(job, dry_run=True, progress=False)
        assert str(refused.value).startswith(f"irds:{remote}: a dry run starts no download, and ir_datasets would fetch")
        assert requests == [] and not (tmp_path / "j.duckdb").exists()
        assert run_job(job, progress=False).statuses == {"ok": 1} and requests == ["/queries.tsv"]  # a real run fetches it
        assert run_job(job, dry_run=True, progress=False).to_judge == 0 and requests == ["/queries.tsv"]
    finally:
        server.shutdown()
