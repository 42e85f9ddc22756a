"""Work in worker processes, for CPU work that holds the interpreter lock (NumPy's eigenvalue
routine, PIL's decoders and resampling when many run at once: 16 threads decoding JPEGs reached
3.3x one core where the machine gives 10.8x).

Processes are started with ``spawn`` (the caller may hold threads: DuckDB, BLAS, CUDA), with
``__main__`` anonymous while they start (`children_skip_main`), and ignore Ctrl-C: it is the
parent's to handle, by stopping them (`stop_workers`). A worker that dies (killed, out of memory)
breaks its pool; `ProcessMap` says so as a FatalJobError naming what to change, never a hang.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any, TypeVar

from qrelkit.errors import FatalJobError
from qrelkit.io.workers.parallel import windowed

T = TypeVar("T")
R = TypeVar("R")


class WorkerProcessDied(FatalJobError):
    """A worker process ended without finishing its work (killed, or out of memory)."""


def ignore_interrupts() -> None:
    """A worker's initializer: Ctrl-C reaches every process of the terminal's group, and stopping
    the workers is the parent's decision (it terminates them), not a traceback in each worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def can_start_processes() -> bool:
    """A daemon process (a pool's own worker) cannot have children."""
    return not multiprocessing.current_process().daemon


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now (Python < 3.14 has no public way to)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(timeout=5)  # the pool's own thread may reap it first; either way it has ended


@contextmanager
def children_skip_main() -> Iterator[None]:
    """Start worker processes that do not run the caller's script again.

    A spawned process re-imports the parent's ``__main__`` (by path, or by name for ``-m``), so a
    script that starts workers without an ``if __name__ == "__main__":`` guard would be run
    again, whole, in every worker (re-reading and re-embedding, then failing). The workers only
    need qrelkit's own functions and data, so ``__main__`` is made anonymous (as in an
    interactive session) while they start, and restored at once.
    """
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved: dict[str, Any] = {name: main.__dict__[name] for name in ("__file__", "__spec__") if name in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__dict__["__spec__"] = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


class ProcessMap:
    """A pool of worker processes kept for many calls of `map`: results in input order, a bounded
    number of tasks ahead of the consumer, the workers stopped on Ctrl-C and when one dies.

    ``what`` says what the workers do, for the error a dead worker gives ("decoding images");
    ``option`` is the setting to lower."""

    def __init__(self, workers: int, *, what: str, option: str):
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers, self.what, self.option = workers, what, option
        self._pool: ProcessPoolExecutor | None = None

    @property
    def processes(self) -> list[Any]:
        """The worker processes now running (for tests and for the benchmark's control)."""
        return list((getattr(self._pool, "_processes", None) or {}).values()) if self._pool is not None else []

    def _submit(self, fn: Callable[..., R], *args: Any) -> Future[R]:
        if self._pool is None:
            context = multiprocessing.get_context("spawn")  # not fork: the caller holds threads (DuckDB, BLAS, CUDA)
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=context, initializer=ignore_interrupts)
        with children_skip_main():  # the pool starts a process on a submit that finds none idle
            return self._pool.submit(fn, *args)

    def map(self, fn: Callable[[T], R], items: Iterable[T], *, window: int) -> Iterator[R]:
        """fn(item) for each item in the workers, yielded in input order, with at most ``window``
        tasks submitted ahead of the one the consumer takes. ``fn`` and the items must pickle (a
        module-level function). An exception fn raises reaches the caller and the pool stays;
        Ctrl-C or a dead worker stop every worker (a later call starts new ones)."""
        if window < 1:
            raise ValueError("window must be at least 1")
        try:
            yield from windowed(lambda item: self._submit(fn, item), items, window)
        except BrokenProcessPool as exc:
            self.terminate()
            raise WorkerProcessDied(
                f"a worker process {self.what} ended without finishing (killed, or out of memory); "
                f"try fewer processes than {self.option}={self.workers}"
            ) from exc
        except (KeyboardInterrupt, SystemExit):
            self.terminate()
            raise

    def terminate(self) -> None:
        """End the workers now (Ctrl-C, a dead worker); a later `map` starts new ones."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            stop_workers(pool)

    def close(self) -> None:
        """Let the workers finish what they have and exit."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=True, cancel_futures=True)
