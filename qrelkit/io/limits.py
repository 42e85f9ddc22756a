"""Bounds on what one input may cost: how big a file (or what a gzip inflates to) may be, how far a
gzip may inflate, how long a line, how much text goes to a tokenizer, how much of a model's answer
is stored. Each bound is generous for real data and stops hostile or broken input with one message.

Every limit can be changed through an environment variable (read when a file is opened, so a test
or a user can set it per process):

| variable | default | bounds |
|---|---|---|
| `QRELKIT_MAX_INPUT_BYTES` | 8 GiB | a file's size, or what a compressed file inflates to |
| `QRELKIT_MAX_INFLATE_RATIO` | 100 | inflated / compressed bytes, checked once 64 MiB are inflated |
| `QRELKIT_MAX_LINE_BYTES` | 16 MiB | one line of a text file (JSONL documents included) |
| `QRELKIT_MAX_NESTING` | 100 | levels of nesting in a JSON record or a YAML file |
| `QRELKIT_MAX_CONFIG_BYTES` | 4 MiB | a job or template YAML file |
| `QRELKIT_MAX_TEXT_CHARS` | 100,000 | a document's text given to a tokenizer (its models keep far fewer tokens) |
| `QRELKIT_MAX_ANSWER_CHARS` | 65,536 | a model answer as stored (head and tail kept, the cut noted) |
| `QRELKIT_MAX_PROBLEMS` | 1,000,000 | problems counted in one file before reading it stops ("and more") |
| `QRELKIT_MAX_RESPONSE_BYTES` | 16 MiB | the body of one answer from a model endpoint |
"""

from __future__ import annotations

import io
import os
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, BinaryIO

from qrelkit.errors import InputFormatError, LineProblem, QrelkitError
from qrelkit.io.files import open_regular

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
GZIP_MAGIC = b"\x1f\x8b"
READ_CHUNK = 256 * KiB
# A small file may inflate a lot (a run of one repeated tag); the ratio matters only once the
# inflated bytes could cost real memory or time.
RATIO_FLOOR_BYTES = 64 * MiB


@dataclass(frozen=True)
class Limits:
    max_input_bytes: int = 8 * GiB
    max_inflate_ratio: float = 100.0
    max_line_bytes: int = 16 * MiB
    max_nesting: int = 100
    max_config_bytes: int = 4 * MiB
    max_text_chars: int = 100_000
    max_answer_chars: int = 65_536
    max_problems: int = 1_000_000
    max_response_bytes: int = 16 * MiB

    @staticmethod
    def variable(name: str) -> str:
        return "QRELKIT_" + name.upper()


def limits() -> Limits:
    """The limits in force: the defaults, each overridden by its `QRELKIT_...` variable."""
    values: dict[str, float | int] = {}
    for item in fields(Limits):
        variable = Limits.variable(item.name)
        raw = os.environ.get(variable, "").strip().replace("_", "")
        if not raw:
            continue
        try:
            value = float(raw) if item.type == "float" else int(raw)
        except ValueError:
            raise QrelkitError(
                f"{variable}={os.environ[variable]!r}: expected a {'number' if item.type == 'float' else 'whole number'}"
            ) from None
        if not value > 0:
            raise QrelkitError(f"{variable}={os.environ[variable]!r}: must be above 0")
        values[item.name] = value
    return Limits(**values)  # type: ignore[arg-type]


def size_text(n: float) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


class StreamError(InputFormatError):
    """The bytes of a file could not be read as promised (a truncated or corrupt gzip, a size cap);
    raised mid-stream, so a line reader can add the line it was reading."""

    def __init__(self, path: str | Path, reason: str):
        self.path, self.reason = str(path), reason
        super().__init__([LineProblem(str(path), 0, reason)])


