"""`qrelkit data list | path | fetch`: named public bundles, fetched into the data folder."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from qrelkit.commands.requests import DataFetchRequest, DataListRequest, DataPathRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError
from qrelkit.io.bundles import Bundle, bundle_names, data_root, load_bundle
from qrelkit.io.net.download import Mirror
from qrelkit.io.net.fetch import Fetcher, FetchReport
from qrelkit.io.net.fetch_images import fetch_images, read_url_table


def run_list(request: DataListRequest, workspace: Workspace) -> Bundle | list[Bundle]:
    """The bundles there are, or bundle ``name``."""
    if request.name is not None:
        return load_bundle(request.name)
    return [load_bundle(name) for name in bundle_names()]


def run_path(request: DataPathRequest, workspace: Workspace) -> Path:
    """The data folder (``to``, else $QRELKIT_DATA, else the per-user folder), or the folder a bundle
    was fetched into (an error naming the fetch command when it was not: a script's
    `D=$(qrelkit data path NAME)` stops there, not at a later file that is not found)."""
    root = request.to if request.to is not None else data_root()
    if request.name is None:
        return root
    load_bundle(request.name)  # an unknown name is an error here too
    folder = root / request.name
    if not folder.is_dir():
        where = f" --to {request.to}" if request.to is not None else ""
        raise QrelkitError(
            f"no data bundle {request.name!r} in {root} (its folder {folder} does not exist): "
            f"fetch it with `qrelkit data fetch {request.name}{where}`"
        )
    return folder


def run_fetch(request: DataFetchRequest, workspace: Workspace) -> FetchReport:
    """Fetch the bundle into `<data folder>/<name>`: every file checked, made when missing or refused;
    what could not be had is in the report's `failed`."""
    bundle = load_bundle(request.name)
    root = request.to if request.to is not None else data_root()
    mirror, max_images, image_urls = request.mirror, request.max_images, request.image_urls
    progress = partial(workspace.progress, unit="bytes")
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
