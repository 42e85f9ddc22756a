"""Topics (TSV `qid<TAB>text` or JSONL with any extra fields) and documents (JSONL).

A document has a `docid` and either `text` or `image`, a path relative to a declared image
root (by default the documents file's folder). Image paths may not escape that root.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qrelkit.errors import InputFormatError, LineProblem
from qrelkit.io.files import FileRefused, open_under_root, sha256_of
from qrelkit.io.lines import ProblemLog, iter_lines, raise_if_problems, sha256_text
from qrelkit.io.structured import json_value


def fields_json(fields: dict[str, Any]) -> str:
    """A record's extra fields as the database stores them (the text its input hash covers)."""
    return json.dumps(fields, ensure_ascii=False)


def with_fields(content_hash: str, fields: str) -> str:
    """The hash of what a prompt template can read of a topic or document: the hash of its text (or
    of its image's bytes) extended by its fields (`fields_json`), or unchanged when it has none. A
    judgment records it; when it changes, the pair is judged again. (Migration 7 computes the same
    in SQL: sha256(content_hash || chr(0) || fields).)"""
    return content_hash if fields == "{}" else sha256_text(content_hash + "\0" + fields)


@dataclass(frozen=True)
class Topic:
    qid: str
    text: str
    fields: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The values a prompt template may name: `query` (= text), `qid`, and every extra field."""
        return {**self.fields, "qid": self.qid, "query": self.text, "text": self.text}


@dataclass(frozen=True)
class Document:
    docid: str
    text: str | None = None
    image: str | None = None  # path relative to image_root
    image_root: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    # The sha256 of the image's bytes when the collection was loaded ("" when it could not be read
    # then), for a document read from a database: the bytes read to judge it must be these.
    image_sha256: str | None = None

    @property
    def image_path(self) -> Path | None:
        if self.image is None:
            return None
        return Path(self.image_root or ".") / self.image

    @property
    def modality(self) -> str:
        return "image" if self.image is not None else "text"

    def content_hash(self) -> str:
        """sha256 of the text, or of the image file's bytes ("" when the image cannot be read: a
        missing file, not a regular file, outside its root; the judge reports it per pair)."""
        if self.text is not None:
            return sha256_text(self.text)
        path = self.image_path
        if path is None:
            return ""
        try:  # hostile-input: image read under its root, at read time
            with open_under_root(path, self.image_root) as handle:
                return sha256_of(handle)
        except FileRefused:
            return ""


def _string_id(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int)):
        text = str(value).strip()
        return text if text and not any(c.isspace() for c in text) else None
    return None


def _json_records(path: Path, problems: list[LineProblem]):
    for number, text in iter_lines(path, problems):
        try:
            record = json_value(text)
        except ValueError as exc:
            problems.append(LineProblem(str(path), number, str(exc)))
            continue
        if not isinstance(record, dict):
            problems.append(LineProblem(str(path), number, "expected a JSON object per line"))
            continue
        yield number, record


def _check_unique(seen: dict[str, int], key: str, number: int, path: Path, problems: list[LineProblem], what: str) -> bool:
    if key in seen:
        problems.append(LineProblem(str(path), number, f"duplicate {what} {key!r} (first on line {seen[key]})"))
        return False
    seen[key] = number
    return True


def read_topics(path: str | Path) -> list[Topic]:
    """Read topics from `.jsonl`/`.json` (JSON Lines) or anything else as TSV."""
    path = Path(path)
    problems = ProblemLog()
    topics: list[Topic] = []
    seen: dict[str, int] = {}
    if path.suffix in (".jsonl", ".json"):
        for number, record in _json_records(path, problems):
            qid = _string_id(record.get("qid", record.get("query_id")))
            text = record.get("text", record.get("query"))
            if qid is None:
                problems.append(LineProblem(str(path), number, "missing `qid` (a string or integer without spaces)"))
                continue
            if not isinstance(text, str) or not text.strip():
                problems.append(LineProblem(str(path), number, "missing `text` (the query, a non-empty string)"))
                continue
            extra = {k: v for k, v in record.items() if k not in ("qid", "query_id", "text", "query")}
            if _check_unique(seen, qid, number, path, problems, "qid"):
                topics.append(Topic(qid, text.strip(), extra))
    else:
        for number, line in iter_lines(path, problems):
            qid, tab, text = line.partition("\t")
            if not tab or not qid.strip() or not text.strip():
                problems.append(LineProblem(str(path), number, "expected `qid<TAB>query text`"))
                continue
            if any(c.isspace() for c in qid.strip()):
                problems.append(
                    LineProblem(str(path), number, f"qid {qid.strip()!r} holds white space: run and qrels files split it, so none names it")
                )
                continue
            if _check_unique(seen, qid.strip(), number, path, problems, "qid"):
                topics.append(Topic(qid.strip(), text.strip()))
    raise_if_problems(problems)
    if not topics:
        raise InputFormatError.single(path, 0, "no topics found (empty file?)")
    return topics


def read_documents(path: str | Path, *, image_root: str | Path | None = None) -> list[Document]:
    """Read JSONL documents: `docid` plus `text` or `image` (relative to ``image_root``)."""
    path = Path(path)
    root = Path(image_root) if image_root is not None else path.parent
    resolved_root = root.resolve()
    problems = ProblemLog()
    documents: list[Document] = []
    seen: dict[str, int] = {}
    for number, record in _json_records(path, problems):
        docid = _string_id(record.get("docid", record.get("doc_id")))
        if docid is None:
            problems.append(LineProblem(str(path), number, "missing `docid` (a string or integer without spaces)"))
            continue
        text, image = record.get("text"), record.get("image")
        if (text is None) == (image is None):
            problems.append(LineProblem(str(path), number, "expected exactly one of `text` or `image`"))
            continue
        if text is not None and not isinstance(text, str):
            problems.append(LineProblem(str(path), number, "`text` must be a string"))
            continue
        if image is not None:
            if not isinstance(image, str) or not image:
                problems.append(LineProblem(str(path), number, "`image` must be a path string"))
                continue
            target = (root / image).resolve()
            if Path(image).is_absolute() or not target.is_relative_to(resolved_root):
                problems.append(LineProblem(str(path), number, f"image path {image!r} escapes the image root {str(root)!r}"))
                continue
        extra = {k: v for k, v in record.items() if k not in ("docid", "doc_id", "text", "image")}
        if _check_unique(seen, docid, number, path, problems, "docid"):
            documents.append(Document(docid, text, image, str(root) if image is not None else None, extra))
    raise_if_problems(problems)
    if not documents:
        raise InputFormatError.single(path, 0, "no documents found (empty file?)")
    return documents
