"""Downloading one public file to disk: resumed where an earlier try stopped (HTTP Range), bounded
in size, from the network or from a mirror that replaces it.

A mirror is a folder, a `file://` URL or an `http(s)://` base that holds each file at
`<host>/<path>` of its public URL (as `wget -x` lays it out), or under `.sources/<host>/<path>`
(the cache of a qrelkit data folder, so a data folder is a mirror). With a mirror the network is
never used: a file the mirror lacks is reported missing, not fetched from elsewhere.

Bytes arrive in `<dest>.part`, renamed to `dest` only when whole; a run that stopped part-way
(killed, a dropped connection) asks for the rest with `Range: bytes=N-` next time, from the same
place only (a part from one mirror is never completed from another: `pinned`). A `.part` that is a
link is refused, never followed.

Redirects: a mirror's only to its own origin (scheme, host and port); a public source's only to
https:// URLs of public hosts. A download that brings less than `STALL_BYTES` in any
`STALL_SECONDS` stops (what arrived is kept, to resume from), so a trickling server cannot hold a
fetch forever.
"""

from __future__ import annotations

import base64
import errno
import os
import stat
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote, urlsplit

from qrelkit.errors import FatalJobError, QrelkitError
from qrelkit.io.files import open_under_root, put_in_place
from qrelkit.io.folders import FolderRefused
from qrelkit.io.limits import limits, size_text
from qrelkit.io.net.urls import local_host_reason

ProgressCallback = Callable[[int, int], None]
CHUNK = 1 << 16
TIMEOUT = 60.0
STALL_SECONDS = 60.0  # a download that brings less than STALL_BYTES in this long is stopped
STALL_BYTES = 64 << 10
USER_AGENT = "qrelkit-data-fetch"


class DownloadError(FatalJobError):
    """One file could not be fetched (not found, a login needed, larger than it may be): the fetch
    goes on with the other files and ends with exit 3."""


class Unreachable(FatalJobError):
    """The network or the mirror cannot be reached at all: the fetch stops at once (exit 3)."""


class Interrupted(Unreachable):
    """The connection broke part-way: what arrived is kept, and the next run resumes from it."""


@dataclass(frozen=True)
class Mirror:
    """Where files come from instead of the network: a folder, or an http(s) base URL."""

    base: str

    @classmethod
    def parse(cls, text: str) -> Mirror:
        if text.startswith(("http://", "https://")):
            try:
                parts = urlsplit(text)
                parts.port  # noqa: B018 (a port that is no number raises here)
            except ValueError as exc:
                raise QrelkitError(f"--mirror {text}: not a URL ({exc})") from None
            if not parts.hostname:
                raise QrelkitError(f"--mirror {text}: names no host")
            return cls(text)
        folder = Path(unquote(urlsplit(text).path) if text.startswith("file://") else text).expanduser()
        if not folder.is_dir():
            raise QrelkitError(f"--mirror {text}: not a folder (nor an http:// or https:// URL)")
        return cls(str(folder.resolve()))

    @property
    def remote(self) -> bool:
        return self.base.startswith(("http://", "https://"))

    @property
    def local_root(self) -> Path | None:
        """The mirror's folder (a file read from it stays inside it), None for an http(s) mirror."""
        return None if self.remote else Path(self.base)

    def candidates(self, url: str) -> list[str]:
        """Where the mirror may hold the public file ``url``: `<host>/<path>`, then `.sources/<host>/<path>`."""
        parts = urlsplit(url)
        relative = f"{parts.hostname}{parts.path}"
        return [self.join(relative), self.join(f".sources/{relative}")]

    def join(self, relative: str) -> str:
        if self.remote:
            return self.base.rstrip("/") + "/" + relative.lstrip("/")
        return str(Path(self.base) / relative)

    def __str__(self) -> str:
        return self.base


def cache_path(root: Path, url: str) -> Path:
    """Where the data folder keeps the public file ``url`` (the mirror layout under `.sources/`)."""
    parts = urlsplit(url)
    relative = Path(unquote(parts.path.lstrip("/")))
    if ".." in relative.parts or not parts.hostname:
        raise DownloadError(f"{url}: not a URL a file can be kept under")
    return root / ".sources" / parts.hostname / relative


