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
from typing import Any, BinaryIO

from qrelkit.io.files import open_owned, put_in_place, read_capped, read_owned, write_atomically
from qrelkit.io.folders import FolderRefused, inside, make_folders
from qrelkit.io.limits import iter_capped_lines, limits
from qrelkit.judges.batch_api import META_SUBMISSION, BatchApiError, BatchInfo
from qrelkit.judges.http import ErrorVerdict

RUNNER_MODULE = "qrelkit.judges.vllm_batch"
ENDPOINT = "vLLM's run_batch on this machine"  # what the database shows as the batches' endpoint
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")
OUTPUT_SUFFIX = "-output"
LOG_TAIL = 4000
MAX_STATE_BYTES = 1 << 20  # a state file qrelkit writes holds a few hundred bytes
MAX_PID = 1 << 22  # Linux's highest possible pid (PID_MAX_LIMIT); a state naming a larger one is not a runner's
MAX_COUNT = 1 << 53  # counts and times from a state file: anything larger is not one qrelkit wrote


def _error(message: str, status: int = 404) -> BatchApiError:
    return BatchApiError(f"{ENDPOINT}: {message}", ErrorVerdict("fail", message, status=status))


def _name(value: str, what: str) -> str:
    if not isinstance(value, str) or not SAFE_NAME.fullmatch(value) or ".." in value:
        raise _error(f"{what} {value!r} is not one this folder writes")
    return value


def _write_json(path: Path, data: dict[str, Any], root: Path) -> None:
    write_atomically(path, lambda temporary: temporary.write_text(json.dumps(data), encoding="utf-8"), root=root)


def _read_json(path: Path) -> dict[str, Any] | None:
    """A state file (never through a link, at most `MAX_STATE_BYTES`: FolderRefused); None when it is
    not there or holds no JSON object."""
    raw = read_owned(path, MAX_STATE_BYTES)
    try:
        data = json.loads(raw) if raw is not None else None
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _pid(value: Any) -> int | None:
    """A runner's pid as a state file records it; None for anything no process can have."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_PID else None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_COUNT else 0


def _absolute(path: Path) -> Path:
    """``path`` from the root of the machine, its last part not followed (it is checked to be no link)."""
    return path.parent.resolve() / path.name


def _runner_alive(pid: Any, state: Path) -> bool:
    """Whether ``pid`` is this state file's runner (a recycled pid, or any other process, is not).
    ``state``: the state file's absolute path (`_absolute`), as the runner was given it."""
    pid = _pid(pid)
    if pid is None:
        return False
    try:
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        try:  # no /proc (macOS): the pid exists, taken on trust
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return RUNNER_MODULE.encode() in arguments and str(state).encode() in arguments


