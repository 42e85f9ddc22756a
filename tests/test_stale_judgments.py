"""Stale judgments (issue 13, class 9): a judgment records the content hash of the document it
judged. When a document's text or image changes (`load docs --replace`), its judgments move to
`judgment_history` (kept, never used for the new content) and the next run judges it again."""

from __future__ import annotations

import json
from functools import partial

import pytest
import yaml
from hostile_judges import LengthJudge

from qrelkit.io import sha256_text
from qrelkit.io.lines import sha256_bytes
from qrelkit.jobs import load_job, run_job
from qrelkit.storage import Store
from qrelkit.storage.judgments import ok_scores, write_judgments

# The jobs here name test judges by `module:Class`: the caller allows the import (a job file cannot).
load_job = partial(load_job, allow_import=True)

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


# -- judgments know their inputs (issue 24): topics, fields, image bytes read for judging, batches ----


def test_a_changed_topic_is_judged_again_and_its_old_judgments_kept_as_history(job, tmp_path):
    report = run_job(job, progress=False)
    (tmp_path / "topics.tsv").write_text("q1\tgoldfish lifespan in ponds\n")
    with Store(job.database) as store:
        store.load_topics(tmp_path / "topics.tsv", replace=True)
        assert store.con.execute("SELECT count(*) FROM judgments").fetchone() == (0,)
        old_hash = {h for (h,) in store.con.execute("SELECT topic_hash FROM judgment_history").fetchall()}
    assert old_hash == {sha256_text("goldfish")}
    LengthJudge.asked.clear()
    again = run_job(job, progress=False)
    assert sorted(LengthJudge.asked) == [("q1", d) for d in sorted(DOCS)] and again.judged == 3  # main: "0 to judge"
    with Store(job.database, read_only=True) as store:
        recorded = {h for (h,) in store.con.execute("SELECT topic_hash FROM judgments").fetchall()}
        assert recorded == {sha256_text("goldfish lifespan in ponds")}
        assert store.con.execute("SELECT count(*) FROM judgment_history WHERE judge_run_id = ?", [report.judge_run_id]).fetchone() == (3,)


def test_a_changed_field_of_a_topic_or_document_is_judged_again(tmp_path):
    topic = {"qid": "q1", "text": "goldfish", "narrative": "ponds only"}
    docs = {"d1": {"docid": "d1", "text": "goldfish grow", "title": "Fish"}, "d2": {"docid": "d2", "text": "cats", "title": "Cats"}}
    (tmp_path / "topics.jsonl").write_text(json.dumps(topic) + "\n")
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs.values()))
    (tmp_path / "pairs.tsv").write_text("q1\td1\nq1\td2\n")
    spec = {
        "database": "j.duckdb",
        "collection": {"topics": "topics.jsonl", "documents": "docs.jsonl"},
        "pool": {"pairs": "pairs.tsv"},
        "judge": {"name": "hostile_judges:LengthJudge"},
        "allow_import": True,
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec))
    job = load_job(tmp_path / "job.yaml")
    run_job(job, progress=False)
    docs["d2"]["title"] = "Cats and goldfish"  # the text is the same: only a field a template may read changed
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs.values()))
    with Store(job.database) as store:
        store.load_documents(tmp_path / "docs.jsonl", replace=True)
    LengthJudge.asked.clear()
    assert run_job(job, progress=False).judged == 1 and LengthJudge.asked == [("q1", "d2")]
    (tmp_path / "topics.jsonl").write_text(json.dumps({**topic, "narrative": "ponds and bowls"}) + "\n")
    with Store(job.database) as store:
        store.load_topics(tmp_path / "topics.jsonl", replace=True)
    LengthJudge.asked.clear()
    assert run_job(job, progress=False).judged == 2 and sorted(LengthJudge.asked) == [("q1", "d1"), ("q1", "d2")]


def image_job(tmp_path, server):
    """Two images judged by the openai judge (against a local fake server)."""
    from PIL import Image

    root = tmp_path / "images"
    root.mkdir()
    Image.new("RGB", (16, 16), (255, 0, 0)).save(root / "a.png")
    Image.new("RGB", (16, 16), (0, 0, 255)).save(root / "b.png")
    (tmp_path / "topics.jsonl").write_text(
        json.dumps({"qid": "q1", "text": "Egg", "page_title": "Egg", "section_title": "Cooking", "section_context": "Boiled."}) + "\n"
    )
    (tmp_path / "images.jsonl").write_text('{"docid": "i1", "image": "a.png"}\n{"docid": "i2", "image": "b.png"}\n')
    (tmp_path / "pairs.tsv").write_text("q1\ti1\nq1\ti2\n")
    spec = {
        "database": "img.duckdb",
        "collection": {"topics": "topics.jsonl", "documents": "images.jsonl", "image_root": "images"},
        "pool": {"pairs": "pairs.tsv"},
        "template": "atomic-image-suggestion",
        "judge": {"name": "openai", "options": {"model": "gpt-4o", "base_url": server.base_url, "api_key_env": "QRELKIT_FAKE_KEY"}},
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec))
    return load_job(tmp_path / "job.yaml"), root


