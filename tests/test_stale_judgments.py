"""Stale judgments (issue 13, class 9): a judgment records the content hash of the document it
judged. When a document's text or image changes (`load docs --replace`), its judgments move to
`judgment_history` (kept, never used for the new content) and the next run judges it again."""

from __future__ import annotations

import json

import pytest
import yaml
from hostile_judges import LengthJudge

from qrelkit.io import sha256_text
from qrelkit.jobs import load_job, run_job
from qrelkit.storage import Store
from qrelkit.storage.judgments import ok_scores, write_judgments

DOCS = {"d1": "goldfish grow big", "d2": "goldfish are orange", "d3": "cats sleep"}


def write_docs(folder, docs) -> None:
    (folder / "docs.jsonl").write_text("".join(json.dumps({"docid": d, "text": t}) + "\n" for d, t in docs.items()))


@pytest.fixture
def job(tmp_path):
    (tmp_path / "topics.tsv").write_text("q1\tgoldfish\n")
    write_docs(tmp_path, DOCS)
    (tmp_path / "pairs.tsv").write_text("".join(f"q1\t{d}\n" for d in DOCS))
    spec = {
        "database": "j.duckdb",
        "collection": {"topics": "topics.tsv", "documents": "docs.jsonl"},
        "pool": {"pairs": "pairs.tsv"},
        "judge": {"name": "hostile_judges:LengthJudge"},
        "allow_import": True,
        "flush_seconds": 0.001,
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec))
    LengthJudge.asked.clear()
    return load_job(tmp_path / "job.yaml")


def test_a_changed_document_is_judged_again_and_its_old_judgment_kept_as_history(job, tmp_path):
    report = run_job(job, progress=False)
    run_id = report.judge_run_id
    with Store(job.database) as store:
        hashes = dict(store.con.execute("SELECT docid, content_hash FROM judgments").fetchall())
    assert hashes == {d: sha256_text(t) for d, t in DOCS.items()}

    changed = {**DOCS, "d2": "goldfish are orange and can live for twenty years"}
    write_docs(tmp_path, changed)
    with Store(job.database) as store:
        store.load_documents(tmp_path / "docs.jsonl", replace=True)
        history = store.con.execute("SELECT docid, score, content_hash FROM judgment_history").fetchall()
        current = {d for (d,) in store.con.execute("SELECT docid FROM judgments").fetchall()}
    assert history == [("d2", float(len(DOCS["d2"])), sha256_text(DOCS["d2"]))]  # the old content's judgment, kept
    assert current == {"d1", "d3"}  # and not used for the new content

    LengthJudge.asked.clear()
    again = run_job(job, progress=False)
    assert LengthJudge.asked == [("q1", "d2")] and again.judged == 1  # only the changed document is judged again
    with Store(job.database, read_only=True) as store:
        assert ok_scores(store, run_id) == [("q1", d, float(len(t))) for d, t in sorted(changed.items())]
        assert store.con.execute("SELECT content_hash FROM judgments WHERE docid = 'd2'").fetchone()[0] == sha256_text(changed["d2"])
        assert store.con.execute("SELECT count(*) FROM judgment_history").fetchone()[0] == 1


def test_a_changed_image_retires_its_judgments(tmp_path):
    from PIL import Image

    root = tmp_path / "images"
    root.mkdir()
    Image.new("RGB", (8, 8), (255, 0, 0)).save(root / "a.png")
    Image.new("RGB", (8, 8), (0, 0, 255)).save(root / "b.png")
    (tmp_path / "images.jsonl").write_text('{"docid": "i1", "image": "a.png"}\n{"docid": "i2", "image": "b.png"}\n')
    from qrelkit.judges import Judgment

    with Store(tmp_path / "x.duckdb") as store:
        store.load_documents(tmp_path / "images.jsonl", image_root=root)
        write_judgments(
            store, "run1", [Judgment("q1", "i1", "ok", score=1.0), Judgment("q1", "i2", "ok", score=2.0)], store.document_hashes()
        )
        Image.new("RGB", (8, 8), (0, 255, 0)).save(root / "a.png")  # the same file name, another picture
        store.load_documents(tmp_path / "images.jsonl", image_root=root, replace=True)
        assert store.con.execute("SELECT docid FROM judgments").fetchall() == [("i2",)]
        assert store.con.execute("SELECT docid, score FROM judgment_history").fetchall() == [("i1", 1.0)]


def test_a_database_from_before_content_hashes_takes_its_judgments_as_of_the_content_loaded_now(tmp_path):
    import duckdb

    from qrelkit.storage.schema import MIGRATIONS

    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    for statement in [s for migration in MIGRATIONS[:3] for s in migration]:
        con.execute(statement)
    con.execute("INSERT INTO meta VALUES ('schema_version', '3')")
    con.execute("INSERT INTO documents VALUES ('d1', 'text', NULL, NULL, 'h1', '{}', 'docs')")
    con.execute("INSERT INTO judgments (judge_run_id, qid, docid, status, score) VALUES ('r', 'q1', 'd1', 'ok', 2.0)")
    con.close()
    with Store(path) as store:
        assert store.schema_version() == len(MIGRATIONS)
        assert store.con.execute("SELECT content_hash, notes FROM judgments").fetchall() == [("h1", None)]