class _Inflating(io.RawIOBase):
    """gzip members (RFC 1952) inflated as they are read, with the caps on size and ratio; a
    truncated or corrupt stream is a StreamError naming the file, never zlib's or gzip's own."""

    def __init__(self, raw: BinaryIO, path: Path, caps: Limits):
        self.raw, self.path, self.caps = raw, path, caps
        self.inflater = zlib.decompressobj(wbits=31)
        self.pending = b""  # compressed bytes not yet inflated
        self.in_member = False
        self.compressed = 0
        self.inflated = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._next(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _next(self, want: int) -> bytes:
        while True:
            if self.pending:
                if not self.in_member:
                    self.pending = self.pending.lstrip(b"\x00")  # zero padding between members, as gzip allows
                    if not self.pending:
                        continue
                    self.in_member = True
                try:
                    out = self.inflater.decompress(self.pending, want)
                except zlib.error as exc:
                    raise StreamError(self.path, f"corrupt gzip data ({exc}) after {size_text(self.inflated)} of text") from None
                if self.inflater.eof:
                    # The next member's bytes are in unused_data; an output-limited call that ended a
                    # member leaves the same bytes in unconsumed_tail too (CPython), so it is not added.
                    self.pending = self.inflater.unused_data
                    self.inflater = zlib.decompressobj(wbits=31)
                    self.in_member = False
                else:
                    self.pending = self.inflater.unconsumed_tail
                if out:
                    self._count(len(out))
                    return out
                continue
            chunk = self.raw.read(READ_CHUNK)
            if not chunk:
                if self.in_member:
                    raise StreamError(self.path, f"the gzip data is truncated (the file ends after {size_text(self.inflated)} of text)")
                return b""
            self.compressed += len(chunk)
            self.pending = chunk

    def _count(self, n: int) -> None:
        self.inflated += n
        caps = self.caps
        if self.inflated > caps.max_input_bytes:
            raise StreamError(
                self.path,
                f"inflates to more than {size_text(caps.max_input_bytes)}, the limit "
                f"({Limits.variable('max_input_bytes')}; raise it if the file is genuine)",
            )
        if self.inflated > RATIO_FLOOR_BYTES and self.inflated > caps.max_inflate_ratio * self.compressed:
            raise StreamError(
                self.path,
                f"inflates more than {caps.max_inflate_ratio:g} times ({size_text(self.inflated)} from "
                f"{size_text(self.compressed)} read), a decompression bomb? ({Limits.variable('max_inflate_ratio')} "
                "raises the limit if the file is genuine)",
            )


@contextmanager
def open_input(path: str | Path) -> Iterator[BinaryIO]:
    """A file's bytes as a buffered stream, gunzipped as it is read when the file is gzip: only
    regular files (a FIFO, a device or a folder is refused without blocking), at most
    `max_input_bytes` of content, and a gzip at most `max_inflate_ratio` times its size. Problems
    are an InputFormatError naming the file (a StreamError when found mid-stream)."""
    path = Path(path)
    caps = limits()
    raw = open_regular(path)
    try:
        head = raw.read(2)
        raw.seek(0)
        if head == GZIP_MAGIC:
            yield io.BufferedReader(_Inflating(raw, path, caps), buffer_size=READ_CHUNK)
            return
        size = os.fstat(raw.fileno()).st_size
        if size > caps.max_input_bytes:
            raise StreamError(
                path,
                f"has {size_text(size)}, more than the limit of {size_text(caps.max_input_bytes)} ({Limits.variable('max_input_bytes')})",
            )
        yield raw
    finally:
        raw.close()


class _Chunks(io.RawIOBase):
    """An iterator of byte chunks (a response body as it arrives) read as a stream."""

    def __init__(self, chunks: Iterator[bytes]):
        self.chunks, self.rest = chunks, b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.rest:
            chunk = next(self.chunks, None)
            if chunk is None:
                return 0
            self.rest = bytes(chunk)
        taken, self.rest = self.rest[: len(buffer)], self.rest[len(buffer) :]
        buffer[: len(taken)] = taken
        return len(taken)


def iter_chunk_lines(chunks: Iterable[bytes], max_line_bytes: int, *, stop: bool = False) -> Iterator[bytes | None]:
    """`iter_capped_lines` over a stream of chunks: each byte looked at once, whatever the chunks'
    sizes, and a line longer than ``max_line_bytes`` (None) never held whole."""
    return iter_capped_lines(io.BufferedReader(_Chunks(iter(chunks)), buffer_size=READ_CHUNK), max_line_bytes, stop=stop)


def iter_capped_lines(stream: BinaryIO, max_line_bytes: int, *, stop: bool = False) -> Iterator[bytes | None]:
    """The stream's lines (without the newline); None for a line longer than ``max_line_bytes``,
    whose bytes are skipped without being held (``stop``: None is the last thing yielded, nothing of
    the line is read further, for a caller that stops there: an endless line is never read on)."""
    while True:
        line = stream.readline(max_line_bytes + 1)
        if not line:
            return
        if line.endswith(b"\n"):
            yield line[:-1]
        elif len(line) <= max_line_bytes:
            yield line  # the last line, without a newline
        elif stop:
            yield None
            return
        else:
            while (rest := stream.readline(MiB)) and not rest.endswith(b"\n"):
                pass
            yield None


def cut_text(text: str, max_chars: int | None = None) -> str:
    """A document's text as given to a tokenizer: at most ``max_chars`` characters (the models keep
    a few hundred tokens, so the cut never changes what they see; it bounds the tokenizer's work)."""
    return text[: max_chars or limits().max_text_chars]


def cut_answer(text: str, max_chars: int | None = None) -> tuple[str, int]:
    """A model answer to store: the head and the tail when it is longer than ``max_chars``, with a
    marker in the middle; and how many characters were left out (0 when none)."""
    limit = max_chars or limits().max_answer_chars
    if len(text) <= limit:
        return text, 0
    left_out = len(text) - limit
    head = limit // 2
    marker = f"\n[... {left_out} characters cut by qrelkit ...]\n"
    return text[:head] + marker + text[len(text) - (limit - head) :], left_out
