"""Progress of long work, for people and for logs: a rich bar on a terminal; without one (nohup,
SLURM, a pipe) a plain line on stderr every few seconds with what is done, the rate and the ETA.

Work reports through a plain callback ``progress(done, total)``; this module turns it into output.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, nullcontext
from typing import IO, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from qrelkit.io.results import duration

ProgressCallback = Callable[[int, int], None]
DEFAULT_INTERVAL = 10.0  # seconds between plain lines; QRELKIT_PROGRESS_SECONDS overrides


def _interval() -> float:
    try:
        return max(0.0, float(os.environ.get("QRELKIT_PROGRESS_SECONDS", DEFAULT_INTERVAL)))
    except ValueError:
        return DEFAULT_INTERVAL


class PlainProgress:
    """One line per interval: `judging: 1200/9260 (13.0%), 85.3/s, elapsed 14s, ETA 1m34s`."""

    def __init__(
        self,
        description: str,
        unit: str,
        stream: IO[str],
        interval: float,
        clock: Callable[[], float] = time.monotonic,
        *,
        quiet_under: float = 0.0,
    ):
        """``quiet_under``: work that ends sooner than this many seconds, with no line shown yet, shows
        none (the Python API's default: progress only for work over a few seconds)."""
        self.description, self.unit, self.stream, self.interval, self.clock = description, unit, stream, interval, clock
        self.started = clock()
        self.last_line: float | None = None
        self.first_done: int | None = None
        self.quiet_under = quiet_under

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if self.first_done is None:
            self.first_done = done  # work done before this run (resumed) does not count toward the rate
        finished = total > 0 and done >= total
        if finished and self.last_line is None and now - self.started < self.quiet_under:
            return
        if not finished and self.last_line is not None and now - self.last_line < self.interval:
            return
        if not finished and self.last_line is None and now - self.started < max(self.interval, self.quiet_under):
            return
        self.last_line = now
        self.stream.write(self.line(done, total, now) + "\n")
        self.stream.flush()

    def line(self, done: int, total: int, now: float) -> str:
        elapsed = now - self.started
        rate = (done - (self.first_done or 0)) / elapsed if elapsed > 0 else 0.0
        share = f" ({100.0 * done / total:.1f}%)" if total else ""
        eta = f", ETA {duration((total - done) / rate)}" if rate > 0 and total > done else ""
        return f"{self.description}: {done}/{total} {self.unit}{share}, {rate:.1f} {self.unit}/s, elapsed {duration(elapsed)}{eta}"


@contextmanager
def progress_output(
    description: str, *, console: Console | None = None, enabled: bool = True, unit: str = "pairs", quiet_under: float = 0.0
) -> Iterator[ProgressCallback | None]:
    """A progress callback for ``description``: a bar on a terminal, plain lines otherwise (none for
    work that ends within ``quiet_under`` seconds), None when disabled."""
    if not enabled:
        yield None
        return
    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield PlainProgress(description, unit, console.file, _interval(), quiet_under=quiet_under)  # rich's file: never None
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


# -- the Python API's progress -----------------------------------------------------------------------

A_FEW_SECONDS = 3.0  # the Python API shows no progress by default for work that ends sooner


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (IPython's shell there is the ZMQ one)."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython is not None else None
    return shell is not None and (type(shell).__name__ == "ZMQInteractiveShell" or hasattr(shell, "kernel"))


class TqdmLike:
    """(done, total) calls driving a tqdm-like bar: ``make(total=, desc=, unit=, **extra)`` builds it
    at the first call (when the total is known), `update(n)` moves it, `close()` ends it."""

    def __init__(self, make: Callable[..., Any], description: str, unit: str, **extra: Any):
        self.make, self.description, self.unit, self.extra = make, description, unit, extra
        self.bar: Any = None
        self.shown = 0

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = self.make(total=total, desc=self.description, unit=self.unit, **self.extra)
        elif getattr(self.bar, "total", total) != total:
            self.bar.total = total
        if done > self.shown:
            self.bar.update(done - self.shown)
            self.shown = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def api_progress(progress: Any) -> Callable[..., Any]:
    """The Python API's progress factory (``progress=`` of every `qrelkit` function): False shows
    none; a tqdm-like callable (`tqdm.tqdm`, `tqdm.auto.tqdm`, or any that takes ``total=``,
    ``desc=``, ``unit=`` and returns an object with `update(n)` and `close()`) is driven as given;
    True shows progress at once, and None (the default) only for work that takes more than
    `A_FEW_SECONDS`: in a notebook as tqdm's bar when tqdm is installed, else a bar on a terminal,
    else plain lines on stderr."""
    if progress is False:
        factory: Any = lambda description, unit="pairs": nullcontext()
    elif callable(progress) and progress is not True:
        factory = lambda description, unit="pairs": closing(TqdmLike(progress, description, unit))
    elif in_notebook() and (tqdm := _tqdm_auto()) is not None:
        delay = 0.0 if progress else A_FEW_SECONDS
        factory = lambda description, unit="pairs": closing(TqdmLike(tqdm, description, unit, delay=delay))
    else:
        delay = 0.0 if progress else A_FEW_SECONDS
        factory = lambda description, unit="pairs": progress_output(description, unit=unit, quiet_under=delay)
    factory.enabled = progress is not False
    return factory


def _tqdm_auto() -> Any:
    try:
        from tqdm.auto import tqdm  # type: ignore[import-untyped]
    except ImportError:
        return None
    return tqdm
