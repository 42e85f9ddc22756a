"""One call of a judge on a batch of pairs, as the runner and every executor make it: a batch that
raises is judged again pair by pair, so one bad pair fails alone and the machine's failures stop
the job; and the embedding cache a judge is handed. Its own module, so that an executor in another
process (`ray_executor`) uses it without importing the runner that imports the executor."""

from __future__ import annotations

import errno
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from qrelkit.embed.cache import ComputedEmbeddings, VectorStore
from qrelkit.errors import PairInputError, QrelkitError, StorageFailure
from qrelkit.judges import FatalJudgeError, Judgment, Pair
from qrelkit.prompts import TemplateError


class StoreEmbeddingCache:
    """Gives judges cached embeddings; the runner's store does the writing. In a process that cannot
    reach the database (a Ray worker) the store is a `CollectingVectorStore`, and the executor hands
    what it collected to the driver's cache, whose `save` writes it."""

    def __init__(self, store: VectorStore):
        self.store = store

    def vectors(
        self, embedder: Any, item_kind: str, items: Mapping[str, str], content_hashes: Mapping[str, str] | None = None
    ) -> dict[str, np.ndarray]:
        from qrelkit.embed import embed_with_cache

        return embed_with_cache(self.store, embedder, item_kind, items, content_hashes=content_hashes)

    def save(self, computed: Iterable[ComputedEmbeddings]) -> None:
        for batch in computed:
            self.store.write_embeddings(batch.embedder_id, batch.item_kind, batch.keys, batch.vectors)


# -- judging a batch -------------------------------------------------------------------------------

# Not a judgment's business: the machine (database, disk, memory) failed, or the user stopped the job.
PASS_THROUGH = (KeyboardInterrupt, FatalJudgeError, StorageFailure, MemoryError)


def failure_judgment(pair: Pair, exc: BaseException) -> Judgment:
    """The judgment of a pair whose judge raised: an input error when the pair could not be put to
    the model (judges.scoring's status policy), a model error otherwise."""
    if isinstance(exc, (TemplateError, PairInputError)):
        return Judgment.failed(pair, "input_error", f"{type(exc).__name__}: {exc}")
    return Judgment.failed(pair, "model_error", f"{type(exc).__name__}: {exc}")


def salvaged(judge: Any) -> list[Judgment]:
    """What a judge made in a batch that then raised (answers that arrived; see BaseJudge.salvage)."""
    salvage = getattr(judge, "salvage", None)
    return list(salvage()) if callable(salvage) else []


def judge_batch_safely(judge: Any, batch: Sequence[Pair]) -> list[Judgment]:
    """A batch that raises is judged again pair by pair, so one bad pair fails alone; pairs whose
    answers had already arrived are not asked again (their judgments are salvaged)."""
    try:
        results = judge.judge(batch)
    except PASS_THROUGH:
        raise
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise StorageFailure(f"the disk is full ({exc})") from None
        return _pair_by_pair(judge, batch, exc)
    except Exception as exc:  # the backend failed; record it on the pair(s) and go on
        return _pair_by_pair(judge, batch, exc)
    if len(results) != len(batch):
        raise QrelkitError(f"judge {judge.name!r} returned {len(results)} judgments for {len(batch)} pairs")
    return results


def _pair_by_pair(judge: Any, batch: Sequence[Pair], exc: Exception) -> list[Judgment]:
    keys = {pair.key for pair in batch}
    kept = [j for j in salvaged(judge) if (j.qid, j.docid) in keys]
    done = {(j.qid, j.docid) for j in kept}
    rest = [pair for pair in batch if pair.key not in done]
    if len(rest) == 1 and len(batch) == 1:
        return [failure_judgment(rest[0], exc)]
    return kept + [j for pair in rest for j in judge_batch_safely(judge, [pair])]


def planned_batches(judge: Any, window: list[Pair], batch_size: int) -> Iterator[list[Pair]]:
    """A window cut into calls of ``batch_size`` pairs, ordered first by the judge's `sort_keys`
    when it has them (e.g. texts by length: a call then pads to the length its texts share, and a
    model's batch runs at its own speed, rather than at the speed of a call's longest text)."""
    sort_keys = getattr(judge, "sort_keys", None)
    if callable(sort_keys) and len(window) > 1:
        try:
            keys = list(sort_keys(window))
        except PASS_THROUGH:
            raise
        except Exception:  # noqa: BLE001 - ordering is an optimisation: a judge that cannot order judges in pool order
            keys = []
        if len(keys) == len(window):
            window = [window[i] for i in sorted(range(len(window)), key=keys.__getitem__)]
    for start in range(0, len(window), batch_size):
        yield window[start : start + batch_size]
