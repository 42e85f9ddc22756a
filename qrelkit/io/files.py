"""The one rule for the files qrelkit opens and writes.

Reading a file a user, or a documents file, names: regular files only, and inside a root when one is
declared, checked on the file actually opened. A FIFO, a device or a folder is refused without
blocking (the open is non-blocking, the type is checked on the open descriptor). A path under a root
is resolved, checked, opened without following a final link, and the opened file's own path is
checked again (``/proc/self/fd``), so a link swapped in between the check and the open cannot lead
outside the root.

Reading a file of qrelkit's own folders (a data folder's record, `<db>.batches/...`): `open_owned`
and `read_owned`, a regular file only, never through a link, at most a given number of bytes.

Writing any file: `check_output` before the work (never over an input of the command, a file inside
an input folder included, even with --force; never over a file without it), and `write_atomically`
for the file itself: never a device, FIFO or socket (nor a link to one), never through a link in a
folder qrelkit owns (``root``), and whole or not at all (a hidden temporary renamed into place).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from qrelkit.errors import FatalJobError, InputFormatError, LineProblem, QrelkitError
from qrelkit.io.folders import FolderRefused, below, inside, link_refused, make_folders
from qrelkit.machine import crash_point

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class FileRefused(InputFormatError):
    """A file that cannot be opened as input: missing, a folder, a FIFO or device, unreadable, or
    outside its root. ``reason`` is the message without the path."""

    def __init__(self, path: str | Path, reason: str):
        self.path, self.reason = str(path), reason
        super().__init__([LineProblem(str(path), 0, reason)])


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a directory, expected a file"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    return "is not a regular file"


def _open_descriptor(path: Path, flags: int, shown: str | Path) -> int:
    try:
        return os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC | flags)
    except FileNotFoundError:
        raise FileRefused(shown, "file not found") from None
    except IsADirectoryError:
        raise FileRefused(shown, "is a directory, expected a file") from None
    except PermissionError:
        raise FileRefused(shown, "permission denied") from None
    except ValueError:  # a NUL byte in the path
        raise FileRefused(repr(str(shown)), "a path with a NUL character") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileRefused(shown, "is a symbolic link (not followed here)") from None
        raise FileRefused(shown, f"cannot be opened: {exc.strerror or exc}") from None


def _checked(descriptor: int, shown: str | Path) -> BinaryIO:
    """The descriptor as a blocking binary file, if it is a regular file; closed and refused otherwise."""
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(shown, _kind(mode))
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def open_regular(path: str | Path) -> BinaryIO:
    """A regular file opened for reading (links followed); FileRefused for anything else."""
    return _checked(_open_descriptor(Path(path), 0, path), path)


def folder_files(folder: str | Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The regular files of a user's folder (a link to one is one: a folder of runs is often links),
    sorted by name, and the other entries that are not folders, with why none is read: a FIFO, a
    device (or a link to one), a link that leads nowhere (a loop, a missing target). A reader names
    these in its warning: nothing it was given is left out silently."""
    files: list[Path] = []
    other: list[tuple[Path, str]] = []
    for path in sorted(Path(folder).iterdir()):
        try:
            mode = path.stat().st_mode
        except OSError as exc:
            reason = "a link that leads nowhere: a loop, or a missing target" if path.is_symlink() else f"unreadable: {exc.strerror}"
            other.append((path, reason))
            continue
        if stat.S_ISREG(mode):
            files.append(path)
        elif not stat.S_ISDIR(mode):
            other.append((path, ("a link to " if path.is_symlink() else "") + _kind(mode).removeprefix("is ")))
    return files, other


def open_under_root(path: str | Path, root: str | Path | None) -> BinaryIO:
    """A regular file that is inside ``root`` at the moment it is opened (a plain `open_regular`
    when there is no root). FileRefused says why not."""
    if root is None:
        return open_regular(path)
    root_path = Path(root).resolve()
    try:
        resolved = Path(path).resolve(strict=True)
    except FileNotFoundError:
        raise FileRefused(path, "file not found") from None
    except (OSError, RuntimeError, ValueError) as exc:  # a link loop, a NUL byte
        raise FileRefused(path, f"cannot be resolved: {exc}") from None
    if not resolved.is_relative_to(root_path):  # the root itself included
        raise FileRefused(path, f"is outside the root {root}")
    handle = _checked(_open_descriptor(resolved, _NOFOLLOW, path), path)
    try:
        opened = Path(os.readlink(f"/proc/self/fd/{handle.fileno()}"))
    except OSError:
        opened = None  # no /proc: O_NOFOLLOW on the resolved path is the guard
    if opened is not None and not opened.is_relative_to(root_path):
        handle.close()
        raise FileRefused(path, f"is outside the root {root} (it changed while being opened)")
    return handle


