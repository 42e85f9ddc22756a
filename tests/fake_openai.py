"""A scripted OpenAI-compatible server on 127.0.0.1, for what a real server will not do on demand.

Requests whose body contains a marker (a test puts "[d03]" in a document's text) take the
next reply scripted for that marker; everything else gets a chat completion answering
"Relevance: <grade>" with grade = the marker's last digit mod 4 (or "##final score: <grade>" when
the prompt asks for that form, as UMBRELA's does). A model named in ``broken_models`` answers
404 "model not found", as a real endpoint does for a model it does not serve. Every request is
recorded.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

MARKER = re.compile(r"\[(d\d+)\]")
PROMPT_TOKENS, COMPLETION_TOKENS, FINGERPRINT = 120, 4, "fp_fake_1"
# Top logprobs at the grade position: p(g) = 0.6, p(g+1 mod 4) = 0.3, and 0.1 on a non-grade token.
P_GRADE, P_NEXT, P_OTHER = 0.6, 0.3, 0.1


def grade_of(marker: str) -> int:
    return int(marker[-1]) % 4


def expected_of(marker: str) -> float:
    g = grade_of(marker)
    return (g * P_GRADE + ((g + 1) % 4) * P_NEXT) / (P_GRADE + P_NEXT)


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that does not log each request to stderr."""

    def log_message(self, *args: Any) -> None:
        pass

    def send_endless(self, stopping: threading.Event, filler: bytes = b"[", pause: float = 0.01) -> None:
        """A 200 JSON answer whose chunked body never ends (64 KiB of ``filler`` every ``pause`` s)
        until ``stopping`` is set or the client hangs up (HTTP/1.1 handlers only)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while not stopping.wait(pause):
                self.wfile.write(b"10000\r\n" + filler * 0x10000 + b"\r\n")
        except OSError:
            pass
        self.close_connection = True


def bomb(encoding: str, size: int = 64 << 20) -> bytes:
    """``size`` bytes of JSON-ish text, compressed as ``encoding`` ("gzip" or "deflate": tens of KB on the wire)."""
    text = b"[" * size
    return gzip.compress(text) if encoding == "gzip" else zlib.compress(text)


def serve(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """A threading HTTP server on a free loopback port, serving from a daemon thread."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # None: a completion; str or bytes: sent as it is; dict: as JSON
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering: longer than the client's timeout is a hang
    before: Callable[[], None] | None = None  # run first, e.g. send SIGTERM to the test process
    answer: str | None = None  # the completion's text (default "Relevance: <grade>")
    finish_reason: str = "stop"
    trickle: float = 0.0  # seconds between the body's bytes: a server that is never idle long enough to time out
    endless: bool = False  # a chunked 200 whose body never ends (64 KiB chunks, at most 32 MB a second)


@dataclass
class Request:
    at: float
    marker: str | None
    headers: dict[str, str]
    body: dict[str, Any]


def completion(request: dict[str, Any], marker: str | None, reply: Reply) -> dict[str, Any]:
    grade = grade_of(marker) if marker else 2
    asked = "final score" in json.dumps(request.get("messages", []))  # UMBRELA's answer form
    text = reply.answer if reply.answer is not None else f"##final score: {grade}" if asked else f"Relevance: {grade}"
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": reply.finish_reason}
    if request.get("logprobs"):
        top = [
            {"token": str(grade), "logprob": math.log(P_GRADE)},
            {"token": str((grade + 1) % 4), "logprob": math.log(P_NEXT)},
            {"token": "The", "logprob": math.log(P_OTHER)},
        ]
        tokens = [("Relevance", -0.01), (":", -0.01), (" ", -0.02), (str(grade), math.log(P_GRADE))]
        choice["logprobs"] = {
            "content": [
                {"token": t, "logprob": lp, "bytes": None, "top_logprobs": top if i == 3 else [{"token": t, "logprob": lp}]}
                for i, (t, lp) in enumerate(tokens)
            ]
        }
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model"),
        "system_fingerprint": FINGERPRINT,
        "choices": [choice],
        "usage": {
            "prompt_tokens": PROMPT_TOKENS,
            "completion_tokens": COMPLETION_TOKENS,
            "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
        },
    }


