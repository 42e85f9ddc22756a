"""A data folder is data: every path read from a manifest, a folder's own record or a mirror's
listing stays inside the folder it names, and no symbolic link below the folder is followed.

`qrelkit data fetch` writes, replaces and deletes files in a data folder that someone else may have
prepared (a shared folder, a copied bundle). A record that names `/home/me/.ssh/id_rsa` or
`../../x`, or a link planted where a temporary file will be written, would otherwise choose which
file outside the folder is read, written or deleted. So a relative path is checked for its form
(`checked_relative`), a path below the folder for links (`inside`: every part that exists is a
real folder, the last a regular file or nothing), and new files are written under a fresh name
created exclusively (`qrelkit.io.files.write_atomically`), then renamed into place.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from qrelkit.errors import QrelkitError


class FolderRefused(QrelkitError):
    """A path in a data folder, or named by one, that qrelkit will not follow (exit 2)."""


def checked_relative(text: object, what: str) -> str:
    """``text`` when it is a relative path that stays where it is read from: a non-empty string,
    `/`-separated, with no `..`, no empty or `.` part, no backslash, no control character."""
    if not isinstance(text, str) or not text:
        raise FolderRefused(f"{what}: {text!r} is not a relative path")
    parts = PurePosixPath(text).parts
    if (
        text.startswith("/")
        or "\\" in text
        or any(ord(ch) < 32 or ord(ch) == 127 for ch in text)
        or any(part in ("..", ".", "") for part in text.split("/"))
        or not parts
    ):
        raise FolderRefused(f"{what}: {text!r} leaves its folder (an absolute path, `..`, or an odd name); refused")
    return text


def _kind(path: Path) -> int | None:
    """The file type of ``path`` itself (a link is not followed), or None when nothing is there."""
    try:
        return stat.S_IFMT(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None


def inside(root: Path, relative: str | Path, what: str) -> Path:
    """``root / relative`` after checking that it stays in ``root``: every part below ``root`` that
    exists is a folder, not a link, and the last part is a regular file or not there.
    FolderRefused names the first part that is not."""
    relative = Path(checked_relative(relative.as_posix() if isinstance(relative, Path) else relative, what))
    path = root
    for index, part in enumerate(relative.parts):
        path = path / part
        kind = _kind(path)
        if kind is None:
            break
        last = index == len(relative.parts) - 1
        if kind == stat.S_IFLNK:
            raise FolderRefused(f"{path} is a symbolic link: links in a data folder are not followed (remove it, and run again)")
        if not last and kind != stat.S_IFDIR:
            raise FolderRefused(f"{path} is not a folder (it is in the way of {what})")
        if last and kind not in (stat.S_IFREG, stat.S_IFDIR):
            raise FolderRefused(f"{path} is not a regular file ({what}); refused")
    return root / relative


def make_folders(root: Path, relative: str | Path, what: str) -> Path:
    """The folder ``root / relative``, made where missing, none of its parts a link (`inside`)."""
    folder = inside(root, relative, what)
    path = root
    for part in Path(relative).parts:
        path = path / part
        try:
            os.mkdir(path)
        except FileExistsError:
            if _kind(path) != stat.S_IFDIR:
                raise FolderRefused(f"{path} is not a folder (it is in the way of {what})") from None
    return folder


def below(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` (which it is under by construction), for `inside`."""
    return path.relative_to(root).as_posix()


def read_small(path: Path, limit: int) -> bytes | None:
    """The bytes of a folder's own small record, read without following a link; None when it is not
    there. FolderRefused for a link, a file of another kind or one over ``limit`` bytes."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if _kind(path) == stat.S_IFLNK:
            raise FolderRefused(f"{path} is a symbolic link: links in a data folder are not followed (remove it, and run again)") from None
        raise FolderRefused(f"{path} cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise FolderRefused(f"{path} is not a regular file; refused")
        if info.st_size > limit:
            raise FolderRefused(f"{path} has {info.st_size:,} bytes, more than such a record may ({limit:,}); refused")
        return handle.read(limit + 1)
