"""A database file is data, not code (issue 24). Researchers share databases; opening one must not
act on its own: stored options never choose where requests go or which key is sent, a stored path
never chooses which file is deleted, and a file holding views, macros or foreign tables, or a file
that is not a DuckDB database at all, is refused with one line naming it before anything is read."""

from __future__ import annotations

import json
import time

import duckdb
import pytest
from fake_batch_api import FakeBatchAPI
from fake_openai import openai_job, write_text_collection
from hostile import one_error, qrelkit, snapshot

from qrelkit.jobs import load_job, run_job
from qrelkit.jobs.batch_api import batch_folder
from qrelkit.storage import Store

DOCS = {f"d{i}": f"[d{i}] goldfish fact number {i}" for i in range(1, 5)}


@pytest.fixture
def submitted(tmp_path, monkeypatch):
    """A database with one open Batch API batch, sent by a job to the fake API `sent_to`."""
    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    with FakeBatchAPI() as api:
        write_text_collection(tmp_path, {"q1": "goldfish"}, DOCS, (("q1", d) for d in DOCS))
        options = {"model": "fake-gpt", "base_url": api.base_url, "api_key_env": "QRELKIT_FAKE_KEY", "mode": "batch", "max_tries": 2}
        spec = load_job(openai_job(tmp_path, options, database="shared.duckdb"))
        report = run_job(spec, progress=False)
        assert report.submitted == 4 and len(api.batches) == 1
        yield spec, api


def tamper(db, sql: str, params: list | None = None) -> None:
    """Change a database as its author could have, with DuckDB itself."""
    con = duckdb.connect(str(db))
    try:
        con.execute(sql, params or [])
    finally:
        con.close()


def point_elsewhere(db, base_url: str, key_variable: str, recorded: bool) -> None:
    """Say in the database that its batches went to ``base_url`` with the key in ``key_variable``: in
    the endpoint recorded with each submission, or (``recorded`` False) as a database written before
    endpoints were recorded said it, in the submission's judge options alone."""
    if recorded:
        tamper(db, "UPDATE batch_submissions SET endpoint = ?, key_variable = ?", [base_url, key_variable])
        return
    stored = {"model": "fake-gpt", "base_url": base_url, "api_key_env": key_variable, "mode": "batch"}
    tamper(db, "UPDATE batch_submissions SET options = ?, endpoint = NULL, key_variable = NULL", [json.dumps(stored)])


@pytest.mark.parametrize("recorded", [True, False], ids=["recorded", "before-schema-11"])
def test_batches_whose_stored_endpoint_points_elsewhere_send_nothing_and_name_the_mismatch(submitted, tmp_path, recorded):
    spec, api = submitted
    with FakeBatchAPI() as elsewhere:
        point_elsewhere(spec.database, elsewhere.base_url, "USERS_SECRET_TOKEN", recorded)
        env = {"USERS_SECRET_TOKEN": "s3cr3t-of-the-user", "QRELKIT_FAKE_KEY": "k"}
        sent_before = len(api.calls)
        before = snapshot(spec.database)
        # the default endpoint, then the very endpoint the job used: neither is what the database says
        for extra in ([], ["--base-url", api.base_url, "--api-key-env", "QRELKIT_FAKE_KEY"]):
            error = one_error(qrelkit("batches", "--db", spec.database, *extra, env=env), 2)
            assert f"was sent to {elsewhere.base_url} with the key in $USERS_SECRET_TOKEN, the database says" in error
            assert "so nothing was sent" in error
        error = one_error(qrelkit("batches", "cancel", next(iter(api.batches)), "--db", spec.database, env=env), 2)
        assert "$USERS_SECRET_TOKEN" in error
        assert elsewhere.calls == [] and len(api.calls) == sent_before  # no request anywhere
        assert snapshot(spec.database) == before
        # the explicit flag accepts the stored endpoint (and only then is the stored variable's key sent;
        # that server knows no such batch, so the command then fails)
        qrelkit("batches", "--db", spec.database, "--use-stored-endpoint", env=env)
        assert elsewhere.calls and {c.headers.get("authorization") for c in elsewhere.calls} == {"Bearer s3cr3t-of-the-user"}


