"""The CPU path's worker processes (qrelkit.io.workers.processes, qrelkit.embed.decode_pool): results in
input order, a bounded number ahead, errors in their place, and the workers stopped on Ctrl-C
and when one of them dies, with a clear error instead of a hang."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the clip extra is not installed (pip install 'qrelkit[clip]')")
open_clip = pytest.importorskip("open_clip", reason="the clip extra is not installed (pip install 'qrelkit[clip]')")
import process_helpers  # noqa: E402
from conftest import tiny_open_clip  # noqa: E402
from image_files import photo_jpegs  # noqa: E402
from process_helpers import fails_on_three, no_children_left, slow_echo  # noqa: E402

import qrelkit.embed.image_batches as image_batches  # noqa: E402
from qrelkit.embed.clip import ClipSource, OpenClip  # noqa: E402
from qrelkit.errors import FatalJobError  # noqa: E402
from qrelkit.io import Document, Topic  # noqa: E402
from qrelkit.io.workers.processes import ProcessMap, WorkerProcessDied  # noqa: E402
from qrelkit.judges import FatalJudgeError, Pair, create_judge  # noqa: E402

TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clip")
    checkpoint = tiny_open_clip(folder, "TinyClipProcesses", embed_dim=16)
    return {"model": "TinyClipProcesses", "checkpoint": str(checkpoint), "model_config_file": str(folder / "TinyClipProcesses.json")}


@pytest.fixture(scope="module")
def many_jpegs(tmp_path_factory):
    """More images than PROCESS_MIN_IMAGES, so the CPU path starts its processes."""
    folder = tmp_path_factory.mktemp("many")
    return photo_jpegs(folder, image_batches.PROCESS_MIN_IMAGES + 16, low=60, high=200)


# -- the pool itself ---------------------------------------------------------------------------------


def test_results_come_in_input_order_with_a_bounded_number_of_tasks_ahead():
    pool = ProcessMap(2, what="test", option="workers")
    pulled = []

    def items():
        for value in range(40):
            pulled.append(value)
            yield value, 0.002 * (value % 4)  # finish out of order

    try:
        taken = []
        for value in pool.map(slow_echo, items(), window=5):
            taken.append(value)
            assert len(pulled) <= len(taken) + 5  # the window, refilled as each result is taken
        assert taken == list(range(40))
    finally:
        pool.close()
    assert no_children_left()


def test_an_error_in_a_task_reaches_the_caller_and_the_pool_goes_on():
    pool = ProcessMap(2, what="test", option="workers")
    try:
        with pytest.raises(ValueError, match="three is refused"):
            list(pool.map(fails_on_three, range(6), window=3))
        assert list(pool.map(fails_on_three, [0, 1, 2], window=3)) == [0, 1, 2]
    finally:
        pool.close()
    assert no_children_left()


def test_a_worker_killed_midway_is_a_failure_of_the_machine_not_a_hang():
    pool = ProcessMap(2, what="decoding images", option="decode_workers")
    outcome: list[BaseException | None] = []
    started = threading.Event()

    def consume() -> None:
        try:
            for _ in pool.map(slow_echo, ((value, 0.05) for value in range(400)), window=4):
                started.set()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    consumer = threading.Thread(target=consume)
    consumer.start()
    assert started.wait(timeout=60), "no result from the workers"
    os.kill(pool.processes[0].pid, signal.SIGKILL)
    consumer.join(timeout=60)
    assert not consumer.is_alive() and outcome and isinstance(outcome[0], WorkerProcessDied), outcome
    assert isinstance(outcome[0], FatalJobError)
    assert "a worker process decoding images ended without finishing (killed, or out of memory)" in str(outcome[0])
    assert "fewer processes than decode_workers=2" in str(outcome[0])
    assert no_children_left()


# Ctrl-C as a terminal's Python has it: a shell without job control (a CI runner's `cmd &`) starts its
# background commands with SIGINT ignored, which every child inherits, and Python then installs no
# KeyboardInterrupt; the interrupted process here sets the handler Python gives a terminal itself.
CTRL_C_SCRIPT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {tests!r})
from process_helpers import no_children_left, slow_echo
from qrelkit.io.workers.processes import ProcessMap

pool = ProcessMap(2, what="test", option="workers")
try:
    for i, value in enumerate(pool.map(slow_echo, ((i, 0.1) for i in range(10_000)), window=4)):
        if i == 2:
            print("workers", *[p.pid for p in pool.processes], flush=True)
except KeyboardInterrupt:  # raised in the pool's wait (it stops the workers) or in the caller's own work
    pool.close()  # what the judge's close() does when the runner stops
    print("interrupted; children left:", not no_children_left(), flush=True)
    sys.exit(130)
"""


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie (an orphan may wait for a reaper)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_ctrl_c_stops_the_workers_and_reaches_the_caller(tmp_path):
    """Ctrl-C in a terminal reaches the whole process group: the workers ignore it (no traceback
    from them), the parent stops them (at once when it was waiting for them, else when the judge is
    closed) and goes on with its KeyboardInterrupt (the runner then saves what was judged)."""
    script = tmp_path / "interrupted.py"
    script.write_text(CTRL_C_SCRIPT.format(tests=str(TESTS)))
    process = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("workers"), line + process.stderr.read() if process.stderr else line
    workers = [int(pid) for pid in line.split()[1:]]
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "interrupted; children left: False" in out, err
    assert "Traceback" not in err  # not in the parent, not in the workers
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in workers)


