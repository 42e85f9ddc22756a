"""Line-oriented reading shared by every format: streamed decoding with precise error positions."""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Protocol

from qrelkit.errors import InputFormatError, LineProblem

BLOCK = 1 << 23  # 8 MiB: large enough that per-block work is noise, small enough to stream
UTF8_BOM = b"\xef\xbb\xbf"


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class ProblemSink(Protocol):
    def append(self, problem: LineProblem, /) -> None: ...


class ProblemLog(list[LineProblem]):
    """The problems of one file: the first ``LIMIT`` kept, the rest only counted, so a file
    of millions of bad lines costs neither the memory nor the time of millions of messages."""

    LIMIT = 50

    def __init__(self) -> None:
        super().__init__()
        self.omitted = 0

    def append(self, problem: LineProblem, /) -> None:
        if len(self) < self.LIMIT:
            super().append(problem)
        else:
            self.omitted += 1

    @property
    def full(self) -> bool:
        return len(self) >= self.LIMIT


@contextmanager
def open_stream(path: str | Path) -> Iterator[BinaryIO]:
    """The file's bytes as a stream, gunzipped on the fly when the file is gzip (TREC runs are
    often shipped compressed); never the whole file in memory."""
    path = Path(path)
    try:
        handle: BinaryIO = open(path, "rb")
    except FileNotFoundError:
        raise InputFormatError.single(path, 0, "file not found") from None
    except IsADirectoryError:
        raise InputFormatError.single(path, 0, "is a directory, expected a file") from None
    try:
        if handle.read(2) == b"\x1f\x8b":
            handle.seek(0)
            with gzip.GzipFile(fileobj=handle, mode="rb") as unzipped:
                yield unzipped  # type: ignore[misc]
        else:
            handle.seek(0)
            yield handle
    except (OSError, EOFError) as exc:  # a truncated or corrupt gzip stream
        raise InputFormatError.single(path, 0, f"cannot read the file: {exc}") from None
    finally:
        handle.close()


def iter_blocks(stream: BinaryIO, block: int | None = None) -> Iterator[bytes]:
    """Blocks of whole lines (each ends at a newline, except perhaps the last), BOM removed."""
    block = block or BLOCK
    rest = b""
    first = True
    while True:
        data = stream.read(block)
        if first:
            first = False
            if data.startswith(UTF8_BOM):
                data = data[len(UTF8_BOM) :]
        if not data:
            break
        data = rest + data
        cut = data.rfind(b"\n") + 1
        if cut == 0:  # one line longer than a block: keep reading
            rest = data
            continue
        rest = data[cut:]
        yield data[:cut]
    if rest:
        yield rest


def iter_lines(path: str | Path, problems: ProblemSink) -> Iterator[tuple[int, str]]:
    """Yield (line number, text) for each non-blank line of a UTF-8 file.

    A line that is not valid UTF-8 is reported in ``problems`` (with the byte and column)
    and skipped, so that one bad byte does not hide the rest of the file's problems.
    """
    path = Path(path)
    number = 0
    with open_stream(path) as stream:
        for block in iter_blocks(stream):
            lines = block.split(b"\n")
            if block.endswith(b"\n"):
                lines.pop()
            for line in lines:
                number += 1
                try:
                    text = line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    problems.append(LineProblem(str(path), number, f"invalid UTF-8 byte 0x{line[exc.start]:02x} at column {exc.start + 1}"))
                    continue
                text = text.rstrip("\r")
                if text.strip():
                    yield number, text


def raise_if_problems(problems: list[LineProblem]) -> None:
    if problems:
        raise InputFormatError(list(problems), getattr(problems, "omitted", 0))
