"""Documents of `qrelkit data list | path | fetch`: the bundles, a bundle's files with how each
checksum was established, and what a fetch did to each file."""

from __future__ import annotations

from typing import Any

from qrelkit.report.document import Document, Lines, Table

MARK = {"present": "ok", "fetched": "ok", "built": "ok", "missing": "MISSING", "failed": "FAILED"}


def bundles(found: Any, request: Any) -> Document:
    """Every bundle as a row, or one bundle's description, licence and files."""
    if isinstance(found, list):
        rows = [[b.name, b.title, len(b.files), sum(f.verified for f in b.files), b.size] for b in found]
        table = Table(
            "Data bundles (qrelkit data fetch NAME; details: qrelkit data list NAME)",
            ["bundle", "what", "files", "verified", "size"],
            rows,
            text_columns=frozenset({0, 1, 4}),
            name="bundles",
        )
        return Document(blocks=[table], data=[b.model_dump() for b in found])
    bundle = found
    lines = [f"{bundle.name}: {bundle.title}", bundle.description, f"licence: {bundle.licence}", f"size: {bundle.size}", ""]
    for item in bundle.files:
        state = f"sha256 {item.sha256[:12]}…" if item.sha256 else "UNVERIFIED"
        inputs = ", ".join(_source(bundle, name) for name in item.inputs) or "no public source known"
        lines += [f"{item.path} [{state}] {item.what}", f"    {item.rule} from {inputs}", f"    checksum: {item.checksum}"]
    if bundle.images is not None:
        lines.append(f"{bundle.images.documents} and {bundle.images.folder}/: the images of {bundle.images.ids}; {bundle.images.note}")
    return Document(blocks=[Lines(lines)], data=bundle.model_dump())


def _source(bundle: Any, name: str) -> str:
    source = bundle.source(name)
    return source.url if source is not None else name


def path(folder: Any, request: Any) -> Document:
    """The folder alone on stdout (a script's `D=$(qrelkit data path NAME)`)."""
    return Document(lead=[str(folder)], data={"path": str(folder)})


def fetched(report: Any, request: Any) -> Document:
    """One line per file (status, path, what was checked), its notes, a summary; exit 3 when a file could not be had."""
    lines = []
    for item in report.files:
        head, *rest = item.notes or [""]
        lines.append(f"{MARK[item.status]:7} {item.path}: {head}")
        lines.extend(f"        {note}" for note in rest)
    if report.images is not None:
        images = report.images
        lines.append(
            f"images: {images['wanted']} wanted, {images['here']} already here, {images['fetched']} fetched, {images['failed']} failed"
            + (f"; {images['note']}" if images["note"] else "")
        )
        lines.extend(f"        {problem}" for problem in images["problems"])
    verified = sum(1 for f in report.files if f.verified and f.status not in ("missing", "failed"))
    unverified = sum(1 for f in report.files if not f.verified and f.status not in ("missing", "failed"))
    summary = (
        f"{report.bundle} in {report.folder}: {len(report.files) - len(report.failed)} of {len(report.files)} files "
        f"({verified} verified against the manifest, {unverified} unverified, their sha256 recorded)"
    )
    failure = report.failure() if report.failed else None
    return Document(lead=[summary], blocks=[Lines(lines)], data=report.to_dict(), status=3 if failure else 0, failure=failure)
