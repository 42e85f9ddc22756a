"""`qrelkit data list | path | fetch`: the named public data bundles."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from qrelkit.cli.base import JsonOption, app, err, out, print_json
from qrelkit.errors import FatalJobError

data_app = typer.Typer(
    help="Named public data (TREC DL 2019-2021, AToMiC 2023, the extrapolate-eval splits): list them, fetch one into the data folder.",
    no_args_is_help=True,
)
app.add_typer(data_app, name="data")

ToOption = Annotated[
    Path | None,
    typer.Option("--to", help="The data folder (default $QRELKIT_DATA, else $XDG_DATA_HOME/qrelkit, i.e. ~/.local/share/qrelkit)."),
]


@data_app.command("list")
def list_(
    name: Annotated[str | None, typer.Argument(help="A bundle: list its files, sources and how each checksum was established.")] = None,
    as_json: JsonOption = False,
) -> None:
    """The bundles there are, or one bundle's files."""

    from qrelkit.commands import bundles
    from qrelkit.report import bundles as shown

    if as_json:
        print_json(bundles.manifests(name))
        return
    if name is None:
        out.print(shown.bundles_table(bundles.list_bundles()))
        return
    bundle = bundles.get_bundle(name)
    for line in shown.bundle_lines(bundle):
        out.print(line, highlight=False, markup=False)


@data_app.command("path")
def path(
    name: Annotated[str | None, typer.Argument(help="A bundle (default: the data folder itself).")] = None, to: ToOption = None
) -> None:
    """Print the data folder, or a bundle's folder in it: `D=$(qrelkit data path trec-dl-2019)`."""

    from qrelkit.commands import bundles

    print(bundles.bundle_folder(name, to))


@data_app.command("fetch")
def fetch(
    name: Annotated[str, typer.Argument(help="The bundle (qrelkit data list).")],
    to: ToOption = None,
    mirror: Annotated[
        str | None,
        typer.Option(
            envvar="QRELKIT_MIRROR",
            help="Fetch from here instead of the network (env QRELKIT_MIRROR): a folder, file:// or http(s):// base holding "
            "each public file at <host>/<path> of its URL, or a copy of a data folder.",
        ),
    ] = None,
    max_images: Annotated[int | None, typer.Option("--max-images", min=0, help="Fetch at most this many images (a quick start).")] = None,
    image_urls: Annotated[
        Path | None, typer.Option("--image-urls", help="A table of image URLs: `docid<TAB>url` lines, or JSONL with docid and url.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress output.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Fetch a bundle: download (resuming) its public files, build its files, check every sha256.

    Exit 3 when a file could not be had (a source unreachable, behind a login, refused by its checksum).
    """

    from qrelkit.commands import bundles
    from qrelkit.report import bundles as shown
    from qrelkit.report.progress import progress_output

    def progress(description: str):
        return progress_output(description, console=err, enabled=not (quiet or as_json), unit="bytes")

    report = bundles.fetch(name, to=to, mirror=mirror, max_images=max_images, image_urls=image_urls, progress=progress)
    if as_json:
        print_json(report.to_dict())
    else:
        for line in shown.fetch_lines(report):
            out.print(line, highlight=False, markup=False)
    if report.failed:
        raise FatalJobError(report.failure())
