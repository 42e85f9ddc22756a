"""A data folder is data (issue 36, items 1, 2, 5, 12 and 13): `qrelkit data fetch` keeps every path
a folder's record or a mirror's listing names inside the folder, follows no link planted in it,
writes through fresh files renamed into place, pins an unverified source to one origin and its
recorded sha256, keeps no source its rule refused, follows a mirror's redirects only to the mirror
itself, and stops a trickling download. Each test plants the hostile folder or mirror the issue
describes and checks that nothing outside it was read, written or deleted."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from pathlib import Path

import pytest
from bundle_mirror import a_bundle, serve
from hostile import one_error, qrelkit
from PIL import Image

from qrelkit.io.bundles import load_bundle
from qrelkit.io.net import download as download_module
from qrelkit.io.net.download import DownloadError, Interrupted, Mirror, download
from qrelkit.io.net.fetch import Fetcher

VICTIM = "the victim's own bytes\n"


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 10, 10)).save(buffer, format="PNG")
    return buffer.getvalue()


def atomic_mirror(mirror: Path, listing: list[dict]) -> Path:
    """A copy of an atomic-2023 data folder: every (unverified) file, one pooled image id, and
    images.jsonl as ``listing`` with images/img1.png beside it."""
    folder = mirror / "atomic-2023"
    for item in load_bundle("atomic-2023").files:
        (folder / item.path).parent.mkdir(parents=True, exist_ok=True)
        (folder / item.path).write_text("img1\n" if item.path == "pooled-images.txt" else f"{item.path}\n")
    (folder / "images").mkdir(exist_ok=True)
    (folder / "images" / "img1.png").write_bytes(png())
    (folder / "images.jsonl").write_text("".join(json.dumps(r) + "\n" for r in listing))
    return mirror


# -- 1: a record's image path never chooses which file is deleted ----------------------------------


@pytest.mark.parametrize("named", ["absolute", "relative"])
def test_a_records_image_outside_the_folder_with_a_wrong_sha256_is_not_deleted(tmp_path, named):
    victim = tmp_path / "x"
    victim.write_text(VICTIM)
    data = tmp_path / "data"
    (data / "atomic-2023").mkdir(parents=True)
    image = str(victim) if named == "absolute" else "../../x"  # data/atomic-2023/../../x is tmp_path/x
    record = {"images": {"img1": {"image": image, "sha256": "0" * 64}}}
    (data / "atomic-2023" / ".qrelkit-bundle.json").write_text(json.dumps(record))
    mirror = atomic_mirror(tmp_path / "mirror", [{"docid": "img1", "image": "images/img1.png"}])

    done = qrelkit("data", "fetch", "atomic-2023", "--mirror", mirror, "--to", data, "--max-images", "1")
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == VICTIM  # the file the record named is still there, unchanged
    assert (data / "atomic-2023" / "images" / "img1.png").read_bytes() == png()  # the image itself was fetched
    state = json.loads((data / "atomic-2023" / ".qrelkit-bundle.json").read_text())
    assert state["images"]["img1"]["image"] == "images/img1.png"


# -- 2: links planted in the folder are never written through ---------------------------------------


LICENSE = b"MIT License\n\nCopyright (c) the authors\n"


def planted(tmp_path: Path) -> tuple[Path, Path, dict[str, Path]]:
    """A data folder with a one-file bundle `tiny` (LICENSE, from example.org/data/LICENSE in the
    mirror) and links planted where qrelkit once wrote temporary files, each to a victim outside."""
    mirror, root = tmp_path / "mirror", tmp_path / "data"
    (root / "tiny").mkdir(parents=True)
    victims = {}
    for name in ("state", "license"):
        victims[name] = tmp_path / f"victim-{name}"
        victims[name].write_text(VICTIM)
    (root / "tiny" / ".qrelkit-bundle.json.tmp").symlink_to(victims["state"])
    (root / "tiny" / "LICENSE.tmp").symlink_to(victims["license"])
    return mirror, root, victims


def test_links_planted_at_the_temporary_names_are_left_alone_and_the_license_is_a_file(tmp_path):
    mirror, root, victims = planted(tmp_path)
    bundle = a_bundle(tmp_path, mirror, {"LICENSE": LICENSE})
    [report] = Fetcher(bundle, root, mirror=Mirror.parse(str(mirror))).fetch_files()
    assert report.status == "built" and report.verified
    assert all(victim.read_text() == VICTIM for victim in victims.values())  # nothing written through a link
    license_file = root / "tiny" / "LICENSE"
    assert not license_file.is_symlink() and license_file.read_bytes() == LICENSE
    assert not (root / "tiny" / ".qrelkit-bundle.json").is_symlink()
    assert json.loads((root / "tiny" / ".qrelkit-bundle.json").read_text())["files"]["LICENSE"]["verified"] is True


def test_a_part_file_planted_as_a_link_is_never_appended_to(tmp_path):
    mirror, root, victims = planted(tmp_path)
    bundle = a_bundle(tmp_path, mirror, {"LICENSE": LICENSE})
    cached = root / ".sources" / "example.org" / "data"
    cached.mkdir(parents=True)
    (cached / "LICENSE.part").symlink_to(victims["license"])
    [report] = Fetcher(bundle, root, mirror=Mirror.parse(str(mirror))).fetch_files()
    assert report.status == "built"  # a part of no recorded origin is dropped (the link itself), and the file fetched whole
    assert victims["license"].read_text() == VICTIM
    assert not (cached / "LICENSE").is_symlink() and (cached / "LICENSE").read_bytes() == LICENSE
    assert (root / "tiny" / "LICENSE").read_bytes() == LICENSE


def test_a_part_file_of_a_recorded_download_that_is_a_link_is_refused(tmp_path):
    mirror, root, victims = planted(tmp_path)
    bundle = a_bundle(tmp_path, mirror, {"LICENSE": LICENSE})
    cached = root / ".sources" / "example.org" / "data"
    cached.mkdir(parents=True)
    (cached / "LICENSE.part").symlink_to(victims["license"])
    place = str(mirror.resolve() / "example.org" / "data" / "LICENSE")  # the record says the part came from the mirror
    (root / "tiny" / ".qrelkit-bundle.json").write_text(json.dumps({"partials": {"https://example.org/data/LICENSE": place}}))
    from qrelkit.io.folders import FolderRefused

    with pytest.raises(FolderRefused, match=r"LICENSE.part is a symbolic link: not followed \(remove it\)"):
        Fetcher(bundle, root, mirror=Mirror.parse(str(mirror))).fetch_files()
    assert victims["license"].read_text() == VICTIM
    assert not (root / "tiny" / "LICENSE").exists()


def test_a_license_that_is_a_link_to_a_file_with_the_right_bytes_is_refused_not_reported_verified(tmp_path):
    mirror, root, _ = planted(tmp_path)
    bundle = a_bundle(tmp_path, mirror, {"LICENSE": LICENSE})
    outside = tmp_path / "outside-license"
    outside.write_bytes(LICENSE)  # its sha256 is the manifest's: following the link would call it verified
    (root / "tiny" / "LICENSE").symlink_to(outside)
    from qrelkit.io.folders import FolderRefused

    with pytest.raises(FolderRefused, match=r"tiny/LICENSE is a symbolic link: links in qrelkit's folders are not followed"):
        Fetcher(bundle, root, mirror=Mirror.parse(str(mirror))).fetch_files()
    assert outside.read_bytes() == LICENSE


def test_a_planted_link_is_one_line_exit_2_from_the_command_line(tmp_path):
    data = tmp_path / "data"
    (data / "atomic-2023").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text(VICTIM)
    (data / "atomic-2023" / ".qrelkit-bundle.json").symlink_to(victim)
    mirror = atomic_mirror(tmp_path / "mirror", [])
    error = one_error(qrelkit("data", "fetch", "atomic-2023", "--mirror", mirror, "--to", data), 2)
    assert error == f"error: {data / 'atomic-2023' / '.qrelkit-bundle.json'} is a symbolic link: links in qrelkit's folders are not " \
        "followed (remove it, and run again)"  # fmt: skip
    assert victim.read_text() == VICTIM


# -- 5: an unverified source comes whole from one origin, and a refused one is not kept ---------------


def unverified_source(tmp_path: Path, data: bytes) -> tuple[object, Path]:
    mirror = tmp_path / "mirror-a"
    return a_bundle(tmp_path, mirror, {"runs.txt": data}, verified=False), mirror


def test_a_resumed_unverified_download_is_never_spliced_from_two_mirrors(tmp_path):
    first = b"".join(b"a line of mirror A %04d\n" % i for i in range(2000))
    other = b"".join(b"a line of mirror B %04d\n" % i for i in range(2000))
    bundle, mirror_a = unverified_source(tmp_path, first)
    mirror_b = tmp_path / "mirror-b"
    (mirror_b / "example.org" / "data").mkdir(parents=True)
    (mirror_b / "example.org" / "data" / "runs.txt").write_bytes(other)
    root = tmp_path / "data"
    with serve(mirror_a) as (base, handler):
        handler.cut_after["/example.org/data/runs.txt"] = 1024 * 24  # 1,024 lines of A arrive, then the connection drops
        with pytest.raises(Interrupted, match="run again to resume"):
            Fetcher(bundle, root, mirror=Mirror(base)).fetch_files()
    [report] = Fetcher(bundle, root, mirror=Mirror.parse(str(mirror_b))).fetch_files()
    assert report.status == "built"
    assert (root / "tiny" / "runs.txt").read_bytes() == other  # all of B, not A's first 1,024 lines and B's rest
    state = json.loads((root / "tiny" / ".qrelkit-bundle.json").read_text())
    assert state["sources"]["https://example.org/data/runs.txt"]["sha256"] == hashlib.sha256(other).hexdigest()


def test_the_mirror_route_holds_an_unverified_file_to_the_sha256_recorded_on_first_fetch(tmp_path):
    first, changed = b"q1 0 d1 1\n", b"q1 0 d1 0\n"
    copy_a, copy_b = tmp_path / "copy-a", tmp_path / "copy-b"
    bundle = a_bundle(tmp_path, tmp_path / "sources", {"qrels.txt": first}, verified=False)
    for copy, data in ((copy_a, first), (copy_b, changed)):  # two copies of a data folder
        (copy / "tiny").mkdir(parents=True)
        (copy / "tiny" / "qrels.txt").write_bytes(data)
    root = tmp_path / "data"
    [report] = Fetcher(bundle, root, mirror=Mirror.parse(str(copy_a))).fetch_files()
    assert report.status == "fetched"
    (root / "tiny" / "qrels.txt").unlink()
    [report] = Fetcher(bundle, root, mirror=Mirror.parse(str(copy_b))).fetch_files()
    assert report.status == "failed"  # the copy's bytes are not the ones recorded; nor are the (empty) sources
    assert report.notes[0].startswith("refused the mirror's qrels.txt: sha256 ") and "the one recorded on first fetch" in report.notes[0]
    assert not (root / "tiny" / "qrels.txt").exists()
    state = json.loads((root / "tiny" / ".qrelkit-bundle.json").read_text())
    assert state["files"]["qrels.txt"]["sha256"] == hashlib.sha256(first).hexdigest()  # still pinned to the first


def test_a_source_its_rule_refuses_is_not_kept_so_a_later_good_copy_is_fetched(tmp_path, monkeypatch):
    from qrelkit.io.bundles import Bundle

    monkeypatch.setenv("QRELKIT_MAX_INPUT_BYTES", str(1 << 20))
    bomb = gzip.compress(b"q1 0 d1 1\n" * 300_000)  # 3 MB of qrels in a few KB: over the 1 MiB cap
    good = gzip.compress(b"q1 0 d1 1\nq1 0 d2 0\n")
    mirror = tmp_path / "mirror"
    (mirror / "example.org" / "data").mkdir(parents=True)
    (mirror / "example.org" / "data" / "qrels.gz").write_bytes(bomb)
    source = {"id": "q", "url": "https://example.org/data/qrels.gz", "checksum": "unverified: t"}
    item = {"path": "pooled.txt", "what": "w", "rule": "pooled-ids", "inputs": ["q"], "checksum": "unverified: t"}
    bundle = Bundle.model_validate(
        {"name": "tiny", "title": "t", "description": "d", "licence": "l", "size": "s", "sources": [source], "files": [item]}
    )
    root = tmp_path / "data"
    [report] = Fetcher(bundle, root, mirror=Mirror.parse(str(mirror))).fetch_files()
    assert report.status == "failed" and "inflates to more than 1 MiB" in report.notes[0]
    assert report.notes[-1] == "its unverified source https://example.org/data/qrels.gz was not kept: the next fetch downloads it again"
    assert not (root / ".sources" / "example.org" / "data" / "qrels.gz").exists()
    (mirror / "example.org" / "data" / "qrels.gz").write_bytes(good)  # the mirror is mended
    [report] = Fetcher(bundle, root, mirror=Mirror.parse(str(mirror))).fetch_files()
    assert report.status == "built" and (root / "tiny" / "pooled.txt").read_text() == "d1\nd2\n"


# -- 12: a damaged record, a mirror URL that does not parse -------------------------------------------


@pytest.mark.parametrize("record", ["[" * 200_000 + "]" * 200_000, "[1, 2]"], ids=["nested 200k deep", "a list"])
def test_a_damaged_record_is_read_as_none_and_the_fetch_goes_on(tmp_path, record):
    data = tmp_path / "data"
    (data / "atomic-2023").mkdir(parents=True)
    (data / "atomic-2023" / ".qrelkit-bundle.json").write_text(record)
    mirror = atomic_mirror(tmp_path / "mirror", [{"docid": "img1", "image": "images/img1.png"}])
    done = qrelkit("data", "fetch", "atomic-2023", "--mirror", mirror, "--to", data, "--max-images", "1")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert json.loads((data / "atomic-2023" / ".qrelkit-bundle.json").read_text())["images"]["img1"]["image"] == "images/img1.png"


def test_a_mirror_url_that_does_not_parse_is_one_line_exit_2(tmp_path):
    error = one_error(qrelkit("data", "fetch", "extrapolate-eval", "--mirror", "http://[::1", "--to", tmp_path), 2)
    assert error == "error: --mirror http://[::1: not a URL (Invalid IPv6 URL)"


# -- 13: a mirror's redirects, its listing, a trickle --------------------------------------------------


@pytest.mark.parametrize(
    "location, why",
    [("http://127.0.0.2:9/example.org/big.bin", "not the mirror's own origin"), ("ftp://127.0.0.1/big.bin", "not the mirror's own origin")],
)
def test_a_mirrors_redirect_elsewhere_is_not_followed(tmp_path, location, why):
    with serve(tmp_path) as (base, handler):
        handler.redirect_to["/example.org/big.bin"] = location
        with pytest.raises(DownloadError) as refused:
            download("https://example.org/big.bin", tmp_path / "got" / "big.bin", mirror=Mirror(base))
    assert str(refused.value) == f"{base}/example.org/big.bin: redirected (HTTP 302) to {location}: {why}; not followed"
    assert not (tmp_path / "got" / "big.bin").exists()


def test_a_mirrors_redirect_to_its_own_origin_is_followed(tmp_path):
    (tmp_path / "moved").mkdir()
    (tmp_path / "moved" / "big.bin").write_bytes(b"moved here\n")
    with serve(tmp_path) as (base, handler):
        handler.redirect_to["/example.org/big.bin"] = f"{base}/moved/big.bin"
        download("https://example.org/big.bin", tmp_path / "got" / "big.bin", mirror=Mirror(base))
    assert (tmp_path / "got" / "big.bin").read_bytes() == b"moved here\n"


def test_a_mirrors_listing_that_names_an_image_outside_the_mirror_is_not_copied(tmp_path):
    (tmp_path / "secret.png").write_bytes(png())  # outside the mirror: ../../secret.png from mirror/atomic-2023
    mirror = atomic_mirror(tmp_path / "mirror", [{"docid": "img1", "image": "../../secret.png"}])
    data = tmp_path / "data"
    done = qrelkit("data", "fetch", "atomic-2023", "--mirror", mirror, "--to", data, "--max-images", "1", "--json")
    assert done.returncode == 0, done.stderr
    images = json.loads(done.stdout)["images"]
    assert (images["fetched"], images["failed"], images["problems"]) == (0, 1, ["img1: no URL for it"])
    assert not list((data / "atomic-2023" / "images").iterdir())
    assert (data / "atomic-2023" / "images.jsonl").read_text() == ""


def test_a_trickling_mirror_is_stopped_and_what_arrived_is_kept_to_resume(tmp_path, monkeypatch):
    monkeypatch.setattr(download_module, "STALL_SECONDS", 0.5)
    monkeypatch.setattr(download_module, "STALL_BYTES", 1024)
    (tmp_path / "example.org").mkdir()
    (tmp_path / "example.org" / "slow.bin").write_bytes(b"x" * 100_000)
    with serve(tmp_path) as (base, handler):
        handler.trickle["/example.org/slow.bin"] = (0.02, 200)  # a byte every 20 ms: 100,000 bytes would take half an hour
        with pytest.raises(Interrupted) as stopped:
            download("https://example.org/slow.bin", tmp_path / "got" / "slow.bin", mirror=Mirror(base))
    assert "less than 1 KiB: stopped after" in str(stopped.value) and str(stopped.value).endswith("run again to resume")
    assert 0 < (tmp_path / "got" / "slow.bin.part").stat().st_size < 200
