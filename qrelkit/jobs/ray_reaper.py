"""A local Ray tied to the life of the process that started it.

`ray.init()` with no address starts a Ray on this machine as children of the driver; Ray's own
fate-sharing kills those children when the driver dies, but not the agents the raylet starts (the
dashboard agent, the runtime-env agent): when the raylet dies they try to tell its GCS, which died
too, and wait out a fixed 60-second timeout, so a SIGKILLed driver left them running for about 90
seconds, holding memory and ports. `reap_on_exit` starts a small watcher process holding one end
of a pipe from the driver: when the driver is gone (however it ended) the pipe closes and the
watcher kills every process of that Ray still alive (each checked by its start time, so a reused
process id is never killed). Linux only (`/proc`), as Ray's own fate-sharing is.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import IO, Any

# Takes `pid@start` pairs (start: /proc/PID/stat's field 22, in clock ticks since boot), waits for
# its stdin to close, then kills those still alive with the same start. Standard library only.
_WATCHER = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal's Ctrl-C is the driver's to handle
sys.stdin.buffer.read()
def started(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None
for item in sys.argv[1:]:
    pid, start = item.split("@")
    if started(pid) == start:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
"""


def start_ticks(pid: int) -> str | None:
    """When a process started (clock ticks since boot, /proc/PID/stat field 22): with its pid, what
    names it uniquely. None when it is gone (or there is no /proc)."""
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _children(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc/PID/task/*/children)."""
    found: list[int] = []
    pending = [pid]
    while pending:
        parent = pending.pop()
        for task in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                kids = [int(k) for k in task.read_text().split()]
            except OSError:
                continue
            found += kids
            pending += kids
    return found


def ray_processes(ray: Any) -> list[int]:
    """The process ids of the Ray this process started (`ray.init` with no address): the node's own
    (GCS, raylet, monitors) and every process below them (the agents, idle workers)."""
    node = getattr(getattr(getattr(ray, "_private", None), "worker", None), "_global_node", None)
    pids: list[int] = []
    for infos in (getattr(node, "all_processes", None) or {}).values():
        for info in infos:
            pid = getattr(getattr(info, "process", None), "pid", None)
            if isinstance(pid, int):
                pids += [pid, *_children(pid)]
    return sorted(set(pids))


def reap_on_exit(ray: Any) -> IO[bytes] | None:
    """Start the watcher over the processes of the local Ray this process started (call it right
    after `ray.init`); the pipe to it, to close after `ray.shutdown` (the watcher then kills what
    is left of that Ray, usually nothing). None where there is no /proc or nothing to watch."""
    if not sys.platform.startswith("linux"):
        return None
    named = [f"{pid}@{start}" for pid in ray_processes(ray) if (start := start_ticks(pid)) is not None]
    if not named:
        return None
    try:
        watcher = subprocess.Popen(
            [sys.executable, "-S", "-c", _WATCHER, *named],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not in the terminal's process group: a Ctrl-C or SIGHUP there leaves it be
        )
    except OSError:
        return None
    return watcher.stdin  # not inherited by later children (PEP 446): only this process holds it open