def statuses(database) -> dict[str, tuple[str, str | None]]:
    with Store(database, read_only=True) as store:
        return {d: (s, e) for d, s, e in store.con.execute("SELECT docid, status, error FROM judgments").fetchall()}


def test_image_bytes_changed_on_disk_after_loading_are_not_judged_as_the_loaded_image(tmp_path, monkeypatch):
    from fake_openai import FakeOpenAI
    from PIL import Image

    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    with FakeOpenAI() as server:
        job, root = image_job(tmp_path, server)
        run_job(job, limit=0, progress=False)  # loaded: the images' bytes hashed
        Image.new("RGB", (16, 16), (0, 255, 0)).save(root / "a.png")  # the same name, another picture, no reload
        run_job(job, progress=False)
        outcome = statuses(job.database)
        assert outcome["i2"] == ("ok", None)
        assert outcome["i1"][0] == "input_error" and outcome["i1"][1].startswith(
            f"image {root / 'a.png'} is not the image loaded with the documents (sha256 "
        )
        assert outcome["i1"][1].endswith("now); load the documents again (--replace) to judge it")
        assert len(server.requests) == 1  # the changed image was never sent
        with Store(job.database) as store:
            store.load_documents(tmp_path / "images.jsonl", image_root=root, replace=True)
        report = run_job(job, progress=False)  # reloaded: judged, recorded under the new image's hash
        assert report.judged == 1 and statuses(job.database)["i1"] == ("ok", None) and len(server.requests) == 2
        with Store(job.database, read_only=True) as store:
            (recorded,) = store.con.execute("SELECT content_hash FROM judgments WHERE docid = 'i1'").fetchone()
        assert recorded == sha256_bytes((root / "a.png").read_bytes())


def test_an_image_root_swapped_for_another_folder_sends_no_foreign_image(tmp_path, monkeypatch):
    from fake_openai import FakeOpenAI
    from PIL import Image

    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    with FakeOpenAI() as server:
        job, root = image_job(tmp_path, server)
        run_job(job, limit=0, progress=False)
        root.rename(tmp_path / "loaded-images")
        root.mkdir()  # another collection's folder, with files of the same names
        Image.new("RGB", (16, 16), (9, 9, 9)).save(root / "a.png")
        Image.new("RGB", (16, 16), (7, 7, 7)).save(root / "b.png")
        run_job(job, progress=False)
        assert {d: s for d, (s, _) in statuses(job.database).items()} == {"i1": "input_error", "i2": "input_error"}
        assert server.requests == []


def test_a_batch_answer_collected_after_its_document_changed_is_not_taken_for_the_new_content(tmp_path, monkeypatch):
    from fake_batch_api import FakeBatchAPI
    from fake_openai import openai_job, write_text_collection

    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    docs = {"d1": "[d1] goldfish grow", "d2": "[d2] cats sleep"}
    with FakeBatchAPI() as api:
        write_text_collection(tmp_path, {"q1": "goldfish"}, docs, (("q1", d) for d in docs))
        options = {"model": "fake-gpt", "base_url": api.base_url, "api_key_env": "QRELKIT_FAKE_KEY", "mode": "batch"}
        spec = load_job(openai_job(tmp_path, options))
        assert run_job(spec, progress=False).submitted == 2
        write_text_collection(tmp_path, {"q1": "goldfish"}, {**docs, "d2": "[d2] cats sleep all day"}, (("q1", d) for d in docs))
        with Store(spec.database) as store:  # reloaded while the batch was out
            store.load_documents(tmp_path / "docs.jsonl", replace=True)
        api.complete()
        collected = run_job(spec, progress=False)
        assert collected.judged == 2 and collected.submitted == 0
        with Store(spec.database, read_only=True) as store:
            hashes = dict(store.con.execute("SELECT docid, content_hash FROM judgments").fetchall())
        assert hashes == {"d1": sha256_text(docs["d1"]), "d2": sha256_text(docs["d2"])}  # what was sent, not what is loaded
        again = run_job(spec, progress=False)
        assert again.submitted == 1 and api.input_lines(sorted(api.batches)[-1])[0]["custom_id"].endswith(":q1:d2")
