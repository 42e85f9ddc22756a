"""vLLM's offline batch runner (`run_batch`) as a Batch API on this machine: the `vllm` judge's
`mode: batch`.

vLLM's runner reads the very request files qrelkit writes for OpenAI's Batch API (one
``{"custom_id", "method", "url": "/v1/chat/completions", "body"}`` per line) and writes output lines
of the same shape as OpenAI's. This module gives the job's batch driver (`qrelkit.jobs.batch_api`)
the client it expects, backed by a folder and a process instead of `/files` and `/batches`:

* ``upload``: the request file is linked (or copied) into ``files/`` under its own name;
* ``create``: a batch is a state file ``batches/<id>.json`` (written whole before anything starts)
  and a runner, ``python -m qrelkit.judges.vllm_batch``, started in a session of its own so that it
  outlives the command that started it (as a remote batch does). The runner runs vLLM's
  ``run_batch`` on the input, writes the output to ``out/<id>.jsonl`` once whole, and records the
  outcome in the state file;
* ``retrieve``: the state file; a batch whose runner is gone without an outcome (killed, the machine
  restarted) is `failed`, and its pairs go back to pending as after any failed batch;
* ``find_files``/``find_batches``: what the folder holds, so a crash between two steps is
  reconciled as it is against the API.

A database and its folder are data: checking and collecting (`qrelkit batches`) only read the state
and output files; a runner is started only by a job, from the job's own options; a cancel stops a
process only when it is this folder's runner.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from qrelkit.io.files import write_atomically
from qrelkit.judges.batch_api import BatchApiError, BatchInfo
from qrelkit.judges.http import ErrorVerdict

RUNNER_MODULE = "qrelkit.judges.vllm_batch"
ENDPOINT = "vLLM's run_batch on this machine"  # what the database shows as the batches' endpoint
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")
OUTPUT_SUFFIX = "-output"
LOG_TAIL = 4000


def _error(message: str, status: int = 404) -> BatchApiError:
    return BatchApiError(f"{ENDPOINT}: {message}", ErrorVerdict("fail", message, status=status))


def _name(value: str, what: str) -> str:
    if not isinstance(value, str) or not SAFE_NAME.fullmatch(value) or ".." in value:
        raise _error(f"{what} {value!r} is not one this folder writes")
    return value


def _write_json(path: Path, data: dict[str, Any]) -> None:
    write_atomically(path, lambda temporary: temporary.write_text(json.dumps(data), encoding="utf-8"))


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _runner_alive(pid: Any, state: Path) -> bool:
    """Whether ``pid`` is this state file's runner (a recycled pid, or any other process, is not)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        try:  # no /proc (macOS): the pid exists, taken on trust
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return RUNNER_MODULE.encode() in arguments and str(state.resolve()).encode() in arguments


