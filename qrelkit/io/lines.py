"""Line-oriented reading shared by every format: decoding with precise error positions."""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Iterator
from pathlib import Path

from qrelkit.errors import InputFormatError, LineProblem


def sha256_text(text: str) -> str:
    """sha256 of the UTF-8 text, in hex: the one content hash for texts, templates and identities."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes, read in 1 MiB blocks (never the whole file at once)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputFormatError.single(path, 0, "file not found") from None
    except IsADirectoryError:
        raise InputFormatError.single(path, 0, "is a directory, expected a file") from None
    if raw[:2] == b"\x1f\x8b":  # gzip magic: TREC runs are often shipped compressed
        raw = gzip.decompress(raw)
    return raw


def iter_lines(path: str | Path, problems: list[LineProblem]) -> Iterator[tuple[int, str]]:
    """Yield (line number, text) for each non-blank line of a UTF-8 file.

    A line that is not valid UTF-8 is reported in ``problems`` (with the byte and column)
    and skipped, so that one bad byte does not hide the rest of the file's problems.
    """
    path = Path(path)
    raw = _read_bytes(path)
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    for number, line in enumerate(raw.split(b"\n"), start=1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(
                LineProblem(
                    str(path),
                    number,
                    f"invalid UTF-8 byte 0x{line[exc.start]:02x} at column {exc.start + 1}",
                )
            )
            continue
        text = text.rstrip("\r")
        if text.strip():
            yield number, text


def raise_if_problems(problems: list[LineProblem]) -> None:
    if problems:
        raise InputFormatError(problems)
