"""Progress of long work, for people and for logs: a rich bar on a terminal; without one (nohup,
SLURM, a pipe) a plain line on stderr every few seconds with what is done, the rate and the ETA.

Work reports through a plain callback ``progress(done, total)``; this module turns it into output.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

ProgressCallback = Callable[[int, int], None]
DEFAULT_INTERVAL = 10.0  # seconds between plain lines; QRELKIT_PROGRESS_SECONDS overrides


def _interval() -> float:
    try:
        return max(0.0, float(os.environ.get("QRELKIT_PROGRESS_SECONDS", DEFAULT_INTERVAL)))
    except ValueError:
        return DEFAULT_INTERVAL


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class PlainProgress:
    """One line per interval: `judging: 1200/9260 (13.0%), 85.3/s, elapsed 14s, ETA 1m34s`."""

    def __init__(self, description: str, unit: str, stream: IO[str], interval: float, clock: Callable[[], float] = time.monotonic):
        self.description, self.unit, self.stream, self.interval, self.clock = description, unit, stream, interval, clock
        self.started = clock()
        self.last_line: float | None = None
        self.first_done: int | None = None

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if self.first_done is None:
            self.first_done = done  # work done before this run (resumed) does not count toward the rate
        finished = total > 0 and done >= total
        if not finished and self.last_line is not None and now - self.last_line < self.interval:
            return
        if not finished and self.last_line is None and now - self.started < self.interval:
            return
        self.last_line = now
        self.stream.write(self.line(done, total, now) + "\n")
        self.stream.flush()

    def line(self, done: int, total: int, now: float) -> str:
        elapsed = now - self.started
        rate = (done - (self.first_done or 0)) / elapsed if elapsed > 0 else 0.0
        share = f" ({100.0 * done / total:.1f}%)" if total else ""
        eta = f", ETA {_duration((total - done) / rate)}" if rate > 0 and total > done else ""
        return f"{self.description}: {done}/{total} {self.unit}{share}, {rate:.1f} {self.unit}/s, elapsed {_duration(elapsed)}{eta}"


@contextmanager
def progress_output(
    description: str, *, console: Console | None = None, enabled: bool = True, unit: str = "pairs"
) -> Iterator[ProgressCallback | None]:
    """A progress callback for ``description``: a bar on a terminal, plain lines otherwise, None when disabled."""
    if not enabled:
        yield None
        return
    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield PlainProgress(description, unit, console.file if console.file is not None else sys.stderr, _interval())
        return
    columns = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]} " + unit + "/s"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    ]
    with Progress(*columns, console=console) as bar:
        task = bar.add_task(description, total=None, rate="-")
        started = time.perf_counter()
        first: list[int] = []

        def update(done: int, total: int) -> None:
            if not first:
                first.append(done)
            elapsed = time.perf_counter() - started
            rate = f"{(done - first[0]) / elapsed:.1f}" if elapsed > 0 else "-"
            bar.update(task, completed=done, total=total, rate=rate)

        yield update
