"""Topics, documents and qrels of an ir_datasets dataset, named `irds:<dataset id>` wherever a
file is accepted (`irds:msmarco-passage/trec-dl-2019/judged`). Optional: `pip install 'qrelkit[irds]'`.

ir_datasets downloads a dataset's files on first use (and checks them against its own md5 sums),
so a dataset id names fixed content: the id, not a file hash, identifies what was loaded.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from qrelkit.errors import FatalJobError, QrelkitError
from qrelkit.io.collection import Document, Topic
from qrelkit.io.lines import sha256_text
from qrelkit.io.paths import IRDS_PREFIX
from qrelkit.io.trec import OnDuplicate, Qrel, Qrels


class IrdsError(QrelkitError):
    pass


class IrdsUnreachable(IrdsError, FatalJobError):
    """ir_datasets could not reach the hosts of a file it needs: not the input's fault (exit 3)."""


def irds_sha256(dataset_id: str) -> str:
    """What identifies a dataset's content for idempotent loads: its id (see the module note)."""
    return sha256_text(IRDS_PREFIX + dataset_id)


# Why ir_datasets may not download now: set while a dry run plans, which must start no download. A
# dataset whose files are here already (downloaded before, or local) is read as usual.
_DOWNLOADS_REFUSED: ContextVar[str | None] = ContextVar("irds_downloads_refused", default=None)


@contextmanager
def no_downloads(why: str) -> Iterator[None]:
    """Within this block, an `irds:` id whose files ir_datasets would have to fetch is an IrdsError
    saying ``why``, raised before any request is sent."""
    token = _DOWNLOADS_REFUSED.set(why)
    try:
        yield
    finally:
        _DOWNLOADS_REFUSED.reset(token)


def _guard_downloads(ir_datasets: Any) -> None:
    """Make ir_datasets' one download step (`Download.path`: a file not in its cache, fetched from a
    mirror that is not a local file) ask `no_downloads` first. Installed once; outside such a block
    nothing changes."""
    download = getattr(getattr(ir_datasets, "util", None), "Download", None)
    if download is None or getattr(download.path, "qrelkit_guarded", False):
        return
    fetch = download.path

    def path(self: Any, force: bool = True) -> Any:
        refused = _DOWNLOADS_REFUSED.get()
        cached = getattr(self, "_path", None) or getattr(self, "_cache_path", None)
        local = all(type(m).__name__ == "LocalDownload" for m in getattr(self, "mirrors", []))
        if refused and force and not local and not (cached and os.path.exists(cached)):
            raise IrdsError(refused)
        return fetch(self, force)

    path.qrelkit_guarded = True  # type: ignore[attr-defined]
    download.path = path


def _dataset(dataset_id: str, what: str) -> Any:
    try:
        import ir_datasets
    except ImportError:
        raise IrdsError(f"irds:{dataset_id}: reading ir_datasets ids needs the irds extra: pip install 'qrelkit[irds]'") from None
    _guard_downloads(ir_datasets)
    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError:
        raise IrdsError(f"irds:{dataset_id}: ir_datasets has no dataset of this id (see https://ir-datasets.com)") from None
    if not getattr(dataset, f"has_{what}")():
        raise IrdsError(f"irds:{dataset_id}: the dataset has no {what}")
    return dataset


# What a failed download says when the machine cannot reach the host (requests, urllib3, urllib).
_UNREACHABLE = re.compile(
    r"NameResolutionError|Failed to resolve|Name or service not known|Temporary failure in name resolution|"
    r"Connection refused|Network is unreachable|No route to host|timed out|ProxyError|Max retries exceeded"
)
_TRIED = re.compile(r"Download\('(https?://[^'\\]+)'")  # ir_datasets names each URL it tried
_HOST = re.compile(r"host=\\?'([^'\\]+)")


def irds_failure(dataset_id: str, what: str, exc: BaseException) -> IrdsError:
    """One line for a failure inside ir_datasets: for a download that could not reach its host
    (ir_datasets' own error nests every try of every mirror), which hosts, and what to do offline."""
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    if _UNREACHABLE.search(text):
        hosts = ", ".join(dict.fromkeys(_TRIED.findall(text) or _HOST.findall(text))) or "its download host"
        return IrdsUnreachable(
            f"irds:{dataset_id}: cannot download its {what}: {hosts} could not be reached (offline?). "
            "Copy ir_datasets' files into $IR_DATASETS_HOME (default ~/.ir_datasets) from a machine that has them, "
            "or give plain files (`qrelkit data fetch NAME --mirror DIR|URL` fetches qrelkit's bundles from a mirror)"
        )
    return IrdsError(f"irds:{dataset_id}: cannot read its {what} through ir_datasets: {text}")