def sha256_of(handle: BinaryIO, block: int = 1 << 20) -> str:
    """sha256 of an open file's remaining bytes, read in blocks (never the whole file at once)."""
    digest = hashlib.sha256()
    for chunk in iter(lambda: handle.read(block), b""):
        digest.update(chunk)
    return digest.hexdigest()


class OutputPathError(QrelkitError):
    """A file qrelkit was asked to write cannot be written there."""


def _no_place_for_a_file(path: Path) -> str | None:
    """Why a written file may not be put at ``path``: a device, FIFO, socket or folder is there, or a
    link to one (renaming a file over `/dev/null` would replace it for every process of the machine).
    None when a regular file, a link to one, a dangling link or nothing is there."""
    try:
        mode = os.lstat(path).st_mode
    except (OSError, ValueError):
        return None  # nothing there (or a path that cannot be: writing it says why)
    if stat.S_ISLNK(mode):
        try:
            mode = os.stat(path).st_mode
        except (OSError, ValueError):
            return None  # a dangling link or a loop: the link itself is replaced
        return None if stat.S_ISREG(mode) else f"is a symbolic link to what {_kind(mode)}"
    return None if stat.S_ISREG(mode) else _kind(mode)


def check_writable(path: str | Path, *, overwrite: bool = True) -> Path:
    """``path`` when a file can be written there (its folder may still have to be made); an
    OutputPathError naming it otherwise, before any work is done for it. ``overwrite`` False: a file
    already there is not replaced (the command's --force says it may be)."""
    path = Path(path)
    if path.is_dir():
        raise OutputPathError(f"cannot write {path}: it is a directory")
    refused = _no_place_for_a_file(path)
    if refused is not None:
        raise OutputPathError(f"cannot write {path}: it {refused}; qrelkit writes only regular files")
    if (path.exists() or path.is_symlink()) and not overwrite:
        raise OutputPathError(f"{path} exists; pass --force to overwrite it")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise OutputPathError(f"cannot write {path}: permission denied")
        return path
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise OutputPathError(f"cannot write {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(f"cannot write {path}: the folder {folder} is not writable")
    return path


def _same_file(one: Path, other: Path) -> bool:
    try:
        return one.exists() and other.exists() and os.path.samefile(one, other)
    except (OSError, ValueError):
        return False


def _in_folder(path: Path, folder: Path) -> bool:
    """Whether the file at ``path`` (a link there is the link, which is what a rename replaces) is
    inside ``folder``, however either is spelled."""
    try:
        if not os.path.lexists(path) or not folder.is_dir():
            return False
        return (path.parent.resolve() / path.name).is_relative_to(folder.resolve())
    except (OSError, RuntimeError, ValueError):
        return False


def check_output(path: str | Path, *, force: bool, inputs: dict[str, object] | None = None) -> Path:
    """``path`` when a command may write its output there: never over one of its ``inputs`` (option
    -> the path it names: the database it reads, a qrels file, a folder of runs...) nor over a file
    inside an input folder, even with ``force``; never over an existing file without ``force``
    (`--force`, the one flag name of every command that writes a file); and only where a file can be
    written (`check_writable`). OutputPathError otherwise, before any work is done for it."""
    path = Path(path)
    for option, given in (inputs or {}).items():
        for item in given if isinstance(given, list | tuple) else [given]:
            if item is None or not isinstance(item, str | Path):
                continue
            if _same_file(path, Path(item)):
                raise OutputPathError(f"{path} is this command's {option} {item}: an input is never written over; name another output")
            if _in_folder(path, Path(item)):
                raise OutputPathError(
                    f"{path} is a file in this command's {option} folder {item}: an input is never written over; name another output"
                )
    return check_writable(path, overwrite=force)


class OutputWriteFailed(FatalJobError):
    """Writing an output file failed part-way (a full disk, an I/O error): nothing was left at its path."""


def place_for(path: str | Path, root: Path | None = None) -> Path:
    """``path``, its folder made: below ``root`` (a folder qrelkit owns beside a database) with no
    link anywhere from ``root`` down (FolderRefused otherwise); elsewhere as the user named it."""
    path = Path(path)
    if root is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path
    what = f"{path.name} in {root}"
    if path.parent != root:
        make_folders(root, below(root, path.parent), what, owned=True)
    else:
        make_folders(root, ".", what, owned=True)
    return inside(root, below(root, path), what, owned=True)


def put_in_place(temporary: Path, path: Path) -> None:
    """Rename the whole, written ``temporary`` over ``path`` once it is on disk, unless a device,
    FIFO or socket (or a link to one) has appeared at ``path`` meanwhile (OutputPathError)."""
    with open(temporary, "rb") as handle:
        os.fsync(handle.fileno())
    crash_point("output-before-rename")
    refused = _no_place_for_a_file(path)
    if refused is not None:
        raise OutputPathError(f"cannot write {path}: it {refused}; qrelkit writes only regular files")
    os.replace(temporary, path)


def write_atomically(path: str | Path, write: Callable[[Path], object], *, root: Path | None = None) -> Path:
    """Write ``path`` through ``write(temporary)``: the temporary file is created exclusively in the
    same folder (a hidden name ending in the path's own suffix, so a writer that picks its format by
    suffix picks the same one), flushed to disk and renamed over ``path`` only once whole
    (`put_in_place`). A killed process or a full disk leaves the old file (or none) at ``path``,
    never part of a new one; a failure to write is OutputWriteFailed (exit 3) naming the path.
    ``root``: the folder qrelkit owns that ``path`` is in (`place_for`)."""
    path = place_for(path, root)
    temporary = exclusive_temporary(path)
    try:
        os.chmod(temporary, _new_file_mode(path))
        write(temporary)
        put_in_place(temporary, path)
    except QrelkitError:
        temporary.unlink(missing_ok=True)
        raise
    except Exception as exc:
        temporary.unlink(missing_ok=True)
        if isinstance(exc, OSError) or _storage_error(exc):
            reason = getattr(exc, "strerror", None) or (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise OutputWriteFailed(f"cannot write {path}: {reason}; nothing was written there") from None
        raise
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


def open_owned(path: Path, limit: int, *, root: Path | None = None) -> BinaryIO | None:
    """A file of qrelkit's own folders opened for reading: a regular file of at most ``limit`` bytes,
    never through a link (below ``root`` too, when given: `qrelkit.io.folders.inside`), a FIFO refused
    without blocking; None when it is not there. FolderRefused says why a file is refused. A file
    that grows while it is read is read only up to ``limit`` bytes by `read_capped`."""
    if root is not None:
        inside(root, below(root, path), f"{path.name} in {root}", owned=True)
    try:
        descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        if os.path.islink(path):
            raise link_refused(path) from None
        raise FolderRefused(f"{path} cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise FolderRefused(f"{path} {_kind(info.st_mode)}; refused")
        if info.st_size > limit:
            raise FolderRefused(f"{path} has {info.st_size:,} bytes, more than such a file may ({limit:,}); refused")
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def read_capped(handle: BinaryIO, limit: int, path: Path, block: int = 1 << 20) -> Iterator[bytes]:
    """The bytes of an `open_owned` file in blocks, FolderRefused once more than ``limit`` came (a
    file something keeps appending to is not read forever)."""
    read = 0
    while chunk := handle.read(block):
        read += len(chunk)
        if read > limit:
            raise FolderRefused(f"{path} grew past {limit:,} bytes while it was read; refused")
        yield chunk


def read_owned(path: Path, limit: int, *, root: Path | None = None) -> bytes | None:
    """The bytes of a small file of qrelkit's own folders (`open_owned`); None when it is not there."""
    handle = open_owned(path, limit, root=root)
    if handle is None:
        return None
    with handle:
        return b"".join(read_capped(handle, limit, path))


def exclusive_temporary(path: Path) -> Path:
    """A new, empty file beside ``path`` under a fresh hidden name (created exclusively: never a file
    or link that was there), ending in ``path``'s suffix; renamed over ``path`` when whole."""
    descriptor, name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".partial{path.suffix}", dir=path.parent)
    os.close(descriptor)
    return Path(name)


def _storage_error(exc: BaseException) -> bool:
    """An error of the library that wrote (DuckDB's COPY, Arrow's writers) saying the disk failed."""
    text = str(exc).lower()
    return any(marker in text for marker in ("no space left", "disk full", "input/output error", "could not write", "failed to write"))


def _new_file_mode(path: Path) -> int:
    """The mode the file at ``path`` has, or the one a new file gets under the process's umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask
