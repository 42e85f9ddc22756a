"""Fetching a bundle into its folder: each public source downloaded once into the data folder's
`.sources/` cache, each bundle file made from them by its rule, and every file checked against its
sha256 before it is used or kept.

A file already in place is checked first: when its sha256 is not the manifest's (or, for an
unverified file, not the one recorded on first download) it is refused and made again. A download
whose checksum is wrong is refused and fetched once more from scratch; a second failure is
reported, never kept. What was recorded lives in `.qrelkit-bundle.json` in the bundle's folder.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from qrelkit.errors import FatalJobError, QrelkitError
from qrelkit.io.bundles import STATE_FILE, Bundle, BundleFile, Source
from qrelkit.io.derive import RULES, apply_rule
from qrelkit.io.files import exclusive_temporary, put_in_place, read_owned, write_atomically
from qrelkit.io.folders import FolderRefused, below, inside, make_folders
from qrelkit.io.lines import file_sha256
from qrelkit.io.net.download import DownloadError, Mirror, ProgressCallback, cache_path, download, fetch_place, part_path, shown_url

ProgressFactory = Callable[[str], AbstractContextManager[ProgressCallback | None]]
PROGRESS_FROM_BYTES = 1 << 20  # a progress line only for downloads larger than this


@dataclass
class FileReport:
    """What happened to one bundle file: `present` (already there and checked), `fetched` (from a
    mirror's copy of the bundle), `built` (from public sources by its rule), `missing` or `failed`."""

    path: str
    status: str
    verified: bool
    sha256: str | None = None
    notes: list[str] = field(default_factory=list)

    def refused(self, note: str, status: str = "failed") -> FileReport:
        """This report, ``status`` (failed or missing) and why."""
        self.status = status
        self.notes.append(note)
        return self


@dataclass
class FetchReport:
    bundle: str
    folder: Path
    files: list[FileReport]
    images: dict[str, Any] | None = None

    @property
    def failed(self) -> list[FileReport]:
        return [f for f in self.files if f.status in ("missing", "failed")]

    def failure(self) -> str:
        """One line naming the files that could not be had."""
        names = ", ".join(f.path for f in self.failed[:5]) + (" …" if len(self.failed) > 5 else "")
        return f"{len(self.failed)} file(s) of {self.bundle} could not be had: {names} (see above)"

    def to_dict(self) -> dict[str, Any]:
        return {"bundle": self.bundle, "folder": str(self.folder), "files": [asdict(f) for f in self.files], "images": self.images}


MAX_STATE_BYTES = 256 << 20  # a record of every pooled image of a large bundle stays far below this


class State:
    """The bundle folder's record: the sha256 of each file and source as first fetched, each image
    fetched, and where a partly downloaded source is coming from (`partials`: URL -> place)."""

    KINDS = ("files", "sources", "images", "partials")

    def __init__(self, folder: Path):
        self.path = folder / STATE_FILE
        self.data: dict[str, Any] = {kind: {} for kind in self.KINDS}
        raw = read_owned(self.path, MAX_STATE_BYTES)  # a link is refused, not followed
        if raw is None:
            return
        try:
            loaded = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than can be read
            loaded = None
        if isinstance(loaded, dict):  # anything else is a damaged record: everything is checked against the manifest again
            self.data.update({k: v for k, v in loaded.items() if k in self.KINDS and isinstance(v, dict)})

    def recorded(self, kind: str, key: str) -> str | None:
        entry = self.data[kind].get(key)
        sha = entry.get("sha256") if isinstance(entry, dict) else None
        return sha if isinstance(sha, str) else None

    def record(self, kind: str, key: str, **values: Any) -> None:
        self.data[kind][key] = {**values, "recorded": datetime.now(UTC).isoformat(timespec="seconds")}

    def forget(self, kind: str, key: str) -> None:
        self.data[kind].pop(key, None)

    def save(self) -> None:
        if not any(self.data.values()):  # nothing is had: no record of nothing (a failed first fetch leaves no folder behind)
            if self.path.is_file() and not self.path.is_symlink():
                self.path.unlink()
            return
        text = json.dumps(self.data, indent=1, sort_keys=True)
        # the folder is made again where a fetch that had nothing took it back (images may follow)
        write_atomically(self.path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


class Fetcher:
    def __init__(self, bundle: Bundle, root: Path, *, mirror: Mirror | None = None, progress: ProgressFactory | None = None):
        self.bundle, self.root, self.mirror, self.progress = bundle, root, mirror, progress
        # the folders this fetch makes, removed again when it had nothing to put in them
        self.made = [folder for folder in (root, root / ".sources", root / bundle.name) if not folder.exists()]
        root.mkdir(parents=True, exist_ok=True)  # the data folder itself is the user's choice; below it, no link is followed
        self.folder = make_folders(root, bundle.name, f"the folder of {bundle.name}")
        self.state = State(self.folder)

    # -- files -------------------------------------------------------------------------------

    def fetch_files(self) -> list[FileReport]:
        reports: list[FileReport] = []
        try:
            for item in self.bundle.files:
                reports.append(self.fetch_file(item, failed={r.path for r in reports if r.status in ("missing", "failed")}))
        finally:
            self.state.save()
            self.remove_empty_folders()
        return reports

    def remove_empty_folders(self) -> None:
        """Take back the empty folders a fetch that had nothing left: each source's folders under
        `.sources/` (a download that never arrived), and the bundle and data folders it made."""
        sources = self.root / ".sources"
        for source in self.bundle.sources:
            try:
                folder = cache_path(self.root, source.url).parent
            except DownloadError:
                continue
            while folder != sources and sources in folder.parents and _remove_if_empty(folder):
                folder = folder.parent
        for folder in (self.folder, sources, self.root):
            if folder in self.made:
                _remove_if_empty(folder)

    def expected(self, item: BundleFile) -> str | None:
        return item.sha256 or self.state.recorded("files", item.path)

    def fetch_file(self, item: BundleFile, failed: set[str]) -> FileReport:
        target = inside(self.folder, item.path, f"{self.bundle.name}/{item.path}")
        report = FileReport(item.path, "present", item.verified)
        expected = self.expected(item)
        if target.is_file():
            actual = file_sha256(target)
            if expected is None or actual == expected:
                return self._accept(item, report, actual, "already here")
            report.notes.append(f"refused the copy already here: sha256 {actual[:12]}… is not the expected {expected[:12]}…; made again")
            target.unlink()
        if self.mirror is not None and self._from_mirror(item, target, report):
            return report
        if item.rule == "manual":
            return report.refused(
                f"no public source is known for this file; put it at {target} (or fetch with --mirror from a copy)", "missing"
            )
        blocked = [name for name in item.inputs if name in failed]
        if blocked:
            return report.refused(f"not made: its input {', '.join(blocked)} is missing")
        try:
            inputs = [self.input_path(name, report) for name in item.inputs]
        except DownloadError as exc:
            return report.refused(str(exc))
        return self._build(item, target, inputs, report)

    def _make_parent(self, target: Path, item: BundleFile) -> None:
        if target.parent != self.folder:
            make_folders(self.folder, below(self.folder, target.parent), item.path)

    def _from_mirror(self, item: BundleFile, target: Path, report: FileReport) -> bool:
        """A mirror that is a copy of a data folder holds the finished file at `<bundle>/<path>`."""
        assert self.mirror is not None
        place = self.mirror.join(f"{self.bundle.name}/{item.path}")
        self._make_parent(target, item)
        temporary = exclusive_temporary(target)
        try:
            if not fetch_place(place, temporary, root=self.mirror.local_root, resume=False):
                return False
            actual, expected = file_sha256(temporary), self.expected(item)
            if expected is not None and actual != expected:
                whose = "the manifest's" if item.verified else "the one recorded on first fetch"
                report.notes.append(f"refused the mirror's {item.path}: sha256 {actual[:12]}… is not {whose} {expected[:12]}…")
                return False
            put_in_place(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)
        report.status = "fetched"
        self._accept(item, report, actual, f"from the mirror's copy {place}")
        return True

    def _build(self, item: BundleFile, target: Path, inputs: list[Path], report: FileReport) -> FileReport:
        if item.rule not in RULES:
            return report.refused(f"qrelkit knows no rule {item.rule!r} (a newer manifest?)")
        self._make_parent(target, item)
        temporary = exclusive_temporary(target)
        try:
            try:
                apply_rule(item.rule, inputs, item.options, temporary)
            except QrelkitError as exc:
                if isinstance(exc, FatalJobError | FolderRefused):  # the network is gone, or a link: stop, as a download would
                    raise
                report.refused(str(exc))
                self._drop_unverified_sources(item, report)
                return report
            actual, expected = file_sha256(temporary), self.expected(item)
            if expected is not None and actual != expected:
                whose = "the manifest's" if item.verified else "the one recorded on first fetch"
                return report.refused(
                    f"refused: made by rule {item.rule!r}, it has sha256 {actual[:12]}…, not {whose} {expected[:12]}… "
                    "(a source changed, or the rule reads it differently)"
                )
            put_in_place(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)
        report.status = "built"
        return self._accept(item, report, actual, f"made by rule {item.rule!r}")

    def _drop_unverified_sources(self, item: BundleFile, report: FileReport) -> None:
        """A rule refused its inputs (a decompression bomb, another form): the unverified sources among
        them are not kept, nor their recorded sha256, so a later fetch gets them anew instead of being
        held to what was refused."""
        for name in item.inputs:
            source = self.bundle.source(name)
            if source is None or source.verified:
                continue
            cache_path(self.root, source.url).unlink(missing_ok=True)
            self.state.forget("sources", source.url)
            report.notes.append(f"its unverified source {shown_url(source.url)} was not kept: the next fetch downloads it again")

    def _accept(self, item: BundleFile, report: FileReport, actual: str, how: str) -> FileReport:
        report.sha256 = actual
        if item.verified:
            report.notes.insert(0, f"{how}; sha256 matches the manifest (verified)")
        elif self.state.recorded("files", item.path) == actual:
            report.notes.insert(0, f"{how}; UNVERIFIED, sha256 {actual[:12]}… as recorded on first fetch")
        else:
            report.notes.insert(
                0,
                f"{how}; UNVERIFIED (no public checksum; `qrelkit data list {self.bundle.name}` says why): sha256 {actual[:12]}… recorded",
            )
        if item.reference_sha256 is not None:
            report.notes.append(
                "equals the copy behind this project's published figures"
                if actual == item.reference_sha256
                else f"differs from the copy behind this project's published figures (sha256 {item.reference_sha256[:12]}…): "
                "they may not reproduce"
            )
        self.state.record("files", item.path, sha256=actual, verified=item.verified)
        return report

    # -- sources -----------------------------------------------------------------------------

    def input_path(self, name: str, report: FileReport) -> Path:
        """An input of a rule: a source (downloaded and checked) or an earlier file of the bundle."""
        source = self.bundle.source(name)
        return self.source_path(source, report) if source is not None else inside(self.folder, name, f"{self.bundle.name}/{name}")

    def source_path(self, source: Source, report: FileReport) -> Path:
        """The source in the cache, downloaded (or resumed) and checked; DownloadError when it cannot be had."""
        dest = inside(self.root, below(self.root, cache_path(self.root, source.url)), f"the cached copy of {shown_url(source.url)}")
        make_folders(self.root, below(self.root, dest.parent), f"the cached copy of {shown_url(source.url)}")
        expected = source.sha256 or self.state.recorded("sources", source.url)
        if dest.is_file():
            actual = file_sha256(dest)
            if expected is None or actual == expected:
                return self._keep_source(source, dest, actual, report)
            report.notes.append(f"refused the cached {dest.name}: sha256 {actual[:12]}… is not {expected[:12]}…; fetched again")
            dest.unlink()
        for attempt in (1, 2):
            origin = self._download(source, dest)
            actual = file_sha256(dest)
            if source.size is not None and dest.stat().st_size != source.size:
                problem = f"{dest.stat().st_size:,} bytes, not the {source.size:,} the manifest gives"
            elif expected is not None and actual != expected:
                problem = f"sha256 {actual[:12]}…, not the expected {expected[:12]}…"
            else:
                return self._keep_source(source, dest, actual, report, origin)
            dest.unlink()
            report.notes.append(f"refused {shown_url(origin)} ({problem})" + ("; fetching it again" if attempt == 1 else ""))
        raise DownloadError(f"{shown_url(source.url)}: refused twice by its checksum; not kept")

    def _download(self, source: Source, dest: Path) -> str:
        auth = os.environ.get(source.auth_env) if source.auth_env else None
        with ExitStack() as stack:
            shown: list[ProgressCallback | None] = []

            def progress(done: int, total: int) -> None:
                # a progress line only once a download is known to be large, not for each small file
                if not shown and self.progress is not None and total > PROGRESS_FROM_BYTES:
                    shown.append(stack.enter_context(self.progress(f"fetching {dest.name}")))
                if shown and shown[0] is not None:
                    shown[0](done, total)

            def remember(place: str) -> None:  # before a byte arrives: a resumed download goes on from the same place only
                if self.state.data["partials"].get(source.url) != place:
                    self.state.data["partials"][source.url] = place
                    self.state.save()

            pinned = self.state.data["partials"].get(source.url)
            try:
                origin = download(
                    source.url,
                    dest,
                    mirror=self.mirror,
                    max_bytes=source.size,
                    auth=auth,
                    progress=progress,
                    pinned=pinned if isinstance(pinned, str) else None,
                    remember=remember,
                )
                self.state.forget("partials", source.url)
                return origin
            except BaseException as exc:
                if not part_path(dest).exists():  # no byte arrived: nothing to resume, and no origin to hold it to
                    self.state.forget("partials", source.url)
                if not isinstance(exc, DownloadError):
                    raise
                if source.auth_env and "needs a login" in str(exc) and self.mirror is None:
                    why = "was refused" if auth else "is not set"
                    raise DownloadError(f"{exc}: set {source.auth_env}=user:password (it {why}), or fetch with --mirror") from None
                raise

    def _keep_source(self, source: Source, dest: Path, actual: str, report: FileReport, origin: str | None = None) -> Path:
        if origin is not None and source.listed_md5:
            report.notes.append(f"{shown_url(source.url)} {_md5_note(dest, source.listed_md5)}")
        self.state.record("sources", source.url, sha256=actual, verified=source.verified)
        return dest


def _remove_if_empty(folder: Path) -> bool:
    try:
        folder.rmdir()
    except OSError:  # not empty, or not there
        return False
    return True


def _md5_note(path: Path, listed: str) -> str:
    """Whether the publisher's listed MD5 is that of the file, or of its gunzipped content."""
    if _md5(open(path, "rb")) == listed:
        return "matches the MD5 its publisher lists"
    try:
        inflated = _md5(gzip.open(path, "rb"))
    except (OSError, EOFError):
        inflated = None
    if inflated == listed:
        return "its content matches the MD5 its publisher lists"
    return f"does not match the MD5 its publisher lists ({listed}; which bytes that covers is not stated)"


def _md5(handle: Any) -> str:
    with handle:
        return hashlib.file_digest(handle, "md5").hexdigest()