class LocalBatchClient:
    """The Batch API client's methods (`qrelkit.judges.batch_api.BatchClient`) over ``folder``.
    ``command(input, output)``: vLLM's run_batch command line for a batch (None: this client
    checks, collects and cancels, and creates nothing)."""

    base_url = ENDPOINT

    def __init__(self, folder: Path, command: Callable[[Path, Path], list[str]] | None = None):
        self.folder, self._command = Path(folder), command

    def _path(self, kind: str, name: str) -> Path:
        return self.folder / kind / name

    def _state_path(self, batch_id: str) -> Path:
        return self._path("batches", _name(batch_id, "batch") + ".json")

    # -- files -------------------------------------------------------------------------------

    def upload(self, path: Path, filename: str) -> str:
        target = self._path("files", _name(filename, "file"))
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
        try:
            os.link(path, temporary)  # the request file is not changed after it is written: share it
        except OSError:
            shutil.copyfile(path, temporary)
        os.replace(temporary, target)
        return filename

    def find_files(self, filenames: Iterable[str]) -> dict[str, str]:
        return {name: name for name in filenames if SAFE_NAME.fullmatch(name) and self._path("files", name).is_file()}

    def download(self, file_id: str) -> Iterator[bytes]:
        batch_id = _name(file_id, "file").removesuffix(OUTPUT_SUFFIX)
        path = self._path("out", batch_id + ".jsonl")
        try:
            with open(path, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    yield chunk
        except OSError as exc:
            raise _error(f"the output of batch {batch_id} cannot be read ({exc.strerror or exc})") from None

    # -- batches -----------------------------------------------------------------------------

    def create(self, input_file_id: str, metadata: dict[str, str]) -> BatchInfo:
        if self._command is None:
            raise _error("this command starts no batch (run the job)", status=400)
        source = self._path("files", _name(input_file_id, "file"))
        if not source.is_file():
            raise _error(f"no uploaded file {input_file_id}", status=400)
        batch_id = f"vllm-{secrets.token_hex(8)}"
        with open(source, "rb") as handle:
            total = sum(1 for line in handle if line.strip())
        state_path = self._state_path(batch_id)
        state_path.parent.mkdir(parents=True, exist_ok=True)
        (self.folder / "out").mkdir(exist_ok=True)
        state: dict[str, Any] = {"id": batch_id, "status": "in_progress", "input_file_id": input_file_id, "metadata": dict(metadata)}
        state |= {"created_at": int(time.time()), "total": total, "pid": None}
        _write_json(state_path, state)  # before the runner: a crash now leaves a batch that reads as failed
        output = self._path("out", batch_id + ".jsonl")
        log = self._path("out", batch_id + ".log")
        # absolute paths: a later check finds the runner by its state file, from whatever folder it runs in
        state_path, source, output, log = (p.resolve() for p in (state_path, source, output, log))
        runner = [sys.executable, "-m", RUNNER_MODULE, *(str(p) for p in (state_path, source, output, log)), "--"]
        quiet = subprocess.DEVNULL
        process = subprocess.Popen(
            [*runner, *self._command(source, output)], stdin=quiet, stdout=quiet, stderr=quiet, start_new_session=True
        )
        state["pid"] = process.pid
        current = _read_json(state_path) or {}
        if current.get("status") == "in_progress":  # a very fast runner may have written its outcome already
            _write_json(state_path, {**current, "pid": process.pid})
        return self._info(state)

    def find_batches(self, submission_ids: Iterable[str]) -> dict[str, BatchInfo]:
        wanted, found = set(submission_ids), dict[str, BatchInfo]()
        folder = self.folder / "batches"
        if not wanted or not folder.is_dir():
            return found
        for path in sorted(p for p in folder.glob("*.json") if not p.name.startswith(".")):  # not a write under way
            state = _read_json(path)
            submission = ((state or {}).get("metadata") or {}).get("qrelkit_submission_id")
            if state and submission in wanted and SAFE_NAME.fullmatch(str(state.get("id"))):
                found[submission] = self.retrieve(str(state["id"]))
        return found

    def retrieve(self, batch_id: str) -> BatchInfo:
        path = self._state_path(batch_id)
        state = _read_json(path)
        if state is None:
            raise _error(f"no batch {batch_id} in {self.folder}")
        if state.get("status") == "in_progress" and not _runner_alive(state.get("pid"), path):
            time.sleep(0.2)  # the runner writes its outcome as it ends: read once more before calling it gone
            state = _read_json(path) or state
            if state.get("status") == "in_progress" and not _runner_alive(state.get("pid"), path):
                state |= {"status": "failed", "errors": ["the runner stopped before it finished (killed, or the machine restarted)"]}
                _write_json(path, state)
        return self._info(state)

    def cancel(self, batch_id: str) -> BatchInfo:
        path = self._state_path(batch_id)
        state = _read_json(path)
        if state is None:
            raise _error(f"no batch {batch_id} in {self.folder}")
        if state.get("status") == "in_progress":
            pid = state.get("pid")
            if isinstance(pid, int) and _runner_alive(pid, path):
                try:
                    os.killpg(pid, signal.SIGTERM)  # the runner and vLLM under it: the session it leads
                except OSError:
                    pass
            state = {**(_read_json(path) or state), "status": "cancelled"}
            _write_json(path, state)
        return self._info(state)

    def close(self) -> None:
        pass

    def _info(self, state: dict[str, Any]) -> BatchInfo:
        done = state.get("status") == "completed"

        def count(key: str) -> int:
            value = state.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        errors = state.get("errors")
        return BatchInfo(
            str(state.get("id")),
            str(state.get("status") or "unknown"),
            input_file_id=str(state.get("input_file_id") or ""),
            output_file_id=f"{state.get('id')}{OUTPUT_SUFFIX}" if done else None,
            total=count("total"),
            completed=count("completed"),
            failed=count("failed"),
            created_at=count("created_at"),
            metadata={str(k): str(v) for k, v in (state.get("metadata") or {}).items()},
            errors=tuple(str(e) for e in errors) if isinstance(errors, list) else (),
        )


# -- the runner: python -m qrelkit.judges.vllm_batch STATE INPUT OUTPUT LOG -- COMMAND... ---------


def _last_reason(log: Path) -> str:
    """vLLM's own last error line from the runner's log."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL * 4 :]
    except OSError:
        return "no log"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.search(r"(Error|Exception|error:)", line):
            return line[-500:]
    return (lines[-1] if lines else "no output")[-500:]


def run(state_path: Path, source: Path, output: Path, log: Path, command: list[str]) -> int:
    partial = output.with_name(output.name + ".partial")
    command = [part if part != str(output) else str(partial) for part in command]
    with open(log, "wb") as handle:
        returncode = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT).returncode
    state = _read_json(state_path) or {}
    if state.get("status") != "in_progress":  # cancelled meanwhile: nothing of it is read
        partial.unlink(missing_ok=True)
        source.unlink(missing_ok=True)
        return returncode
    if returncode == 0 and partial.is_file():
        completed = failed = 0
        with open(partial, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    answered = (json.loads(line).get("response") or {}).get("status_code") == 200
                except (ValueError, AttributeError):
                    answered = False
                completed, failed = completed + answered, failed + (not answered)
        os.replace(partial, output)
        state |= {"status": "completed", "completed": completed, "failed": failed}
    else:
        partial.unlink(missing_ok=True)
        state |= {"status": "failed", "errors": [f"vLLM's run_batch exited with {returncode}: {_last_reason(log)}"]}
    _write_json(state_path, state)
    source.unlink(missing_ok=True)  # answered: the runner's copy of the requests is not needed again
    return returncode


def main(argv: list[str]) -> int:
    if len(argv) < 6 or argv[4] != "--":
        print(f"usage: python -m {RUNNER_MODULE} STATE INPUT OUTPUT LOG -- COMMAND...", file=sys.stderr)
        return 2
    state, source, output, log = (Path(a) for a in argv[:4])
    return run(state, source, output, log, argv[5:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