class LocalBatchClient:
    """The Batch API client's methods (`qrelkit.judges.batch_api.BatchClient`) over ``folder``
    (`<db>.batches/vllm`: qrelkit's own, so no link in it or in `<db>.batches` is followed).
    ``command(input, output)``: vLLM's run_batch command line for a batch (None: this client
    checks, collects and cancels, and creates nothing)."""

    base_url = ENDPOINT

    def __init__(self, folder: Path, command: Callable[[Path, Path], list[str]] | None = None):
        self.folder, self._command = Path(folder), command
        self._root = self.folder.parent  # `<db>.batches`: the folder qrelkit owns beside the database

    def _path(self, *parts: str) -> Path:
        """``folder/kind[/name]``, none of its parts a link (FolderRefused)."""
        return inside(self._root, "/".join([self.folder.name, *parts]), f"the batch folder {self.folder}", owned=True)

    def _made(self, kind: str) -> Path:
        return make_folders(self._root, f"{self.folder.name}/{kind}", f"the batch folder {self.folder}", owned=True)

    def _state_path(self, batch_id: str) -> Path:
        return self._path("batches", _name(batch_id, "batch") + ".json")

    def _state(self, batch_id: str) -> tuple[Path, dict[str, Any]]:
        """A batch's state file and what it holds; an error when there is no such batch."""
        path = self._state_path(batch_id)
        state = _read_json(path)
        if state is None:
            raise _error(f"no batch {batch_id} in {self.folder}")
        return path, state

    # -- files -------------------------------------------------------------------------------

    def upload(self, path: Path, filename: str) -> str:
        target = self._path("files", _name(filename, "file"))
        self._made("files")
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(8)}.partial")
        try:
            os.link(path, temporary)  # the request file is not changed after it is written: share it
        except OSError:
            write_atomically(target, lambda copy: shutil.copyfile(path, copy), root=self._root)
            return filename
        try:
            put_in_place(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)
        return filename

    def find_files(self, filenames: Iterable[str]) -> dict[str, str]:
        return {name: name for name in filenames if SAFE_NAME.fullmatch(name) and ".." not in name and self._uploaded(name)}

    def _uploaded(self, name: str) -> bool:
        try:
            path = self._path("files", name)
        except FolderRefused:  # a link there is no file this folder holds
            return False
        try:
            return path.is_file() and not path.is_symlink()  # a regular file, not a link to one
        except OSError:
            return False

    def download(self, file_id: str) -> Iterator[bytes]:
        batch_id = _name(file_id, "file").removesuffix(OUTPUT_SUFFIX)
        path = self._path("out", batch_id + ".jsonl")
        limit = limits().max_input_bytes
        handle = open_owned(path, limit)
        if handle is None:
            raise _error(f"the output of batch {batch_id} cannot be read (it is not in {self.folder / 'out'})")
        with handle:
            yield from read_capped(handle, limit, path)

    # -- batches -----------------------------------------------------------------------------

    def create(self, input_file_id: str, metadata: dict[str, str]) -> BatchInfo:
        if self._command is None:
            raise _error("this command starts no batch (run the job)", status=400)
        source = self._path("files", _name(input_file_id, "file"))
        handle = open_owned(source, limits().max_input_bytes)
        if handle is None:
            raise _error(f"no uploaded file {input_file_id}", status=400)
        with handle:
            total = sum(1 for line in iter_capped_lines(handle, limits().max_input_bytes) if line is None or line.strip())
        batch_id = f"vllm-{secrets.token_hex(8)}"
        state_path = self._state_path(batch_id)
        self._made("batches")
        self._made("out")
        state: dict[str, Any] = {"id": batch_id, "status": "in_progress", "input_file_id": input_file_id, "metadata": dict(metadata)}
        state |= {"created_at": int(time.time()), "total": total, "pid": None}
        _write_json(state_path, state, self._root)  # before the runner: a crash now leaves a batch that reads as failed
        output = self._path("out", batch_id + ".jsonl")
        log = self._path("out", batch_id + ".log")
        # absolute paths: a later check finds the runner by its state file, from whatever folder it runs in
        given = [_absolute(p) for p in (state_path, source, output, log)]
        runner = [sys.executable, "-m", RUNNER_MODULE, *map(str, given), "--"]
        quiet = subprocess.DEVNULL
        process = subprocess.Popen(
            [*runner, *self._command(given[1], given[2])], stdin=quiet, stdout=quiet, stderr=quiet, start_new_session=True
        )
        state["pid"] = process.pid
        current = _read_json(state_path) or {}
        if current.get("status") == "in_progress":  # a very fast runner may have written its outcome already
            _write_json(state_path, {**current, "pid": process.pid}, self._root)
        return self._info(state)

    def find_batches(self, submission_ids: Iterable[str]) -> dict[str, BatchInfo]:
        wanted, found = set(submission_ids), dict[str, BatchInfo]()
        folder = self._path("batches")
        if not wanted or not folder.is_dir():
            return found
        for path in sorted(p for p in folder.glob("*.json") if not p.name.startswith(".")):  # not a write under way
            try:
                state = _read_json(path)
            except FolderRefused:
                continue  # not a state file qrelkit wrote (a link, a FIFO): no batch of this folder
            metadata = (state or {}).get("metadata")
            submission = metadata.get(META_SUBMISSION) if isinstance(metadata, dict) else None
            if state and submission in wanted and SAFE_NAME.fullmatch(str(state.get("id"))):
                found[submission] = self.retrieve(str(state["id"]))
        return found

    def retrieve(self, batch_id: str) -> BatchInfo:
        path, state = self._state(batch_id)
        if state.get("status") == "in_progress" and not _runner_alive(state.get("pid"), _absolute(path)):
            time.sleep(0.2)  # the runner writes its outcome as it ends: read once more before calling it gone
            state = _read_json(path) or state
            if state.get("status") == "in_progress" and not _runner_alive(state.get("pid"), _absolute(path)):
                state |= {"status": "failed", "errors": ["the runner stopped before it finished (killed, or the machine restarted)"]}
                _write_json(path, state, self._root)
        return self._info(state)

    def cancel(self, batch_id: str) -> BatchInfo:
        path, state = self._state(batch_id)
        if state.get("status") == "in_progress":
            pid = _pid(state.get("pid"))
            if pid is not None and _runner_alive(pid, _absolute(path)):
                try:
                    os.killpg(pid, signal.SIGTERM)  # the runner and vLLM under it: the session it leads
                except OSError:
                    pass
            state = {**(_read_json(path) or state), "status": "cancelled"}
            _write_json(path, state, self._root)
        return self._info(state)

    def close(self) -> None:
        pass

    def _info(self, state: dict[str, Any]) -> BatchInfo:
        done = state.get("status") == "completed"
        errors, metadata = state.get("errors"), state.get("metadata")
        return BatchInfo(
            str(state.get("id")),
            str(state.get("status") or "unknown"),
            input_file_id=str(state.get("input_file_id") or ""),
            output_file_id=f"{state.get('id')}{OUTPUT_SUFFIX}" if done else None,
            total=_count(state.get("total")),
            completed=_count(state.get("completed")),
            failed=_count(state.get("failed")),
            created_at=_count(state.get("created_at")),
            metadata={str(k): str(v) for k, v in metadata.items()} if isinstance(metadata, dict) else {},
            errors=tuple(str(e) for e in errors) if isinstance(errors, list) else (),
        )