def shown_url(url: str) -> str:
    """The URL without any user:password part, for messages."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        return parts._replace(netloc=parts.hostname or "").geturl()
    return url


def part_path(dest: Path) -> Path:
    """Where the bytes of ``dest`` arrive before it is whole."""
    return dest.with_name(dest.name + ".part")


def download(
    url: str,
    dest: Path,
    *,
    mirror: Mirror | None = None,
    max_bytes: int | None = None,
    auth: str | None = None,
    progress: ProgressCallback | None = None,
    pinned: str | None = None,
    remember: Callable[[str], None] | None = None,
) -> str:
    """Fetch ``url`` (or the mirror's copy of it) to ``dest``, resuming `dest.part`; the place it
    came from. ``auth`` (`user:password`) is sent as HTTP basic auth, never to a mirror, never shown.
    With ``remember`` (called with each place before it is asked), `dest.part` is resumed only from
    ``pinned``, the place it came from (tried first); a part from anywhere else is dropped, never
    completed with another place's bytes. Without it, a part is resumed from whichever place has the file."""
    places = mirror.candidates(url) if mirror else [url]
    if pinned in places:
        places = [pinned, *(p for p in places if p != pinned)]
    for number, place in enumerate(places, 1):
        if remember is not None:
            if place != pinned:
                part_path(dest).unlink(missing_ok=True)  # unlink removes a link itself, never what it points to
                pinned = place
            remember(place)
        try:
            if fetch_place(
                place,
                dest,
                max_bytes=max_bytes,
                auth=None if mirror else auth,
                progress=progress,
                missing_ok=number < len(places),
                root=mirror.local_root if mirror else None,
                same_origin=mirror is not None,
            ):
                return place
        except Interrupted:
            raise
        except Unreachable as exc:
            raise Unreachable(
                f"{exc}; is the mirror up?" if mirror else f"{exc}; offline? fetch from a copy with --mirror DIR|URL"
            ) from None
    raise DownloadError(f"{shown_url(url)}: not in the mirror {mirror} (looked for {' and '.join(places)})")


def fetch_place(
    place: str,
    dest: Path,
    *,
    max_bytes: int | None = None,
    auth: str | None = None,
    progress: ProgressCallback | None = None,
    missing_ok: bool = True,
    root: Path | None = None,
    same_origin: bool = True,
    resume: bool = True,
) -> bool:
    """Fetch one place (an http(s) URL, a `file://` URL or a local path) to ``dest``, resuming
    `dest.part`; False when it is not there (and ``missing_ok``). A local file is read only from
    inside ``root`` when one is given (a mirror's folder); an http(s) place is redirected only to its
    own origin (``same_origin``, a mirror) or else only to https:// URLs of public hosts. ``resume``
    False: ``dest`` is a temporary of its own (a fresh name no later run asks for again), so a fetch
    that stops part-way (a trickle, a dropped connection) leaves no `.part` behind either."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    cap = max_bytes or limits().max_input_bytes
    try:
        try:
            if place.startswith(("http://", "https://")):
                found = _http(place, dest, cap, auth, progress, missing_ok=missing_ok, same_origin=same_origin)
            else:
                local = Path(unquote(urlsplit(place).path)) if place.startswith("file://") else Path(place)
                found = _local(local, dest, cap, progress, root)
                if not found and not missing_ok:
                    raise DownloadError(f"{local}: not found")
        except DownloadError:
            part_path(dest).unlink(missing_ok=True)  # what arrived is refused, not kept to resume from
            raise
        if found:
            put_in_place(part_path(dest), dest)
        return found
    except BaseException:
        if not resume:
            part_path(dest).unlink(missing_ok=True)
        raise


def _local(source: Path, dest: Path, cap: int, progress: ProgressCallback | None, root: Path | None) -> bool:
    if not source.is_file():
        return False
    try:
        src = open_under_root(source, root)
    except QrelkitError as exc:
        raise DownloadError(str(exc)) from None
    with src:
        total = os.fstat(src.fileno()).st_size
        if total > cap:
            raise DownloadError(f"{source}: {size_text(total)}, more than the {size_text(cap)} it may have")
        part = part_path(dest)
        have = _part_size(part)
        if have > total:
            part.unlink()
            have = 0
        with _openpart_path(part, append=True) as out:
            src.seek(have)
            _copy(src, out, have, total, cap, str(source), progress)
    return True


def _part_size(part: Path) -> int:
    """Bytes already in ``part`` (0 when none); a link or other non-file there is refused."""
    try:
        info = os.lstat(part)
    except FileNotFoundError:
        return 0
    if not stat.S_ISREG(info.st_mode):
        raise FolderRefused(
            f"{part} is {'a symbolic link' if stat.S_ISLNK(info.st_mode) else 'not a regular file'}: not followed (remove it)"
        )
    return info.st_size


def _openpart_path(part: Path, *, append: bool) -> BinaryIO:
    """``part`` opened to write (appended to, or from the start), never through a link."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(part, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FolderRefused(f"{part} is a symbolic link: not followed (remove it)") from None
        raise
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise FolderRefused(f"{part} is not a regular file: not written to")
    return os.fdopen(descriptor, "ab" if append else "wb")


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Redirects followed only to the same origin (a mirror), or only to https:// URLs of public hosts."""

    def __init__(self, same_origin: bool):
        self.same_origin = same_origin

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001, ANN201 (urllib's signature)
        old, new = urlsplit(req.full_url), urlsplit(newurl)
        if self.same_origin:
            allowed = new.scheme in ("http", "https") and _origin(old) == _origin(new)
            why = "not the mirror's own origin"
        else:
            reason = local_host_reason(new.hostname or "") if new.scheme == "https" and new.hostname else "no https:// URL"
            allowed, why = reason is None, f"{reason} (only https:// URLs of public hosts are followed)"
        if not allowed:
            raise DownloadError(f"{shown_url(req.full_url)}: redirected (HTTP {code}) to {shown_url(newurl)}: {why}; not followed")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _origin(parts) -> tuple[str, str, int | None]:  # noqa: ANN001 (a SplitResult)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def _http(
    url: str, dest: Path, cap: int, auth: str | None, progress: ProgressCallback | None, *, missing_ok: bool, same_origin: bool
) -> bool:
    part = part_path(dest)
    have = _part_size(part)
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if have:
        request.add_header("Range", f"bytes={have}-")
    if auth:
        request.add_unredirected_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        response = urllib.request.build_opener(_Redirects(same_origin)).open(request, timeout=TIMEOUT)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # what we hold is not a prefix the server recognises: start over
            part.unlink()
            return _http(url, dest, cap, auth, progress, missing_ok=missing_ok, same_origin=same_origin)
        if exc.code == 404:
            if missing_ok:
                return False
            raise DownloadError(f"{shown_url(url)}: not found (HTTP 404)") from None
        if exc.code in (401, 403):
            raise DownloadError(f"{shown_url(url)}: needs a login (HTTP {exc.code})") from None
        raise DownloadError(f"{shown_url(url)}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Unreachable(f"{urlsplit(url).hostname} could not be reached for {shown_url(url)} ({reason})") from None
    with response:
        if response.status == 206 and response.headers.get("Content-Range", "").startswith(f"bytes {have}-"):
            mode, start = "ab", have
        else:
            mode, start = "wb", 0  # the server sent the whole file
        length = response.headers.get("Content-Length")
        total = start + int(length) if length and length.isdigit() else 0
        if total > cap:
            raise DownloadError(f"{shown_url(url)}: {size_text(total)}, more than the {size_text(cap)} it may have")
        with _openpart_path(part, append=mode == "ab") as out:
            try:
                _copy(response, out, start, total, cap, shown_url(url), progress)
            except (TimeoutError, ConnectionError, urllib.error.URLError) as exc:
                raise Interrupted(
                    f"the connection for {shown_url(url)} broke after {out.tell():,} bytes ({exc}); run again to resume"
                ) from None
        if total and part.stat().st_size < total:
            raise Interrupted(
                f"the connection for {shown_url(url)} closed after {part.stat().st_size:,} of {total:,} bytes; run again to resume"
            )
    return True


def _copy(src, out, done: int, total: int, cap: int, what: str, progress: ProgressCallback | None) -> None:  # noqa: ANN001 (file-likes)
    window_start, window_bytes = time.monotonic(), 0
    read = getattr(src, "read1", src.read)  # what has arrived, not a wait for a whole chunk (a trickle is seen as it comes)
    while chunk := read(CHUNK):
        done += len(chunk)
        if done > cap:
            raise DownloadError(f"{what}: more than the {size_text(cap)} it may have")
        out.write(chunk)
        if progress:
            progress(done, total)
        window_bytes += len(chunk)
        elapsed = time.monotonic() - window_start
        if elapsed >= STALL_SECONDS:
            if window_bytes < STALL_BYTES:
                out.flush()
                raise Interrupted(
                    f"{what} brought {window_bytes:,} bytes in {elapsed:.0f} s, less than {size_text(STALL_BYTES)}: stopped after "
                    f"{done:,} bytes; run again to resume"
                )
            window_start, window_bytes = time.monotonic(), 0
