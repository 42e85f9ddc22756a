"""What this process may use of the machine: shared by every layer (embedders, judges, the FD
bootstrap), so it sits beside `errors` rather than in any one of them."""

from __future__ import annotations

import os
import signal


def available_cores() -> int:
    """CPU cores this process may run on (the affinity mask, not the machine's count), at most
    OMP_NUM_THREADS where that is set: Ray sets it to a worker's CPUs, so two 1-CPU workers on one
    node do not each start a thread (or a process) per core."""
    try:
        cores = max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        cores = max(1, os.cpu_count() or 1)
    limit = os.environ.get("OMP_NUM_THREADS", "")
    return min(cores, int(limit)) if limit.isdigit() and int(limit) > 0 else cores


def crash_point(name: str) -> None:
    """Test hook: die here, uncleanly (SIGKILL), when QRELKIT_CRASH_AT names this point."""
    if os.environ.get("QRELKIT_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