@contextmanager
def _quiet() -> Iterator[None]:
    """ir_datasets logs each failed try of each download mirror on stderr before it gives up: the
    failure is reported once, by `irds_failure`, instead."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(previous)


def _records(dataset_id: str, what: str, items: Iterable[Any]) -> Iterable[Any]:
    """The dataset's records; a failure to fetch or read its files becomes one message naming the id."""
    iterator = iter(items)
    while True:
        try:
            with _quiet():  # only while ir_datasets works, not while the caller handles a record
                item = next(iterator)
        except StopIteration:
            return
        except IrdsError as exc:  # no_downloads' refusal (raised inside ir_datasets): name the id once
            message = str(exc)
            raise IrdsError(message if message.startswith("irds:") else f"irds:{dataset_id}: {message}") from None
        except QrelkitError:
            raise
        except Exception as exc:  # ir_datasets raises plain IOError, HTTP errors, or its own on a failed download
            raise irds_failure(dataset_id, what, exc) from None
        yield item


def read_irds_texts(dataset_id: str, docids: list[str]) -> dict[str, str]:
    """docid -> text (ir_datasets' default text) of the given documents, through the dataset's
    document store (which downloads the corpus on first use)."""
    dataset = _dataset(dataset_id, "docs")
    try:
        with _quiet():
            found = dataset.docs_store().get_many(docids)
    except QrelkitError:
        raise
    except Exception as exc:
        raise irds_failure(dataset_id, "documents", exc) from None
    return {str(docid): _text(doc) for docid, doc in found.items()}


def _plain(value: Any) -> Any:
    """A record field as JSON can store it (ir_datasets records may hold bytes, tuples, dates)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


def _text(record: Any) -> str:
    """The record's text as ir_datasets defines it (`default_text()`: a TREC topic's title, a web
    document's title and body), or its `text` field."""
    if hasattr(record, "default_text"):
        return str(record.default_text())
    return str(getattr(record, "text", ""))


def _fields(record: Any, *skip: str) -> dict[str, Any]:
    return {name: _plain(value) for name, value in record._asdict().items() if name not in skip}


def read_irds_topics(dataset_id: str) -> list[Topic]:
    """The dataset's queries: `query_id` as qid, the default text as text, every other field kept."""
    dataset = _dataset(dataset_id, "queries")
    topics: dict[str, Topic] = {}
    for query in _records(dataset_id, "queries", dataset.queries_iter()):
        qid, text = str(query.query_id), _text(query).strip()
        if not text:
            raise IrdsError(f"irds:{dataset_id}: query {qid!r} has no text")
        if qid in topics:
            raise IrdsError(f"irds:{dataset_id}: query {qid!r} appears twice")
        topics[qid] = Topic(qid, text, _fields(query, "query_id", "text"))
    if not topics:
        raise IrdsError(f"irds:{dataset_id}: no queries")
    return list(topics.values())


def read_irds_documents(dataset_id: str) -> list[Document]:
    """The dataset's documents (text): `doc_id` as docid, the default text as text, other fields kept.
    All of them: a corpus of millions of passages is loaded whole."""
    dataset = _dataset(dataset_id, "docs")
    documents: dict[str, Document] = {}
    for doc in _records(dataset_id, "documents", dataset.docs_iter()):
        docid = str(doc.doc_id)
        if docid in documents:
            raise IrdsError(f"irds:{dataset_id}: document {docid!r} appears twice")
        documents[docid] = Document(docid, _text(doc), fields=_fields(doc, "doc_id", "text"))
    if not documents:
        raise IrdsError(f"irds:{dataset_id}: no documents")
    return list(documents.values())


def read_irds_qrels(dataset_id: str, *, name: str | None = None, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> Qrels:
    """The dataset's qrels (`query_id`, `doc_id`, `relevance`, `iteration`), a repeated pair resolved
    by ``on_duplicate`` as for a qrels file."""
    dataset = _dataset(dataset_id, "qrels")
    policy = OnDuplicate(on_duplicate)
    kept: dict[tuple[str, str], Qrel] = {}
    for qrel in _records(dataset_id, "qrels", dataset.qrels_iter()):
        entry = Qrel(str(qrel.query_id), str(qrel.doc_id), int(qrel.relevance), str(getattr(qrel, "iteration", "0")))
        key = (entry.qid, entry.docid)
        previous = kept.get(key)
        if previous is not None and policy is OnDuplicate.error:
            raise IrdsError(
                f"irds:{dataset_id}: qid {entry.qid!r}, docid {entry.docid!r} is judged twice; "
                "choose how to resolve with --on-duplicate first|last|max"
            )
        if previous is None or policy is OnDuplicate.last or (policy is OnDuplicate.max and entry.grade > previous.grade):
            kept[key] = entry
    if not kept:
        raise IrdsError(f"irds:{dataset_id}: no qrels")
    return Qrels(name or dataset_id, tuple(kept.values()), source=IRDS_PREFIX + dataset_id)
