"""The bodies of an endpoint's answers, read within bounds whatever the server sends: at most
``max_bytes`` once decoded (a 1 MB gzip body may inflate to 1 GiB: the cap counts what it becomes),
decoded in small steps (never a whole bomb at once), and within a total deadline from the moment the
request was sent (the HTTP client's own timeout is per read, so a server trickling bytes never trips it).

One transport for the HTTP clients qrelkit sends through (the openai package's, built on httpx or its
successor httpx2), synchronous (the Batch API client) or not (the `openai` judge). It asks for gzip
or deflate only, decodes them itself, and hands the client a plain body: the client never decodes.
"""

from __future__ import annotations

import importlib
import time
import zlib
from collections.abc import Iterator
from typing import Any

from qrelkit.judges.http import DeadlineExceeded, MalformedResponse, ResponseTooLarge

ACCEPTED_ENCODINGS = "gzip, deflate"
STEP = 1 << 16  # bytes inflated at a time: a bomb is stopped within one step of its cap


class DecodedBody:
    """One body's bytes as they arrive, decoded (identity, gzip, deflate) and counted; the cap and
    the deadline are checked at every step."""

    def __init__(self, encoding: str, max_bytes: int, deadline: float, seconds: float, clock: Any = time.monotonic):
        self.encoding = ",".join(
            part.strip().lower() for part in encoding.split(",") if part.strip() and part.strip().lower() != "identity"
        )
        self.max_bytes, self.deadline, self.seconds, self.clock = max_bytes, deadline, seconds, clock
        self.decoded = 0
        self.inflater: Any = None
        self.pending = b""  # the first bytes of a deflate body, until its header says which deflate it is

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        self._in_time()
        if not self.encoding:
            yield self._counted(chunk)
            return
        if self.encoding not in ("gzip", "x-gzip", "deflate"):
            raise MalformedResponse(f"the answer's body is encoded as {self.encoding!r}; only gzip and deflate are read")
        if self.inflater is None:
            self.pending += chunk
            if self.encoding == "deflate" and len(self.pending) < 2:
                return
            self.inflater = self._inflater(self.pending)
            chunk, self.pending = self.pending, b""
        yield from self._inflate(chunk)

    def finish(self) -> Iterator[bytes]:
        if self.pending:  # a deflate body of one byte
            self.inflater = self._inflater(self.pending)
            yield from self._inflate(self.pending)
        if self.inflater is not None:
            try:
                rest = self.inflater.flush()
            except zlib.error as exc:
                raise MalformedResponse(f"the answer's {self.encoding} body is corrupt ({exc})") from None
            if rest:
                yield self._counted(rest)

    def _inflater(self, head: bytes) -> Any:
        if self.encoding != "deflate":
            return zlib.decompressobj(wbits=31)
        zlib_wrapped = len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0
        return zlib.decompressobj(wbits=15 if zlib_wrapped else -15)  # servers send both kinds as `deflate`

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        try:
            while data:
                out = self.inflater.decompress(data, STEP)
                if out:
                    yield self._counted(out)
                self._in_time()
                data = self.inflater.unconsumed_tail
                if self.inflater.eof:
                    data = self.inflater.unused_data.lstrip(b"\x00")
                    if not data or self.encoding == "deflate":
                        return  # what follows the end of the stream is not part of the body
                    self.inflater = zlib.decompressobj(wbits=31)  # the next gzip member
        except zlib.error as exc:
            raise MalformedResponse(f"the answer's {self.encoding} body is corrupt ({exc})") from None

    def _counted(self, data: bytes) -> bytes:
        self.decoded += len(data)
        if self.decoded > self.max_bytes:
            raise ResponseTooLarge(
                f"the answer's body is larger than {self.max_bytes:,} bytes (QRELKIT_MAX_RESPONSE_BYTES); not read further"
            )
        return data

    def _in_time(self) -> None:
        if self.clock() > self.deadline:
            raise DeadlineExceeded(self.seconds)


def bounded_client(timeout: float, max_bytes: int, deadline: float | None = None, *, asynchronous: bool = False) -> Any:
    """An HTTP client for the openai package: no redirect followed (a 3xx is an error the caller
    names; a prompt is never replayed to another place), each answer's body at most ``max_bytes``
    once decoded and whole within ``deadline`` seconds of its request (default: ``timeout``)."""
    import openai

    # the HTTP library the installed openai client is built on (httpx, or httpx2 in later releases)
    httpx: Any = importlib.import_module(openai.DefaultHttpxClient.__mro__[1].__module__.split(".")[0])
    seconds = timeout if deadline is None else deadline

    def body_of(response: Any, started: float) -> DecodedBody:
        body = DecodedBody(response.headers.get("content-encoding", ""), max_bytes, started + seconds, seconds)
        for header in ("content-encoding", "content-length"):  # taken over: the client gets the body decoded, no encoding named
            if header in response.headers:
                del response.headers[header]
        return body

    class Body:
        def __init__(self, stream: Any, body: DecodedBody):
            self.stream, self.body = stream, body

    class SyncBody(Body, httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            for chunk in self.stream:
                yield from self.body.feed(chunk)
            yield from self.body.finish()

        def close(self) -> None:
            self.stream.close()

    class AsyncBody(Body, httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            async for chunk in self.stream:
                for piece in self.body.feed(chunk):
                    yield piece
            for piece in self.body.finish():
                yield piece

        async def aclose(self) -> None:
            await self.stream.aclose()

    class Sync(httpx.HTTPTransport):
        def handle_request(self, request: Any) -> Any:
            started = time.monotonic()
            response = super().handle_request(request)
            response.stream = SyncBody(response.stream, body_of(response, started))
            return response

    class Async(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: Any) -> Any:
            started = time.monotonic()
            response = await super().handle_async_request(request)
            response.stream = AsyncBody(response.stream, body_of(response, started))
            return response

    headers = {"Accept-Encoding": ACCEPTED_ENCODINGS}
    if asynchronous:
        return httpx.AsyncClient(transport=Async(), timeout=timeout, follow_redirects=False, headers=headers)
    return httpx.Client(transport=Sync(), timeout=timeout, follow_redirects=False, headers=headers)
