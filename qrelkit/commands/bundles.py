"""`qrelkit data list | path | fetch`: named public bundles, fetched into the data folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qrelkit.errors import QrelkitError
from qrelkit.io.bundles import Bundle, bundle_names, data_root, load_bundle
from qrelkit.io.download import Mirror
from qrelkit.io.fetch import Fetcher, FetchReport, ProgressFactory
from qrelkit.io.fetch_images import fetch_images, read_url_table


def list_bundles() -> list[Bundle]:
    return [load_bundle(name) for name in bundle_names()]


def get_bundle(name: str) -> Bundle:
    return load_bundle(name)


def manifests(name: str | None = None) -> Any:
    """The manifests as plain data: all of them, or bundle ``name``'s."""
    if name is not None:
        return load_bundle(name).model_dump()
    return [bundle.model_dump() for bundle in list_bundles()]


def bundle_folder(name: str | None = None, to: Path | None = None) -> Path:
    """The data folder (``to``, else $QRELKIT_DATA, else the per-user folder), or the folder a bundle
    was fetched into (an error naming the fetch command when it was not: a script's
    `D=$(qrelkit data path NAME)` stops there, not at a later file that is not found)."""
    root = to if to is not None else data_root()
    if name is None:
        return root
    load_bundle(name)  # an unknown name is an error here too
    folder = root / name
    if not folder.is_dir():
        where = f" --to {to}" if to is not None else ""
        raise QrelkitError(
            f"no data bundle {name!r} in {root} (its folder {folder} does not exist): fetch it with `qrelkit data fetch {name}{where}`"
        )
    return folder


def fetch(
    name: str,
    *,
    to: Path | None = None,
    mirror: str | None = None,
    max_images: int | None = None,
    image_urls: Path | None = None,
    progress: ProgressFactory | None = None,
) -> FetchReport:
    """Fetch bundle ``name`` into `<data folder>/<name>`: every file checked, made when missing or
    refused; what could not be had is in the report's `failed`."""
    bundle = load_bundle(name)
    root = to if to is not None else data_root()
    fetcher = Fetcher(bundle, root, mirror=Mirror.parse(mirror) if mirror else None, progress=progress)
    report = FetchReport(bundle.name, fetcher.folder, fetcher.fetch_files())
    if bundle.images is not None:
        urls = read_url_table(image_urls) if image_urls is not None else None
        try:
            report.images = fetch_images(
                bundle.images, fetcher.folder, fetcher.state, mirror=fetcher.mirror, urls=urls, max_images=max_images
            )
        finally:
            fetcher.state.save()
    return report
