"""Work ahead of a consumer: a function mapped over items by a pool of threads, results in input
order, with a bounded number in flight.

Threads, not processes: the expensive steps of reading and decoding images (file reads, sha256,
PIL's decoders and resampling) release the GIL, and threads start instantly and hand results
over without copying them."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def ordered_map(fn: Callable[[T], R], items: Iterable[T], *, workers: int, window: int) -> Iterator[R]:
    """fn(item) for each item, computed by ``workers`` threads and yielded in input order.

    At most ``window`` results are computed ahead of the one the consumer takes, so a slow
    consumer (a model encoding the previous batch) holds a bounded amount of memory while the
    pool keeps working. Stopping the iteration early cancels what has not started."""
    if workers < 1 or window < 1:
        raise ValueError("workers and window must be at least 1")
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="qrelkit-io")
    try:
        yield from windowed(lambda item: pool.submit(fn, item), items, window)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def windowed(submit: Callable[[T], Future[R]], items: Iterable[T], window: int) -> Iterator[R]:
    """The results of ``submit(item)`` for each item in input order, at most ``window`` submitted ahead
    of the one the consumer takes; what has not started when the consumer stops is cancelled."""
    source = iter(items)
    pending: deque[Future[R]] = deque(submit(item) for item in islice(source, window))
    try:
        while pending:
            result = pending.popleft().result()
            # refill before handing the result over: the pool works while the consumer does
            pending.extend(submit(item) for item in islice(source, 1))
            yield result
    finally:
        for future in pending:
            future.cancel()
