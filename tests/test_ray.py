"""The batch runner on Ray, on a local Ray of two CPUs (no network, no dashboard): the same judgments
as the local runner, a worker SIGKILLed mid-job, the driver SIGKILLed and re-run, a fatal judge error.

Select with `-m ray`; skipped without the `ray` extra. The deterministic judge is
`fault_judges:OverlapJudge` (word overlap), so every judgment can be checked by hand.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import yaml
from fault_judges import overlap

from qrelkit.commands.requests import JudgeRequest
from qrelkit.errors import QrelkitError
from qrelkit.jobs import load_job, run_job
from qrelkit.jobs.spec import JobError
from qrelkit.judges import FatalJudgeError
from qrelkit.storage import Store

# The jobs here name test judges by `module:Class`: the caller allows the import (a job file cannot).
load_job = partial(load_job, allow_import=True)

pytestmark = pytest.mark.ray

TESTS = Path(__file__).resolve().parent
WORDS = "goldfish pond water wifi radio bluetooth cat sleep tree forest river stone music guitar bread oven".split()
N_TOPICS, N_DOCS, PER_TOPIC = 30, 600, 100  # 3,000 pooled pairs
FAILING = ["d7", "d311"]  # the judge raises on these: model_error, the same with either executor
MISSING = [("q0", "d-missing"), ("q17", "d-missing-too")]  # pooled but not in the collection: input_error


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
        runtime_env={"env_vars": {"PYTHONPATH": str(TESTS)}},  # workers import fault_judges as the driver does
    )
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


def write_collection(folder: Path) -> list[tuple[str, str]]:
    rng = random.Random(15)
    (folder / "topics.tsv").write_text("".join(f"q{i}\t{' '.join(rng.sample(WORDS, 3))}\n" for i in range(N_TOPICS)))
    docs = [{"docid": f"d{i}", "text": " ".join(rng.choices(WORDS, k=8))} for i in range(N_DOCS)]
    (folder / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    pairs = [(f"q{i}", f"d{(i * 37 + j) % N_DOCS}") for i in range(N_TOPICS) for j in range(PER_TOPIC)] + MISSING
    (folder / "pairs.tsv").write_text("".join(f"{q}\t{d}\n" for q, d in pairs))
    return pairs


def write_job(folder: Path, name: str, *, executor: dict | None = None, **options) -> Path:
    spec = {
        "database": f"{name}.duckdb",
        "collection": {"topics": "topics.tsv", "documents": "docs.jsonl"},
        "pool": {"pairs": "pairs.tsv"},
        "judge": {"name": "fault_judges:OverlapJudge", "options": {"fail_docids": FAILING, **options}},
        "allow_import": True,
        "batch_size": 16,
        "flush_seconds": 0.001,
    }
    if executor is not None:
        spec["executor"] = executor
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def judgments(database: Path) -> dict[tuple[str, str], tuple]:
    with Store(database, read_only=True) as store:
        rows = store.con.execute("SELECT qid, docid, status, score, raw_output, error, model_id FROM judgments").fetchall()
    assert len(rows) == len({(r[0], r[1]) for r in rows})
    # an input error names the job's database; that differs between the runs compared
    return {
        (q, d): (status, score, raw, error and error.replace(str(database), "<db>"), model)
        for q, d, status, score, raw, error, model in rows
    }


def attempts(database: Path) -> dict[int, int]:
    with Store(database, read_only=True) as store:
        return dict(store.con.execute("SELECT attempts, count(*) FROM judgments GROUP BY attempts").fetchall())


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """The collection, and its judgments by the local runner (the reference every Ray run must equal)."""
    folder = tmp_path_factory.mktemp("ray-collection")
    pairs = write_collection(folder)
    report = run_job(load_job(write_job(folder, "local")), progress=False)
    assert report.judged == len(pairs) and report.statuses == expected_statuses(pairs)
    return folder, pairs, judgments(folder / "local.duckdb")


def expected_statuses(pairs: list[tuple[str, str]]) -> dict[str, int]:
    failing = sum(docid in FAILING for _, docid in pairs)
    return {"ok": len(pairs) - failing - len(MISSING), "model_error": failing, "input_error": len(MISSING)}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_gone(pids: list[int], seconds: float = 15.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def local_ray_cpus_free(cpus: float, seconds: float = 15.0) -> bool:
    import ray

    deadline = time.monotonic() + seconds
    while ray.available_resources().get("CPU", 0) < cpus and time.monotonic() < deadline:
        time.sleep(0.05)
    return ray.available_resources().get("CPU", 0) >= cpus


# -- the job spec and the command line (no Ray needed) ---------------------------------------------


def test_executor_options_are_validated_with_the_job_file(tmp_path):
    write_collection(tmp_path)
    assert load_job(write_job(tmp_path, "plain")).executor.kind == "local"
    with pytest.raises(JobError, match=r"bad\.yaml: executor: workers: only with `kind: ray` \(or --executor ray\)"):
        load_job(write_job(tmp_path, "bad", executor={"workers": 2}))
    with pytest.raises(JobError, match=r"bad\.yaml: executor.workers: Input should be greater than or equal to 1"):
        load_job(write_job(tmp_path, "bad", executor={"kind": "ray", "workers": 0}))
    with pytest.raises(JobError, match=r"num_gpus: 1.5 GPUs per worker: use a fraction below 1 or a whole number"):
        load_job(write_job(tmp_path, "bad", executor={"kind": "ray", "num_gpus": 1.5}))
    with pytest.raises(JobError, match=r"bad\.yaml: executor.kind: Input should be 'local' or 'ray'"):
        load_job(write_job(tmp_path, "bad", executor={"kind": "slurm"}))
    ray_job = write_job(tmp_path, "rayjob", executor={"kind": "ray", "workers": 4, "num_gpus": 0.5, "address": "auto"})
    spec = load_job(ray_job, sets=JudgeRequest(job="j", workers=2).overrides)
    assert (spec.executor.kind, spec.executor.workers, spec.executor.num_gpus, spec.executor.address) == ("ray", 2, 0.5, "auto")
    assert (
        load_job(ray_job, sets=JudgeRequest(job="j", executor="local").overrides).executor.model_dump()
        == load_job(write_job(tmp_path, "p")).executor.model_dump()
    )
    assert load_job(write_job(tmp_path, "p"), sets=JudgeRequest(job="j", executor="ray", workers=3).overrides).executor.workers == 3
    with pytest.raises(QrelkitError, match="--executor 'dask': choose local or ray"):
        JudgeRequest(job="j", executor="dask")


def test_without_the_extra_the_error_names_it(tmp_path, monkeypatch):
    write_collection(tmp_path)
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` sees when the extra is not installed
    spec = load_job(write_job(tmp_path, "noray", executor={"kind": "ray"}))
    with pytest.raises(QrelkitError, match=r"pip install 'qrelkit\[ray\]'"):
        run_job(spec, progress=False)


# -- on a local Ray --------------------------------------------------------------------------------


def test_ray_and_local_executors_give_identical_judgments(local_ray, collection, tmp_path):
    folder, pairs, local = collection
    spec = load_job(write_job(folder, "ray-same", executor={"kind": "ray", "workers": 2}))
    report = run_job(spec, progress=False)
    assert report.judge_run_id == run_job(load_job(folder / "local.yaml"), dry_run=True).judge_run_id  # where it ran is no identity
    assert report.judged == len(pairs) == 3002 and report.statuses == expected_statuses(pairs)
    assert judgments(spec.database) == local
    topics = dict(line.split("\t") for line in (folder / "topics.tsv").read_text().splitlines())
    docs = {d["docid"]: d["text"] for d in map(json.loads, (folder / "docs.jsonl").read_text().splitlines())}
    assert local[("q3", "d111")][1] == pytest.approx(overlap(topics["q3"], docs["d111"]))  # a value computed by hand
    assert local[("q0", "d7")][:2] == ("model_error", None) and "backend crashed on d7" in local[("q0", "d7")][3]
    assert attempts(spec.database) == {1: len(pairs)}


def test_a_worker_sigkilled_mid_job_still_ends_with_one_judgment_per_pair(local_ray, collection):
    from qrelkit.jobs.ray_executor import RayExecutor

    folder, pairs, local = collection
    spec = load_job(write_job(folder, "ray-kill", executor={"kind": "ray", "workers": 2}, delay_seconds=0.005))
    executor = RayExecutor(spec.executor)
    killed: list[int] = []

    def kill_a_worker(judged: int) -> None:
        if not killed and judged >= 200:
            killed.append(executor.worker_pids()[0])  # the pid its actor reported through Ray
            os.kill(killed[0], signal.SIGKILL)

    report = run_job(spec, progress=False, executor=executor, on_flush=kill_a_worker)
    assert killed and not alive(killed[0])
    assert executor.deaths == 1 and executor.retried_shards >= 1  # its in-flight shards went to another worker
    assert report.judged == len(pairs) and not report.interrupted  # no shard was written twice
    assert judgments(spec.database) == local
    # the pairs of the shards lost with the worker (at most 16 each) were judged on a second try, and say so
    tries = attempts(spec.database)
    assert set(tries) == {1, 2} and 0 < tries[2] <= 16 * executor.retried_shards


def test_the_driver_sigkilled_and_run_again_ends_the_same(local_ray, collection):
    folder, pairs, local = collection
    job = write_job(folder, "ray-driver", delay_seconds=0.005)
    command = [sys.executable, "-m", "qrelkit.cli", "judge", str(job), "--executor", "ray", "--workers", "2", "--allow-import"]
    command += ["--set", f"executor.address={local_ray}", "--set", f"executor.runtime_env={{env_vars: {{PYTHONPATH: {TESTS}}}}}"]
    env = {**os.environ, "PYTHONPATH": str(TESTS), "QRELKIT_PROGRESS_SECONDS": "0"}
    driver = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    assert driver.stderr is not None
    done, lines = 0, []
    for line in driver.stderr:  # `judging ray-driver.yaml: 1200/3002 pairs (...)`, one line per batch
        lines.append(line)
        if line.startswith("judging ray-driver.yaml:"):
            done = int(line.split(":")[1].split("/")[0])
            if done >= 600:
                break
    driver.kill()
    assert driver.wait() == -signal.SIGKILL and done >= 600, "".join(lines[-20:])
    saved = judgments(folder / "ray-driver.duckdb")
    assert 0 < len(saved) < len(pairs)  # killed mid-job, with what it had flushed kept
    spec = load_job(job, sets=JudgeRequest(job="j", executor="ray", workers=2).overrides)
    report = run_job(spec, progress=False)  # the fixture's Ray again, as a re-run on the cluster would
    assert report.already_ok + report.already_failed == len(saved) and report.judged == len(pairs) - len(saved)
    assert judgments(spec.database) == local


def test_a_fatal_judge_error_stops_every_worker_and_the_job(local_ray, collection):
    from qrelkit.jobs.ray_executor import RayExecutor

    folder, pairs, local = collection
    spec = load_job(write_job(folder, "ray-fatal", executor={"kind": "ray", "workers": 2}, fatal_docids=["d520"], delay_seconds=0.01))
    executor = RayExecutor(spec.executor)
    with pytest.raises(FatalJudgeError, match="the key was revoked while judging d520"):
        run_job(spec, progress=False, executor=executor)
    pids = [w.info.pid for w in executor.workers if w.info is not None]
    assert pids and wait_gone(pids) == []  # no worker judges on after the job stopped
    assert local_ray_cpus_free(2)  # and Ray has every worker's CPU back, one still starting included
    saved = judgments(spec.database)
    assert 0 < len(saved) < len(pairs) and all(local[key] == value for key, value in saved.items())
    assert not any(docid == "d520" for _, docid in saved)
    # the command line exits 3 with the judge's message and no traceback
    command = [sys.executable, "-m", "qrelkit.cli", "judge", str(folder / "ray-fatal.yaml"), "--quiet", "--workers", "1", "--allow-import"]
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    command += ["--set", f"executor.address={local_ray}", "--set", f"executor.runtime_env={{env_vars: {{PYTHONPATH: {TESTS}}}}}"]
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    assert result.returncode == 3 and "the key was revoked while judging d520" in result.stderr and "Traceback" not in result.stderr


def test_embeddings_computed_in_workers_are_written_by_the_driver(local_ray, tmp_path):
    pytest.importorskip("onnxruntime")
    (tmp_path / "topics.tsv").write_text("q1\tgoldfish grow big\nq2\twifi versus bluetooth\n")
    docs = {"d1": "goldfish grow big in ponds", "d2": "cats sleep", "d3": "bluetooth pairs devices", "d4": "wifi radios"}
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"docid": d, "text": t}) + "\n" for d, t in docs.items()))
    (tmp_path / "pairs.tsv").write_text("q1\td1\nq1\td2\nq2\td3\nq2\td4\nq2\td1\n")
    base = {
        "collection": {"topics": "topics.tsv", "documents": "docs.jsonl"},
        "pool": {"pairs": "pairs.tsv"},
        "judge": {"name": "embedding", "options": {"backend": "onnx"}},
        "batch_size": 2,
    }
    (tmp_path / "local.yaml").write_text(yaml.safe_dump({**base, "database": "local.duckdb"}))
    (tmp_path / "ray.yaml").write_text(yaml.safe_dump({**base, "database": "ray.duckdb", "executor": {"kind": "ray", "workers": 1}}))
    run_job(load_job(tmp_path / "local.yaml"), progress=False)
    report = run_job(load_job(tmp_path / "ray.yaml"), progress=False)
    assert report.statuses == {"ok": 5}

    def vectors(database: Path) -> dict[tuple[str, str], np.ndarray]:
        with Store(database, read_only=True) as store:
            rows = store.con.execute("SELECT item_kind, item_id, vector FROM embeddings").fetchall()
        return {(kind, item): np.asarray(vector) for kind, item, vector in rows}

    local, remote = vectors(tmp_path / "local.duckdb"), vectors(tmp_path / "ray.duckdb")
    assert sorted(remote) == sorted(local) == sorted([("topic", "q1"), ("topic", "q2")] + [("document", d) for d in docs])
    for key, vector in local.items():  # int8 activations are quantised per encoder batch: equal to ~1e-2, not bit for bit
        assert float(np.dot(vector, remote[key])) > 0.999
    local_scores, ray_scores = judgments(tmp_path / "local.duckdb"), judgments(tmp_path / "ray.duckdb")
    for key, row in local_scores.items():
        assert ray_scores[key][1] == pytest.approx(row[1], abs=0.01)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc)."""
    found, pending = [], [pid]
    while pending:
        for task in Path(f"/proc/{pending.pop()}/task").glob("*/children"):
            try:
                kids = [int(k) for k in task.read_text().split()]
            except OSError:
                continue
            found += kids
            pending += kids
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the local Ray's reaper reads /proc")
def test_a_sigkilled_driver_leaves_no_ray_of_its_own_running(tmp_path):
    """A driver that started its own local Ray (no address) and is SIGKILLed: Ray's fate-sharing ends
    the node's processes, but the agents the raylet started lived on ~90 s; now nothing is left."""
    pytest.importorskip("ray")
    write_collection(tmp_path)
    job = write_job(tmp_path, "own-ray", executor={"kind": "ray", "workers": 1}, delay_seconds=0.01)
    env = {**os.environ, "PYTHONPATH": str(TESTS), "QRELKIT_PROGRESS_SECONDS": "0", "RAY_ADDRESS": "local"}  # a Ray of its own
    command = [sys.executable, "-m", "qrelkit.cli", "judge", str(job), "--allow-import"]
    driver = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    assert driver.stderr is not None
    lines = []
    for line in driver.stderr:  # `judging own-ray.yaml: 64/3002 pairs (...)`: the Ray and its agents are up, a worker judges
        lines.append(line)
        if line.startswith("judging own-ray.yaml:") and int(line.split(":")[1].split("/")[0]) >= 64:
            break
    started = descendants(driver.pid)
    assert len(started) >= 4, "".join(lines[-20:])  # GCS, raylet, its agents, the worker (and the reaper)
    driver.kill()
    assert driver.wait() == -signal.SIGKILL
    assert wait_gone(started, seconds=20.0) == []
