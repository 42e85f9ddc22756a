"""Work ahead of a consumer: a function mapped over items by a pool of threads, results in input
order, with a bounded number in flight.

Threads, not processes: the expensive steps of reading and decoding images (file reads, sha256,
PIL's decoders and resampling) release the GIL, and threads start instantly and hand results
over without copying them."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
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
    source = iter(items)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="qrelkit-io")
    pending: deque[Future[R]] = deque()
    try:
        for item in source:
            pending.append(pool.submit(fn, item))
            if len(pending) >= window:
                break
        while pending:
            result = pending.popleft().result()
            for item in source:  # refill before handing the result over: the pool works while the consumer does
                pending.append(pool.submit(fn, item))
                break
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
