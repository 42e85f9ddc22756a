"""A data folder is data: every path read from a manifest, a folder's own record or a mirror's
listing stays inside the folder it names, and no symbolic link below the folder is followed.

`qrelkit data fetch` writes, replaces and deletes files in a data folder that someone else may have
prepared (a shared folder, a copied bundle). A record that names `/home/me/.ssh/id_rsa` or
`../../x`, or a link planted where a temporary file will be written, would otherwise choose which
file outside the folder is read, written or deleted. So a relative path is checked for its form
(`checked_relative`), a path below the folder for links (`inside`: every part that exists is a
real folder, the last a regular file or nothing), and new files are written under a fresh name
created exclusively (`qrelkit.io.files.write_atomically`), then renamed into place.

The folders qrelkit keeps beside a database (`<db>.batches`, `<db>.probes`) are held to the same
rule, and to one more: the folder itself is not a link either (``owned=True``): a data folder is the
user's choice of place, a database's folder is qrelkit's own.
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


def link_refused(path: Path) -> FolderRefused:
    """The one message for a link found in a data folder or a folder qrelkit owns."""
    return FolderRefused(f"{path} is a symbolic link: links in qrelkit's folders are not followed (remove it, and run again)")


def owned_root(root: Path, what: str) -> Path:
    """``root`` when it is a folder or nothing, never a link: a folder qrelkit owns beside a database."""
    kind = _kind(root)
    if kind == stat.S_IFLNK:
        raise link_refused(root)
    if kind is not None and kind != stat.S_IFDIR:
        raise FolderRefused(f"{root} is not a folder (it is in the way of {what})")
    return root


def inside(root: Path, relative: str | Path, what: str, *, owned: bool = False) -> Path:
    """``root / relative`` after checking that it stays in ``root``: every part below ``root`` that
    exists is a folder, not a link, and the last part is a regular file or not there (``owned``:
    ``root`` itself is no link either, `owned_root`). FolderRefused names the first part that is not."""
    relative = Path(checked_relative(relative.as_posix() if isinstance(relative, Path) else relative, what))
    if owned:
        owned_root(root, what)
    path = root
    for index, part in enumerate(relative.parts):
        path = path / part
        kind = _kind(path)
        if kind is None:
            break
        last = index == len(relative.parts) - 1
        if kind == stat.S_IFLNK:
            raise link_refused(path)
        if not last and kind != stat.S_IFDIR:
            raise FolderRefused(f"{path} is not a folder (it is in the way of {what})")
        if last and kind not in (stat.S_IFREG, stat.S_IFDIR):
            raise FolderRefused(f"{path} is not a regular file ({what}); refused")
    return root / relative


def make_folders(root: Path, relative: str | Path, what: str, *, owned: bool = False) -> Path:
    """The folder ``root / relative``, made where missing, none of its parts a link (`inside`; and
    with ``owned``, ``root`` made too, itself no link)."""
    if owned and str(relative) in ("", "."):
        parts: tuple[str, ...] = ()
        folder = owned_root(root, what)
    else:
        folder = inside(root, relative, what, owned=owned)
        parts = Path(relative).parts
    if owned:
        root.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(root)
        except FileExistsError:
            owned_root(root, what)
    path = root
    for part in parts:
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
