"""Functions for worker-process tests (module-level, so a spawned worker can import them) and the
check that a test left no worker process behind."""

from __future__ import annotations

import multiprocessing
import time


def no_children_left(seconds: float = 10.0) -> bool:
    """No child process is left. A stopped pool's worker may have been reaped by the pool's own
    thread a moment before its Process object says so, hence the short wait."""
    deadline = time.monotonic() + seconds
    while multiprocessing.active_children():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def slow_echo(item: tuple[int, float]) -> int:
    value, delay = item
    time.sleep(delay)
    return value


def fails_on_three(value: int) -> int:
    if value == 3:
        raise ValueError("three is refused")
    return value


def slow_preprocess_chunk(task):
    """The decoding processes' task, slowed (and finishing out of order), for tests that must
    catch the pool midway."""
    from qrelkit.embed.decode_pool import preprocess_chunk

    _, sources = task
    name = str(getattr(sources[0], "path", sources[0]))
    time.sleep(0.02 + 0.03 * (sum(map(ord, name)) % 3))
    return preprocess_chunk(task)