@pytest.mark.parametrize("recorded", [True, False], ids=["recorded", "before-schema-11"])
def test_the_matching_endpoint_collects_without_the_job_file(submitted, recorded):
    spec, api = submitted
    if not recorded:  # a submission recorded before its endpoint was: read from its options, as then
        tamper(spec.database, "UPDATE batch_submissions SET endpoint = NULL, key_variable = NULL")
    api.complete()
    at = ["--base-url", api.base_url, "--api-key-env", "QRELKIT_FAKE_KEY"]
    done = qrelkit("batches", "--db", spec.database, "--json", *at, env={"QRELKIT_FAKE_KEY": "k"})
    assert done.returncode == 0, done.stderr
    assert [(b["state"], b["judged"]) for b in json.loads(done.stdout)] == [("collected", 4)]


def test_a_stored_request_file_outside_the_batch_folder_is_never_deleted(submitted, tmp_path):
    spec, api = submitted
    folder = batch_folder(spec.database)
    (own,) = folder.glob("qrelkit-*.jsonl")
    victims = [tmp_path / "thesis.tex", tmp_path / "elsewhere" / own.name]  # any file, and one with a request file's name
    victims[1].parent.mkdir()
    for victim in victims:
        victim.write_text("years of work\n")
    link = folder / "qrelkit-link.jsonl"  # inside the folder, but a link leading out of it
    link.symlink_to(victims[0])
    for victim in [*victims, link]:
        tamper(spec.database, "UPDATE batch_submissions SET request_file = ?", [str(victim)])
        api.complete()
        with Store(spec.database) as store:  # a run of the job collects as `qrelkit batches` does
            store.con.execute("UPDATE batch_submissions SET state = 'submitted'")
        report = run_job(spec, progress=False)
        assert report.judged == 4
    assert all(victim.read_text() == "years of work\n" for victim in victims) and link.is_symlink()
    assert own.exists()  # the stored path was not the folder's: its own file is left, not guessed at


def test_a_collected_batch_removes_its_own_request_file(submitted):
    spec, api = submitted
    folder = batch_folder(spec.database)
    assert len(list(folder.glob("qrelkit-*.jsonl"))) == 1
    api.complete()
    run_job(spec, progress=False)
    assert not folder.exists()


# -- opening a database checks it ---------------------------------------------------------------------


@pytest.fixture
def db(tmp_path):
    (tmp_path / "topics.tsv").write_text("q1\tgoldfish\n")
    path = tmp_path / "x.duckdb"
    with Store(path) as store:
        store.load_topics(tmp_path / "topics.tsv")
    (tmp_path / "secret.txt").write_text("qid,text\nq9,the private key of the user\n")
    return path


@pytest.mark.parametrize(
    "change, named",
    [
        (
            "ALTER TABLE topics RENAME TO real_topics; CREATE VIEW topics AS "
            "SELECT qid, text, '{}'::JSON AS fields, 'x' AS source, NULL AS content_hash FROM read_csv('{secret}')",
            "a view 'topics'",
        ),
        ("CREATE MACRO list_contains(a, b) AS true", "a macro 'list_contains'"),  # would stand in for the built-in
        ("CREATE VIEW notes AS SELECT 1", "a view 'notes'"),
        ("CREATE SEQUENCE counter", "a sequence 'counter'"),
        ("CREATE SCHEMA other; CREATE TABLE other.topics (qid TEXT)", "a schema 'other'"),
        ("CREATE TABLE extra (x INTEGER)", "table(s) qrelkit does not write ('extra')"),
        ("ALTER TABLE topics ADD COLUMN sneaky TEXT DEFAULT 'x'", "table 'topics' is not as qrelkit writes it"),
        ("DROP TABLE judgments", "lacks the table(s) 'judgments'"),
    ],
)
def test_a_database_holding_anything_but_its_own_tables_is_refused_by_name_before_a_row_is_read(db, tmp_path, change, named):
    tamper(db, change.replace("{secret}", str(tmp_path / "secret.txt")))
    before = snapshot(db)
    error = one_error(qrelkit("show", "--db", db), 2)
    assert error.startswith(f"error: database {db}") and named in error
    error = one_error(qrelkit("load", "topics", tmp_path / "topics.tsv", "--name", "more", "--db", db), 2)
    assert named in error
    assert "private key" not in error
    assert snapshot(db) == before


