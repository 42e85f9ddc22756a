"""What `qrelkit data list | fetch` prints: the bundles, a bundle's files with how each checksum
was established, and what a fetch did to each file."""

from __future__ import annotations

from typing import Any

from qrelkit.report.terminal_table import Table


def bundles_table(bundles: list[Any]) -> Table:
    table = Table(title="Data bundles (qrelkit data fetch NAME; details: qrelkit data list NAME)", title_justify="left")
    for column in ("bundle", "what", "files", "verified", "size"):
        table.add_column(column, justify="right" if column in ("files", "verified") else "left")
    for bundle in bundles:
        verified = sum(f.verified for f in bundle.files)
        table.add_row(bundle.name, bundle.title, str(len(bundle.files)), str(verified), bundle.size)
    return table


def bundle_lines(bundle: Any) -> list[str]:
    """A bundle's description, licence, and each file with its rule and checksum status."""
    lines = [f"{bundle.name}: {bundle.title}", bundle.description, f"licence: {bundle.licence}", f"size: {bundle.size}", ""]
    for item in bundle.files:
        state = f"sha256 {item.sha256[:12]}…" if item.sha256 else "UNVERIFIED"
        inputs = ", ".join(_input_text(bundle, name) for name in item.inputs) or "no public source known"
        lines.append(f"{item.path} [{state}] {item.what}")
        lines.append(f"    {item.rule} from {inputs}")
        lines.append(f"    checksum: {item.checksum}")
    if bundle.images is not None:
        lines.append(f"{bundle.images.documents} and {bundle.images.folder}/: the images of {bundle.images.ids}; {bundle.images.note}")
    return lines


def _input_text(bundle: Any, name: str) -> str:
    source = bundle.source(name)
    return source.url if source is not None else name


MARK = {"present": "ok", "fetched": "ok", "built": "ok", "missing": "MISSING", "failed": "FAILED"}


def fetch_lines(report: Any) -> list[str]:
    """One line per file (status, path, what was checked), then its notes, then a summary."""
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
    lines.append(
        f"{report.bundle} in {report.folder}: {len(report.files) - len(report.failed)} of {len(report.files)} files "
        f"({verified} verified against the manifest, {unverified} unverified, their sha256 recorded)"
    )
    return lines


def manifests_payload(found: Any) -> Any:
    """`qrelkit data list --json`: a bundle's manifest as plain data, or every bundle's."""
    return [bundle.model_dump() for bundle in found] if isinstance(found, list) else found.model_dump()