# -- the runner: python -m qrelkit.judges.vllm_batch STATE INPUT OUTPUT LOG -- COMMAND... ---------


def _last_reason(log: Path) -> str:
    """vLLM's own last error line from the end of the runner's log."""
    try:
        handle = open_owned(log, 1 << 62)
    except FolderRefused:
        handle = None
    if handle is None:
        return "no log"
    with handle:
        handle.seek(max(0, os.fstat(handle.fileno()).st_size - LOG_TAIL * 4))
        text = handle.read(LOG_TAIL * 4).decode("utf-8", errors="replace")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = (line for line in reversed(lines) if re.search(r"(Error|Exception|error:)", line))
    return next(errors, lines[-1] if lines else "no output")[-500:]


def _new_log(path: Path) -> BinaryIO:
    """The runner's log, a new file (never an existing one, never through a link)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    return os.fdopen(os.open(path, flags, 0o644), "wb")


def _answered(partial: Path) -> tuple[int, int] | None:
    """(answered, failed) lines of vLLM's output; None when it is not a regular file of the folder."""
    try:
        handle = open_owned(partial, limits().max_input_bytes)
    except FolderRefused:
        return None
    if handle is None:
        return None
    completed = failed = 0
    with handle:
        for line in iter_capped_lines(handle, limits().max_line_bytes):
            try:
                answered = line is not None and (json.loads(line).get("response") or {}).get("status_code") == 200
            except (ValueError, AttributeError, RecursionError):
                answered = False
            completed, failed = completed + answered, failed + (not answered)
    return completed, failed


def run(state_path: Path, source: Path, output: Path, log: Path, command: list[str]) -> int:
    root = state_path.parent.parent  # the batch folder: its batches/ and out/ are checked for links again here
    partial = output.with_name(f".{output.name}.partial")  # hidden: a runner killed mid-write leaves no visible half file
    command = [part if part != str(output) else str(partial) for part in command]
    with _new_log(log) as handle:
        returncode = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT).returncode
    state = _read_json(state_path) or {}
    if state.get("status") != "in_progress":  # cancelled meanwhile: nothing of it is read
        partial.unlink(missing_ok=True)
        source.unlink(missing_ok=True)
        return returncode
    counts = _answered(partial) if returncode == 0 else None
    if counts is not None:
        put_in_place(partial, output)
        state |= {"status": "completed", "completed": counts[0], "failed": counts[1]}
    else:
        partial.unlink(missing_ok=True)
        reason = _last_reason(log) if returncode != 0 else "its output is not a regular file of the batch folder"
        state |= {"status": "failed", "errors": [f"vLLM's run_batch exited with {returncode}: {reason}"]}
    _write_json(state_path, state, root)
    source.unlink(missing_ok=True)  # the name in files/ (a link there is removed, never what it points to)
    return returncode


def main(argv: list[str]) -> int:
    if len(argv) < 6 or argv[4] != "--":
        print(f"usage: python -m {RUNNER_MODULE} STATE INPUT OUTPUT LOG -- COMMAND...", file=sys.stderr)
        return 2
    state, source, output, log = (Path(a) for a in argv[:4])
    return run(state, source, output, log, argv[5:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
