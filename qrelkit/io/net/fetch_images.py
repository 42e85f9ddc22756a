"""The images of a bundle (AToMiC's pooled images), fetched one by one by URL under the
hostile-input rules: an `https://` URL to a public host only (`qrelkit.io.net.urls`), at most
`MAX_IMAGE_BYTES`, and kept only when it decodes as an image (`qrelkit.io.images`). A mirror that
is a copy of a data folder gives them from its `<bundle>/images.jsonl` instead.

Each image is saved as `images/<docid>.<format>` (a docid that is not a plain file name is
replaced by its sha256) and listed in the documents file (`images.jsonl`: `docid`, `image`), which
lists only images that are here, so a job judges what it can read.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from qrelkit.errors import InputFormatError
from qrelkit.io.bundles import Images
from qrelkit.io.files import exclusive_temporary, put_in_place, write_atomically
from qrelkit.io.folders import FolderRefused, checked_relative, inside, make_folders
from qrelkit.io.images import MAX_IMAGE_BYTES, ImageError, open_image, read_image_file
from qrelkit.io.lines import ProblemLog, file_sha256, iter_lines, raise_if_problems
from qrelkit.io.net.download import DownloadError, Mirror, fetch_place
from qrelkit.io.net.urls import local_host_reason, url_host

_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_RECORDED_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$")  # a stem and a suffix, as `_fetch_one` names them
_SUFFIX = {"JPEG": ".jpg", "PNG": ".png", "WEBP": ".webp", "GIF": ".gif", "TIFF": ".tif", "BMP": ".bmp"}
SHOWN = 3  # problems named in the report; the rest counted


def image_stem(docid: str) -> str:
    return docid if _PLAIN_NAME.match(docid) else hashlib.sha256(docid.encode()).hexdigest()[:32]


def read_url_table(path: Path) -> dict[str, str]:
    """docid -> URL from `docid<TAB>url` lines, or JSON lines with `docid` (or `image_id`) and `url`."""
    problems = ProblemLog()
    table: dict[str, str] = {}
    for number, text in iter_lines(path, problems):
        if text.lstrip().startswith("{"):
            try:
                record = json.loads(text)
                docid, url = str(record.get("docid", record.get("image_id"))), str(record["url"])
            except (ValueError, KeyError, TypeError, AttributeError):
                raise InputFormatError.single(path, number, "expected JSON with `docid` (or `image_id`) and `url`") from None
        else:
            cols = text.split("\t")
            if len(cols) != 2:
                raise InputFormatError.single(path, number, "expected `docid<TAB>url`")
            docid, url = cols[0].strip(), cols[1].strip()
        table[docid] = url
    raise_if_problems(problems)
    return table


def url_problem(url: str) -> str | None:
    """Why an image URL from a table is not fetched (None when it may be)."""
    try:
        scheme, host = url_host(url)
    except ValueError:
        return "not a URL"
    if scheme != "https":
        return f"only https:// image URLs are fetched (not {scheme or 'a relative'}:)"
    if not host:
        return "names no host"
    reason = local_host_reason(host)
    return f"names {reason}" if reason else None


def fetch_images(
    images: Images, folder: Path, state: Any, *, mirror: Mirror | None, urls: dict[str, str] | None, max_images: int | None
) -> dict[str, Any]:
    """Fetch the pooled images; a summary `{"wanted", "here", "fetched", "failed", "problems", "note"}`."""
    ids_file = inside(folder, images.ids, f"{folder.name}/{images.ids}")
    summary: dict[str, Any] = {"wanted": 0, "here": 0, "fetched": 0, "failed": 0, "problems": [], "note": None}
    if not ids_file.is_file():
        summary["note"] = f"no images: {images.ids} is missing"
        return summary
    ids = [line.strip() for line in ids_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    wanted = ids[:max_images] if max_images is not None else ids
    summary["wanted"] = len(wanted)
    places = _mirror_places(mirror, folder, images) if mirror is not None else None
    if places is None and urls is None:
        summary["note"] = f"images not fetched: {images.note}"
        _write_documents(folder, images, ids, state)
        return summary
    make_folders(folder, images.folder, f"{folder.name}/{images.folder}")
    for docid in wanted:
        if _present(folder, images, state, docid):
            summary["here"] += 1
            continue
        place = places.get(docid) if places is not None else (urls or {}).get(docid)
        problem = None if place else "no URL for it"
        if place and places is None:
            problem = url_problem(place)
        if problem is None:
            problem = _fetch_one(docid, place or "", folder, images, state, mirror if places is not None else None)
        if problem is None:
            summary["fetched"] += 1
        else:
            summary["failed"] += 1
            if len(summary["problems"]) < SHOWN:
                summary["problems"].append(f"{docid}: {problem}")
    if max_images is not None and len(wanted) < len(ids):
        summary["note"] = f"{len(wanted)} of {len(ids)} pooled images (--max-images); pairs of the others are not in images.jsonl yet"
    _write_documents(folder, images, ids, state)
    return summary


def _mirror_places(mirror: Mirror, folder: Path, images: Images) -> dict[str, str] | None:
    """docid -> where a mirror that copies a data folder keeps each image; None when it has no
    images.jsonl. An image the listing names outside the mirror's bundle folder (`..`, an absolute
    path) is left out, never read."""
    listing = exclusive_temporary(folder / images.documents)
    try:
        if not fetch_place(mirror.join(f"{folder.name}/{images.documents}"), listing, root=mirror.local_root, resume=False):
            return None
        records = [json.loads(line) for line in listing.read_text(encoding="utf-8").splitlines() if line.strip()]
        places: dict[str, str] = {}
        for record in records:
            try:
                places[str(record["docid"])] = mirror.join(f"{folder.name}/{checked_relative(record['image'], 'the mirror images.jsonl')}")
            except FolderRefused:
                continue  # named outside the mirror: this image is not fetched
        return places
    except (DownloadError, ValueError, KeyError, TypeError, RecursionError):
        return None
    finally:
        listing.unlink(missing_ok=True)


def recorded_image(folder: Path, images: Images, state: Any, docid: str) -> Path | None:
    """Where the folder's record says ``docid``'s image is: a file of the images folder, under a name
    qrelkit gives (`images/<stem>.<suffix>`); None when the record names anything else (an absolute
    path, `..`, another folder), which is then forgotten, never read or deleted."""
    entry = state.data["images"].get(docid)
    if not isinstance(entry, dict):
        return None
    relative = entry.get("image")
    folder_name, _, name = str(relative).rpartition("/")
    if not isinstance(relative, str) or folder_name != images.folder or not _RECORDED_NAME.match(name):
        state.data["images"].pop(docid, None)
        return None
    return inside(folder, relative, f"the image of {docid}")


def _present(folder: Path, images: Images, state: Any, docid: str) -> bool:
    path = recorded_image(folder, images, state, docid)
    if path is None or not path.is_file():
        return False
    if file_sha256(path) == state.data["images"][docid].get("sha256"):
        return True
    path.unlink()  # changed since it was fetched: fetched again
    return False


def _fetch_one(docid: str, place: str, folder: Path, images: Images, state: Any, mirror: Mirror | None) -> str | None:
    relative = f"{images.folder}/{image_stem(docid)}"
    temporary = exclusive_temporary(folder / relative)
    try:
        local_root = mirror.local_root if mirror is not None else None
        fetch_place(
            place, temporary, max_bytes=MAX_IMAGE_BYTES, missing_ok=False, root=local_root, same_origin=mirror is not None, resume=False
        )
        image = read_image_file(temporary, folder / images.folder)
        kind = open_image(image).format or ""
        relative += _SUFFIX.get(kind, ".img")
        put_in_place(temporary, inside(folder, relative, f"the image of {docid}"))
    except (DownloadError, ImageError) as exc:
        return str(exc)
    finally:
        temporary.unlink(missing_ok=True)
    state.record("images", docid, image=relative, sha256=image.sha256, url=place)
    return None


def _write_documents(folder: Path, images: Images, ids: list[str], state: Any) -> None:
    here = [docid for docid in ids if (path := recorded_image(folder, images, state, docid)) is not None and path.is_file()]
    text = "".join(json.dumps({"docid": docid, "image": state.data["images"][docid]["image"]}) + "\n" for docid in here)
    target = inside(folder, images.documents, f"{folder.name}/{images.documents}")
    write_atomically(target, lambda temporary: temporary.write_text(text, encoding="utf-8"))
