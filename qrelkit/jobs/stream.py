"""The pending pairs of a job as windows of `Pair`s, read from the database a block at a time.

A window is one block of `qrelkit.storage.pools.PendingPairs` (thousands of pairs, many calls of
the judge): an executor may order it (a judge's `sort_keys`, e.g. texts by length) before cutting
it into calls, so that what the model sees is planned over the window, not per call. What the
writer needs of a pair (its document's content hash, its earlier attempts) is kept only while the
pair is in flight: from its window's reading until its judgment is handed to the writer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from qrelkit.io import Document, Topic
from qrelkit.judges import Judgment, Pair
from qrelkit.storage.pools import PendingPairs


@dataclass
class Window:
    pairs: list[Pair]  # to judge: topic and document are in the collection
    missing: list[Judgment] = field(default_factory=list)  # input errors of the pairs the collection lacks


class PendingStream:
    """Windows of the pending pairs, and each in-flight pair's (content hash, earlier attempts)."""

    def __init__(self, pending: PendingPairs, topics: dict[str, Topic], database: Any):
        self.pending = pending
        self.topics = topics
        self.database = database  # named in the input errors of pairs the collection lacks
        self.in_flight: dict[tuple[str, str], tuple[str | None, int]] = {}

    def windows(self) -> Iterator[Window]:
        for block in self.pending.blocks():
            yield self._window(block)

    def settle(self, judgment: Judgment) -> tuple[str | None, int]:
        """The pair's content hash and earlier attempts (0 when it had no judgment), forgotten from
        here on (its judgment is written)."""
        key: Any = (getattr(judgment, "qid", None), getattr(judgment, "docid", None))  # a broken judgment may lack either
        return self.in_flight.pop(key, (None, 0))

    def _window(self, block: pa.Table) -> Window:
        columns = {name: block.column(name).to_pylist() for name in block.column_names}
        window = Window([])
        topics, in_flight = self.topics, self.in_flight
        for qid, docid, attempts, has_document, text, image, root, fields, content_hash, image_sha256, missing_error in zip(
            columns["qid"],
            columns["docid"],
            columns["earlier_attempts"],
            columns["has_document"],
            columns["text"],
            columns["image_path"],
            columns["image_root"],
            columns["fields"],
            columns["content_hash"],
            columns["image_sha256"],
            columns["missing_error"],  # why a probe's copy of the document could not be made
        ):
            in_flight[(qid, docid)] = (content_hash, attempts or 0)
            topic = topics.get(qid)
            if topic is None or not has_document:
                what = f"topic {qid!r}" if topic is None else f"document {docid!r}"
                error = missing_error if topic is not None and missing_error else f"{what} is not in the collection ({self.database})"
                window.missing.append(Judgment(qid, docid, "input_error", error=error))
                continue
            # Most documents carry no extra fields: "{}" needs no JSON parser.
            extra = {} if fields is None or fields == "{}" else json.loads(fields)
            # the image's bytes as loaded ("" when they could not be read then): what must be read to judge it
            sha = (image_sha256 or "") if image is not None else None
            window.pairs.append(Pair(topic, Document(docid, text, image, root, extra, sha)))
        return window
