"""Line-oriented reading shared by every format: streamed decoding with precise error positions."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from qrelkit.errors import InputFormatError, LineProblem
from qrelkit.io.files import open_regular, sha256_of
from qrelkit.io.limits import StreamError, iter_capped_lines, limits, open_input, size_text

UTF8_BOM = b"\xef\xbb\xbf"


def sha256_text(text: str) -> str:
    """sha256 of the UTF-8 text, in hex: the one content hash for texts, templates and identities."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


BLOCK = 1 << 23  # 8 MiB: large enough that per-block work is noise, small enough to stream


def file_sha256(path: str | Path) -> str:
    """sha256 of a regular file's bytes, read in 1 MiB blocks (never the whole file at once)."""
    with open_regular(path) as handle:
        return sha256_of(handle)


class ProblemSink(Protocol):
    def append(self, problem: LineProblem, /) -> None: ...


class ProblemLog(list[LineProblem]):
    """The problems of one file: the first ``LIMIT`` kept, the rest only counted, so a file
    of millions of bad lines costs neither the memory nor the time of millions of messages;
    and counting stops at `max_problems` (`QRELKIT_MAX_PROBLEMS`): a file of 20 million bad
    lines is not read to its end only to count them (the line reader stops there)."""

    LIMIT = 50

    def __init__(self) -> None:
        super().__init__()
        self.omitted = 0
        self.cap = limits().max_problems

    def append(self, problem: LineProblem, /) -> None:
        if len(self) < self.LIMIT:
            super().append(problem)
        else:
            self.omitted += 1

    @property
    def stopped(self) -> str | None:
        """Why counting stopped before the end of the file, once the cap is reached."""
        if len(self) + self.omitted < self.cap:
            return None
        return f"reading stopped at {self.cap:,} problems; QRELKIT_MAX_PROBLEMS raises the cap"


def iter_blocks(stream: BinaryIO, block: int | None = None) -> Iterator[bytes]:
    """Blocks of whole lines (each ends at a newline, except perhaps the last), BOM removed."""
    block = block or BLOCK
    rest = b""
    data = stream.read(block).removeprefix(UTF8_BOM)
    while data:
        data = rest + data
        cut = data.rfind(b"\n") + 1  # 0: one line longer than a block, kept whole while reading on
        rest = data[cut:]
        if cut:
            yield data[:cut]
        data = stream.read(block)
    if rest:
        yield rest


def iter_lines(path: str | Path, problems: ProblemSink) -> Iterator[tuple[int, str]]:
    """Yield (line number, text) for each non-blank line of a UTF-8 file, streamed (gzip inflated
    on the way, within the caps of `qrelkit.io.limits`).

    A line that is not valid UTF-8, holds a NUL byte or is longer than the line cap is reported in
    ``problems`` (with the column) and skipped, so that one bad line does not hide the rest of the
    file's problems. A stream that fails (a truncated gzip) ends in an error naming the line.
    """
    path = Path(path)
    caps = limits()
    number = 0
    with open_input(path) as stream:
        try:
            for line in iter_capped_lines(stream, caps.max_line_bytes):
                if getattr(problems, "stopped", None):
                    return  # enough problems to tell the file is not what it should be
                number += 1
                text = _decode(path, number, line, caps.max_line_bytes, problems)
                if text is not None and text.strip():
                    yield number, text
        except StreamError as exc:
            kept = [LineProblem(str(path), number + 1, exc.reason), *list(problems)]  # type: ignore[call-overload]  # the reason the file stopped comes first
            raise InputFormatError(kept, getattr(problems, "omitted", 0)) from None


def _decode(path: Path, number: int, line: bytes | None, max_line_bytes: int, problems: ProblemSink) -> str | None:
    if line is None:
        problems.append(LineProblem(str(path), number, f"line longer than {size_text(max_line_bytes)} (QRELKIT_MAX_LINE_BYTES)"))
        return None
    if number == 1:
        line = line.removeprefix(UTF8_BOM)
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(LineProblem(str(path), number, f"invalid UTF-8 byte 0x{line[exc.start]:02x} at column {exc.start + 1}"))
        return None
    if "\x00" in text:
        problems.append(LineProblem(str(path), number, f"NUL byte at column {text.index(chr(0)) + 1} (a binary file?)"))
        return None
    return text.rstrip("\r")


def raise_if_problems(problems: list[LineProblem]) -> None:
    if problems:
        raise InputFormatError(list(problems), getattr(problems, "omitted", 0), getattr(problems, "stopped", None))