def test_a_dry_run_refuses_a_view_before_copying_the_database(db, tmp_path):
    tamper(db, f"ALTER TABLE topics RENAME TO t2; CREATE VIEW topics AS SELECT * FROM read_csv('{tmp_path / 'secret.txt'}')")
    (tmp_path / "docs.jsonl").write_text('{"docid": "d1", "text": "goldfish"}\n')
    (tmp_path / "pairs.tsv").write_text("q1\td1\n")
    (tmp_path / "job.yaml").write_text(
        json.dumps(
            {
                "database": str(db),
                "collection": {"documents": "docs.jsonl"},
                "pool": {"pairs": "pairs.tsv"},
                "judge": {"name": "embedding"},
            }
        )
    )
    error = one_error(qrelkit("judge", "job.yaml", "--dry-run", cwd=tmp_path), 2)
    assert f"database {db} holds a view 'topics'" in error


def test_an_sqlite_file_is_named_without_fetching_an_extension(tmp_path):
    import sqlite3

    path = tmp_path / "lab.db"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE t (x)")
    started = time.monotonic()
    error = one_error(qrelkit("show", "--db", path, env={"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}), 2)
    assert error == f"error: cannot open database {path}: it is an SQLite database, not a DuckDB one (qrelkit's are); name another --db"
    assert time.monotonic() - started < 60
    assert not (tmp_path / ".duckdb").exists() and not any(p.name.endswith(".duckdb_extension") for p in tmp_path.rglob("*"))


def test_duckdb_never_installs_or_loads_an_extension_for_a_file(db):
    with Store(db, read_only=True) as store:
        settings = dict(
            store.con.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name IN ('autoinstall_known_extensions', 'autoload_known_extensions')"
            ).fetchall()
        )
    assert settings == {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}


@pytest.mark.parametrize("how", ["empty", "text", "truncated", "cut in a data block", "bad block"])
def test_a_foreign_or_damaged_file_is_one_line_naming_it(tmp_path, db, how):
    data = db.read_bytes()
    path = tmp_path / "given.duckdb"
    if how == "empty":
        path.write_bytes(b"")
    elif how == "text":
        path.write_text("qid\ttext\nq1\tgoldfish\n")
    elif how == "truncated":
        path.write_bytes(data[:20_000])
    elif how == "cut in a data block":
        path.write_bytes(data[: len(data) // 2])
    else:
        damaged = bytearray(data)
        for i in range(12_288, 16_384):
            damaged[i] ^= 0x5A
        path.write_bytes(bytes(damaged))
    size = path.stat().st_size
    error = one_error(qrelkit("show", "--db", path), 2)
    assert str(path) in error or path.name in error
    assert path.stat().st_size == size  # nothing written to it


def test_the_tables_an_open_checks_for_are_those_the_migrations_make():
    from qrelkit.storage.catalog import migrated_tables
    from qrelkit.storage.schema import CURRENT_TABLES, SCHEMA_VERSION

    assert CURRENT_TABLES == migrated_tables(SCHEMA_VERSION)  # a new migration must update CURRENT_TABLES