class FakeOpenAI:
    """``answer``: the completion's text for a request body (unless a reply is scripted for its
    marker), e.g. a judge that does what a passage tells it."""

    def __init__(self, answer: Callable[[dict[str, Any]], str] | None = None) -> None:
        self.answer = answer
        self.requests: list[Request] = []
        self.scripts: dict[str, deque[Reply]] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.broken_models: set[str] = set()

    def script(self, marker: str, *replies: Reply) -> None:
        with self.lock:
            self.scripts.setdefault(marker, deque()).extend(replies)

    def requests_for(self, marker: str) -> list[Request]:
        return [r for r in self.requests if r.marker == marker]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def _take(self, raw: bytes, headers: dict[str, str]) -> tuple[Request, Reply]:
        body = json.loads(raw or b"{}")
        found = MARKER.search(json.dumps(body.get("messages", [])))
        marker = found.group(1) if found else None
        with self.lock:
            queue = self.scripts.get(marker or "")
            reply = queue.popleft() if queue else Reply() if self.answer is None else Reply(answer=self.answer(body))
            request = Request(time.monotonic(), marker, headers, body)
            self.requests.append(request)
        return request, reply

    def __enter__(self) -> FakeOpenAI:
        fake = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._send(200, json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode(), {})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request, reply = fake._take(raw, {k.lower(): v for k, v in self.headers.items()})
                if request.body.get("model") in fake.broken_models:
                    model = request.body["model"]
                    error = {"message": f"The model `{model}` does not exist", "type": "invalid_request_error", "code": "model_not_found"}
                    self._send(404, json.dumps({"error": error}).encode(), {})
                    return
                if reply.before is not None:
                    reply.before()
                if reply.delay and fake.stopping.wait(reply.delay):
                    return
                if reply.body is None:
                    payload = json.dumps(completion(request.body, request.marker, reply)).encode()
                elif isinstance(reply.body, bytes):  # sent as they are (a compressed body, with its Content-Encoding header)
                    payload = reply.body
                elif isinstance(reply.body, str):
                    payload = reply.body.encode()
                else:
                    payload = json.dumps(reply.body).encode()
                if reply.endless:
                    self._send_endless()
                    return
                self._send(reply.status, payload, reply.headers, reply.trickle)

            def _send_endless(self) -> None:
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    chunk = b"[" * 65536
                    while not fake.stopping.wait(0.002):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass  # the client stopped reading
                self.close_connection = True

            def _send(self, status: int, payload: bytes, headers: dict[str, str], trickle: float = 0.0) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    if not trickle:
                        self.wfile.write(payload)
                        return
                    for index in range(len(payload)):
                        self.wfile.write(payload[index : index + 1])
                        self.wfile.flush()
                        if fake.stopping.wait(trickle):
                            return
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self.server, self.thread = serve(Handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


# -- jobs that judge text against a fake server ----------------------------------------------------


def write_text_collection(folder: Path, topics: dict[str, str], docs: dict[str, str], pairs: Iterable[tuple[str, str]]) -> None:
    """topics.tsv, docs.jsonl and pairs.txt in ``folder``."""
    (folder / "topics.tsv").write_text("".join(f"{qid}\t{text}\n" for qid, text in topics.items()))
    (folder / "docs.jsonl").write_text("".join(json.dumps({"docid": d, "text": t}) + "\n" for d, t in docs.items()))
    (folder / "pairs.txt").write_text("".join(f"{qid} {docid}\n" for qid, docid in pairs))


def openai_job(folder: Path, judge: dict[str, Any], *, name: str = "job", **spec: Any) -> Path:
    """NAME.yaml judging that collection with the `openai` judge (``judge``: its options) and the
    trec-dl-graded template; ``spec`` adds or replaces job keys."""
    body = {
        "database": "j.duckdb",
        "collection": {"topics": "topics.tsv", "documents": "docs.jsonl"},
        "pool": {"pairs": "pairs.txt"},
        "judge": {"name": "openai", "options": judge},
        "template": "trec-dl-graded",
        **spec,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


def judgment_rows(database: str | Path) -> dict[str, dict[str, Any]]:
    """docid -> its judgments row, checking that no pair was judged twice."""
    from qrelkit.storage import Store

    with Store(database, read_only=True) as store:
        cursor = store.con.execute("SELECT * FROM judgments")
        names = [d[0] for d in cursor.description]
        found = [dict(zip(names, row)) for row in cursor.fetchall()]
    assert len(found) == len({r["docid"] for r in found})  # one judgment per pair, never two
    return {r["docid"]: r for r in found}
