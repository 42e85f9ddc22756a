"""The `vllm` judge's local batch client (qrelkit.judges.vllm_batch) without vLLM: its folder, its
runner process and what a crash, a kill or a hostile folder leave. The runner runs a real process;
here a short Python script stands in for vLLM's run_batch (tests/test_vllm_engine.py runs the real
one), writing the output lines of OpenAI's Batch API."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from qrelkit.judges.batch_api import BatchApiError, read_output_line
from qrelkit.judges.vllm_batch import LocalBatchClient

ANSWER = """
import json, sys, time
source, output, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])
time.sleep(pause)
with open(source) as lines, open(output, "w") as out:
    for line in lines:
        custom_id = json.loads(line)["custom_id"]
        status = 400 if "fail" in custom_id else 200
        body = {} if status == 400 else {"choices": [{"message": {"content": "2"}}]}
        answer = {"id": "x", "custom_id": custom_id, "response": {"status_code": status, "body": body}, "error": None}
        out.write(json.dumps(answer) + "\\n")
sys.exit(int(sys.argv[4]))
"""


def command(pause: float = 0.0, exit_code: int = 0):
    return lambda source, output: [sys.executable, "-c", ANSWER, str(source), str(output), str(pause), str(exit_code)]


def request_file(folder: Path, ids: list[str]) -> Path:
    path = folder / "qrelkit-run-sub.jsonl"
    lines = [{"custom_id": i, "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m"}} for i in ids]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def wait_until_terminal(client: LocalBatchClient, batch_id: str, seconds: float = 60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        info = client.retrieve(batch_id)
        if info.terminal:
            return info
        time.sleep(0.1)
    raise AssertionError(f"batch {batch_id} still {info.status}")


def test_a_batch_runs_in_a_process_of_its_own_and_its_output_is_read_back(tmp_path):
    client = LocalBatchClient(tmp_path / "vllm", command())
    source = request_file(tmp_path, ["a", "b", "fail-c"])
    file_id = client.upload(source, source.name)
    assert client.find_files([source.name, "other.jsonl"]) == {source.name: file_id}
    info = client.create(file_id, {"qrelkit_submission_id": "sub"})
    assert info.status == "in_progress" and info.total == 3 and not info.terminal
    done = wait_until_terminal(client, info.id)
    assert (done.status, done.total, done.completed, done.failed) == ("completed", 3, 2, 1)
    lines = [read_output_line(text) for text in b"".join(client.download(done.output_file_id)).decode().splitlines()]
    assert [(line.custom_id, line.status_code) for line in lines] == [("a", 200), ("b", 200), ("fail-c", 400)]
    assert client.find_batches(["sub", "nothing"]).keys() == {"sub"}
    assert client.find_files([source.name]) == {}  # the runner's copy is removed once answered
    assert source.is_file()  # the job's own request file is the driver's to remove


def test_a_running_batch_is_found_running_from_another_folder_and_by_another_spelling_of_its_path(tmp_path, monkeypatch):
    """`qrelkit batches --db DB` may name the database by another path than the job did."""
    monkeypatch.chdir(tmp_path)
    started = LocalBatchClient(Path("db.batches/vllm"), command(pause=3))
    source = request_file(tmp_path, ["a"])
    info = started.create(started.upload(source, source.name), {})
    elsewhere = LocalBatchClient(tmp_path / "db.batches" / "vllm")
    assert elsewhere.retrieve(info.id).status == "in_progress"
    assert wait_until_terminal(elsewhere, info.id).status == "completed"


def test_a_runner_that_fails_records_vllms_last_error_line(tmp_path):
    client = LocalBatchClient(tmp_path / "vllm", lambda s, o: [sys.executable, "-c", "raise SystemExit('ValueError: no model at /m')"])
    source = request_file(tmp_path, ["a"])
    info = wait_until_terminal(client, client.create(client.upload(source, source.name), {}).id)
    assert info.status == "failed" and info.output_file_id is None
    assert "exited with 1" in info.errors[0] and "no model at /m" in info.errors[0]


def test_a_killed_runner_reads_as_a_failed_batch_and_a_cancel_stops_it(tmp_path):
    client = LocalBatchClient(tmp_path / "vllm", command(pause=60))
    source = request_file(tmp_path, ["a"])
    file_id = client.upload(source, source.name)
    killed = client.create(file_id, {})
    state = json.loads((tmp_path / "vllm" / "batches" / f"{killed.id}.json").read_text())
    os.killpg(state["pid"], signal.SIGKILL)  # the runner and its child, as a machine restart would
    info = wait_until_terminal(client, killed.id)
    assert info.status == "failed" and "stopped before it finished" in info.errors[0]
    cancelled = client.create(client.upload(source, source.name), {})
    assert client.cancel(cancelled.id).status == "cancelled"
    pid = json.loads((tmp_path / "vllm" / "batches" / f"{cancelled.id}.json").read_text())["pid"]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]:
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    assert client.retrieve(cancelled.id).status == "cancelled"


def test_a_hostile_folder_names_no_file_outside_it_and_no_process_it_did_not_start(tmp_path):
    client = LocalBatchClient(tmp_path / "vllm")  # as `qrelkit batches` builds it: nothing is started
    for bad in ("../x", "/etc/passwd", "a/../../b"):
        with pytest.raises(BatchApiError, match="not one this folder writes"):
            list(client.download(bad))
        with pytest.raises(BatchApiError):
            client.retrieve(bad)
    batches = tmp_path / "vllm" / "batches"
    batches.mkdir(parents=True)
    victim = os.getpid()  # a state file naming this very process as its runner
    (batches / "vllm-1.json").write_text(json.dumps({"id": "vllm-1", "status": "in_progress", "pid": victim, "total": 1}))
    assert client.cancel("vllm-1").status == "cancelled"  # recorded, and this process is still alive
    (batches / "vllm-2.json").write_text("{not json")
    with pytest.raises(BatchApiError, match="no batch vllm-2"):
        client.retrieve("vllm-2")
    with pytest.raises(BatchApiError, match="starts no batch"):
        client.create("x.jsonl", {})


# -- the `vllm` judge's `mode: batch` as a job, its runner's answers from the script above ---------------------


@pytest.fixture
def vllm_batch_job(tmp_path, monkeypatch):
    """A `vllm` job with `mode: batch`, whose runner is the script above: the job writes the chat
    request lines (`qrelkit.judges.chat_completions`), the runner answers "2" to each."""
    from fake_openai import openai_job, write_text_collection

    from qrelkit.jobs import load_job
    from qrelkit.judges import vllm

    monkeypatch.setattr(vllm.VLLMJudge, "startup_problems", classmethod(lambda cls, config: []))  # no vLLM, no model here
    monkeypatch.setattr(vllm.VLLMJudge, "preflight", lambda self: setattr(self, "_device", "cpu"))
    monkeypatch.setattr(vllm, "run_batch_command", lambda config, device, source, output: command()(source, output))
    docs = {f"d{i}": f"goldfish fact {i}" for i in range(3)}
    write_text_collection(tmp_path, {"q1": "goldfish"}, docs, (("q1", d) for d in docs))
    options = {"model": "/m", "mode": "batch", "batch_poll": 0.1, "batch_poll_max": 0.2}
    job = openai_job(tmp_path, {})
    job.write_text(job.read_text().replace("name: openai", "name: vllm").replace("options: {}", f"options: {json.dumps(options)}"))
    return load_job(job)


def test_a_vllm_batch_records_this_machines_runner_and_is_collected_by_batches_whatever_endpoint_it_is_given(vllm_batch_job):
    from qrelkit.jobs import run_job
    from qrelkit.jobs.batch_api_job import check_batches
    from qrelkit.judges.batch_api import BatchEndpoint
    from qrelkit.judges.vllm_batch import ENDPOINT
    from qrelkit.storage import Store
    from qrelkit.storage.batch_api import submissions

    spec = vllm_batch_job
    assert run_job(spec, progress=False).submitted == 3
    with Store(spec.database) as store:
        (sub,) = submissions(store)
        assert (sub.endpoint, sub.key_variable) == (ENDPOINT, None)  # declared by the judge: no URL, no key
        assert "base_url" not in sub.options
        wait_until_terminal(LocalBatchClient(spec.database.with_name(spec.database.name + ".batches") / "vllm"), sub.batch_id)
        # `qrelkit batches` with the command line's default endpoint (OpenAI's): a local batch is only read
        (collected,) = check_batches(store, spec.database, BatchEndpoint.remote(None, "OPENAI_API_KEY"))
        assert (collected.state, collected.judged) == ("collected", 3)
        rows = store.con.execute("SELECT status, score, raw_output, model_id FROM judgments ORDER BY docid").fetchall()
    assert rows == [("ok", 2.0, "Relevance: 2", "/m")] * 3  # the judge's model, not the name the runner served it under


def test_a_vllm_batch_recorded_before_endpoints_were_is_read_as_this_machines_runner(vllm_batch_job):
    from qrelkit.jobs import run_job
    from qrelkit.storage import Store
    from qrelkit.storage.batch_api import submissions

    spec = vllm_batch_job
    run_job(spec, progress=False)
    with Store(spec.database) as store:  # what a database of schema 10 holds once migrated: no endpoint
        store.con.execute("UPDATE batch_submissions SET endpoint = NULL, key_variable = NULL")
        (sub,) = submissions(store)
    wait_until_terminal(LocalBatchClient(spec.database.with_name(spec.database.name + ".batches") / "vllm"), sub.batch_id)
    report = run_job(spec, progress=False)  # the job's own endpoint is the same runner: no mismatch, collected
    assert (report.judged, report.statuses, report.in_batches) == (3, {"ok": 3}, 0)