# -- the CPU path of the CLIP pipeline ------------------------------------------------------------------


def open_clip_model(tiny_clip, workers: int) -> OpenClip:
    source = ClipSource(tiny_clip["model"], checkpoint=tiny_clip["checkpoint"], model_config=tiny_clip["model_config_file"])
    return OpenClip(source, device="cpu", batch_size=8, decode_workers=workers, image_decode="cpu")


def test_processes_give_the_vectors_of_one_thread_in_input_order_errors_in_their_place(tiny_clip, many_jpegs, monkeypatch, tmp_path):
    """Decoding in two processes, slowed so that tasks finish out of order, against one thread:
    the same vectors row for row, and a broken and a missing file failing at their own index."""
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(many_jpegs[0].read_bytes()[:200])
    images = [str(p) for p in many_jpegs]
    images[5], images[37] = str(broken), str(tmp_path / "missing.jpg")
    one = open_clip_model(tiny_clip, 1)
    reference = one.encode_images(images)
    monkeypatch.setattr(image_batches, "preprocess_chunk", process_helpers.slow_preprocess_chunk)
    two = open_clip_model(tiny_clip, 2)
    try:
        encoded = two.encode_images(images)
        assert two.images.processes is not None and len(two.images.processes.processes) == 2  # it did run in processes
    finally:
        two.close()
    assert set(encoded.errors) == {5, 37} and encoded.errors == reference.errors
    assert "broken.jpg is corrupt or truncated" in encoded.errors[5] and "missing.jpg not found" in encoded.errors[37]
    rows = [i for i in range(len(images)) if i not in (5, 37)]
    np.testing.assert_array_equal(encoded.vectors[rows], reference.vectors[rows])
    assert no_children_left()


def test_a_small_call_is_decoded_in_this_process(tiny_clip, many_jpegs):
    """Starting processes (~0.3 s) does not pay for a handful of images: threads decode them."""
    clip = open_clip_model(tiny_clip, 2)
    try:
        encoded = clip.encode_images([str(p) for p in many_jpegs[:3]])
        assert encoded.errors == {} and clip.images.processes is None and not multiprocessing.active_children()
    finally:
        clip.close()


def judge_pairs(paths):
    topics = [Topic("t1", "a goldfish"), Topic("t2", "a tower")]
    return [Pair(topic, Document(path.stem, image=path.name, image_root=str(path.parent))) for path in paths for topic in topics]


def test_a_decoding_process_killed_midway_stops_the_judge_with_a_clear_error(tiny_clip, many_jpegs, monkeypatch):
    monkeypatch.setattr(image_batches, "preprocess_chunk", process_helpers.slow_preprocess_chunk)
    judge = create_judge("clipscore", {**tiny_clip, "device": "cpu", "image_decode": "cpu", "decode_workers": 2}, None)
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            judge.judge(judge_pairs(many_jpegs))
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 60
    while not multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # the workers have started their first tasks
    os.kill(multiprocessing.active_children()[0].pid, signal.SIGKILL)
    worker.join(timeout=60)
    judge.close()
    assert outcome and isinstance(outcome[0], FatalJudgeError), outcome  # the runner stops the job: exit 3, never a pair's status
    assert "CLIP model TinyClipProcesses/tiny.pt: a worker process decoding images ended without finishing" in str(outcome[0])
    assert no_children_left()


def test_ctrl_c_while_the_judge_decodes_in_processes_leaves_no_process(tiny_clip, many_jpegs, monkeypatch):
    monkeypatch.setattr(image_batches, "preprocess_chunk", process_helpers.slow_preprocess_chunk)
    restore = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (see CTRL_C_SCRIPT)
    judge = create_judge("clipscore", {**tiny_clip, "device": "cpu", "image_decode": "cpu", "decode_workers": 2}, None)

    def interrupt_when_decoding() -> None:
        deadline = time.monotonic() + 60
        while not multiprocessing.active_children() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C does to this process

    interrupter = threading.Thread(target=interrupt_when_decoding)
    interrupter.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            judge.judge(judge_pairs(many_jpegs))
    finally:
        interrupter.join()
        judge.close()  # what the runner does on the way out
        signal.signal(signal.SIGINT, restore)
    assert no_children_left()
