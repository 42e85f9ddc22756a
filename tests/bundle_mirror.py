"""A local mirror of a data bundle's public files, built at test time from what this machine holds:
the public repositories' snapshots (fetched git directories under $QRELKIT_SNAPSHOTS, each at
<owner>+<name>/repo; a test that needs one skips, saying so, when the variable is unset) and
../shared/data. Nothing of it is committed (research-use
terms); a test skips, naming what is absent, when a piece cannot be had."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import os
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from qrelkit.io.bundles import Bundle

SNAPSHOTS = Path(os.environ["QRELKIT_SNAPSHOTS"]) if os.environ.get("QRELKIT_SNAPSHOTS") else None


def snapshot_blob(owner_repo: str, commit: str, path: str) -> bytes | None:
    """A file of a public repository at a commit, from its fetched snapshot; None when not here."""
    if SNAPSHOTS is None:
        pytest.skip("QRELKIT_SNAPSHOTS is not set: it names the folder of fetched public repositories (<owner>+<name>/repo)")
    gitdir = SNAPSHOTS / owner_repo.replace("/", "+") / "repo"
    if not gitdir.is_dir():
        return None
    done = subprocess.run(["git", "--git-dir", str(gitdir), "show", f"{commit}:{path}"], capture_output=True)
    return done.stdout if done.returncode == 0 else None


def github_blob(url: str) -> bytes | None:
    """The bytes behind a raw.githubusercontent.com/<owner>/<repo>/<commit>/<path> URL, from its snapshot."""
    parts = urlsplit(url)
    if parts.hostname != "raw.githubusercontent.com":
        return None
    owner, repo, commit, path = parts.path.lstrip("/").split("/", 3)
    return snapshot_blob(f"{owner}/{repo}", commit, path)


def place(mirror: Path, url: str, data: bytes) -> Path:
    parts = urlsplit(url)
    target = mirror / parts.hostname / parts.path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def github_sources(bundle: Bundle, mirror: Path) -> None:
    """Every source of the bundle that lives in a public GitHub repository, from its snapshot (or skip)."""
    for source in bundle.sources:
        if urlsplit(source.url).hostname == "raw.githubusercontent.com":
            data = github_blob(source.url)
            if data is None:
                pytest.skip(f"no snapshot of {source.url} under {SNAPSHOTS} (fetch the repository to run this test)")
            place(mirror, source.url, data)


def dl19_mirror(bundle: Bundle, mirror: Path, shared: Path) -> None:
    """trec-dl-2019's sources: the GitHub ones from their snapshots; NIST's login-only run files
    stood in for by the shared cut runs, gzipped (the rule cuts a cut run to itself); UMBRELA's
    qrels, which have no public source, as a finished file of a data folder copy."""
    github_sources(bundle, mirror)
    for source in bundle.sources:
        if source.id.startswith("nist-") and source.url.startswith("https://trec.nist.gov/results/"):
            run = source.id[len("nist-") :]
            place(mirror, source.url, gzip.compress((shared / "runs" / f"{run}.run").read_bytes(), mtime=0))
    (mirror / "trec-dl-2019").mkdir(exist_ok=True)
    (mirror / "trec-dl-2019" / "umbrela-gpt4o.qrels").write_bytes((shared / "umbrela-gpt4o.qrels").read_bytes())


def a_bundle(tmp_path: Path, mirror: Path, files: dict[str, bytes], *, verified: bool = True) -> Bundle:
    """A two-file bundle whose sources are in ``mirror`` at example.org/<name>."""
    sources, items = [], []
    for name, data in files.items():
        url = f"https://example.org/data/{name}"
        (mirror / "example.org" / "data").mkdir(parents=True, exist_ok=True)
        (mirror / "example.org" / "data" / name).write_bytes(data)
        sources.append(
            {
                "id": name,
                "url": url,
                "size": len(data) if verified else None,
                "sha256": hashlib.sha256(data).hexdigest() if verified else None,
                "checksum": "verified: test" if verified else "unverified: test",
            }
        )
        items.append(
            {
                "path": name,
                "what": name,
                "rule": "copy",
                "inputs": [name],
                "sha256": hashlib.sha256(data).hexdigest() if verified else None,
                "checksum": "x",
            }
        )
    return Bundle.model_validate(
        {"name": "tiny", "title": "t", "description": "d", "licence": "l", "size": "s", "sources": sources, "files": items}
    )


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """http.server's handler (Range-less), logging nothing; `requests` records what was asked."""

    requests: list[tuple[str, str | None]] = []
    auths: list[str | None] = []  # the Authorization header of each request
    cut_after: dict[str, int] = {}  # path -> bytes to send before dropping the connection (once)
    status_for: dict[str, int] = {}  # path -> an error status to answer with
    redirect_to: dict[str, str] = {}  # path -> where a 302 sends the client
    trickle: dict[str, tuple[float, int]] = {}  # path -> (seconds between bytes, bytes sent before closing)

    def log_message(self, *args) -> None:  # noqa: ANN002
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).requests.append((self.path, self.headers.get("Range")))
        type(self).auths.append(self.headers.get("Authorization"))
        if self.path in type(self).status_for:
            self.send_error(type(self).status_for[self.path])
            return
        if self.path in type(self).redirect_to:
            self.send_response(302)
            self.send_header("Location", type(self).redirect_to[self.path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        start = 0
        wanted = self.headers.get("Range")
        if wanted and wanted.startswith("bytes=") and wanted.endswith("-"):
            start = int(wanted[len("bytes=") : -1])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        cut = type(self).cut_after.pop(self.path, None)
        body = data[start:]
        if self.path in type(self).trickle:
            delay, most = type(self).trickle[self.path]
            for index in range(min(most, len(body))):
                self.wfile.write(body[index : index + 1])
                self.wfile.flush()
                time.sleep(delay)
            self.close_connection = True
            return
        self.wfile.write(body if cut is None else body[:cut])
        if cut is not None:
            self.wfile.flush()
            self.close_connection = True


@contextmanager
def serve(folder: Path):
    """An HTTP server on 127.0.0.1 serving ``folder``; yields (base URL, handler class)."""
    handler = type("Handler", (_Quiet,), {"requests": [], "auths": [], "cut_after": {}, "status_for": {}, "redirect_to": {}, "trickle": {}})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: handler(*a, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()
