"""The database and the data folder: `qrelkit load topics | docs | runs | qrels`, `qrelkit show`, and
`qrelkit data list | path | fetch` (the named public bundles)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qrelkit.commands.fields import Request, option, optional_path, paths
from qrelkit.commands.requests.parts import QrelsRef, RunsRef, on_duplicate_option, qrels_option, runs_option
from qrelkit.errors import QrelkitError
from qrelkit.io.duplicates import OnDuplicate


def name_option(help: str = "Name of this load (default: the file name without extension, or the ir_datasets id).") -> Any:
    return option("--name", help, None)


def replace_option() -> Any:
    return option("--replace", "Replace what an earlier load of the same name put in the database.", False)


@dataclass(frozen=True)
class Load(Request):
    """What the four `qrelkit load` commands share: one use case, one document."""

    use_case = "qrelkit.commands.data:run_load"
    document = "qrelkit.commands.documents.data:loads"


@dataclass(frozen=True)
class LoadTopicsRequest(Load):
    """`qrelkit load topics`: load topics."""

    file: Path = option(
        "FILE", "Topics: TSV `qid<TAB>text`, JSONL with `qid`, `text` and any fields, or irds:<dataset id>.", parse=Path, argument=True
    )
    name: str | None = name_option()
    replace: bool = replace_option()


@dataclass(frozen=True)
class LoadDocsRequest(Load):
    """`qrelkit load docs`: load documents (text passages or images)."""

    file: Path = option(
        "FILE", "JSONL documents (`docid` with `text`, or `image`: a relative path), or irds:<dataset id>.", parse=Path, argument=True
    )
    image_root: Path | None = option(
        "--image-root", "Folder that image paths are relative to (default: the file's folder).", None, parse=optional_path
    )
    name: str | None = name_option()
    replace: bool = replace_option()


@dataclass(frozen=True)
class LoadRunsRequest(Load):
    """`qrelkit load runs`: load TREC runs (`qid Q0 docid rank score tag`), all files in one transaction, so
    all land or none."""

    paths: tuple[Path, ...] = option(
        "PATHS",
        "TREC run files, or folders of them (READMEs, hidden and other non-run files are skipped and named). "
        "A run's name is its file name without extension; NIST's `input.<tag>.gz` is named <tag>.",
        cli=list[Path],
        parse=paths,
        argument=True,
    )
    name: str | None = name_option("Name of the run (one file only; default: its file name).")
    tag_names: bool = option("--tag-names", "Name each run by its tag column (column 6) instead of its file.", False)
    replace: bool = replace_option()
    on_duplicate: OnDuplicate = on_duplicate_option()

    def check(self) -> None:
        if self.name is not None and self.tag_names:
            raise QrelkitError("give --name or --tag-names, not both")


@dataclass(frozen=True)
class LoadQrelsRequest(Load):
    """`qrelkit load qrels`: load human (or any) qrels as a named qrels set. Loaded sets are never
    overwritten by grading."""

    file: Path = option("FILE", "TREC qrels (`qid iter docid grade`), or irds:<ir_datasets id>.", parse=Path, argument=True)
    name: str | None = name_option("Name of the qrels set (default: file name).")
    replace: bool = replace_option()
    on_duplicate: OnDuplicate = on_duplicate_option()


@dataclass(frozen=True)
class ShowRequest(Request):
    """`qrelkit show`: show what the database holds: topics, documents, runs, each qrels set with its origin,
    judge runs (--json: each with its stored fields)."""

    use_case = "qrelkit.commands.data:run_show"
    document = "qrelkit.commands.documents.data:contents"


@dataclass(frozen=True)
class StatusRequest(Request):
    """`qrelkit status`: what the judging job writing --db is doing (or how it ended): judged, failed,
    pending, pairs/s and time left, read from the status the job writes beside the database every
    second, so it answers at once while the job holds the database, and slows it in nothing. With
    --reference-qrels (a file) and --runs, also an audit of the judgments so far (as agree --partial)."""

    reference_qrels: QrelsRef = qrels_option(
        "--reference-qrels",
        "Also audit the judgments so far against these qrels (a TREC qrels file: the database is the job's).",
        file_label=True,
    )
    runs: RunsRef = runs_option()

    use_case = "qrelkit.commands.status:run"
    document = "qrelkit.commands.documents.data:status"


# -- the data folder ------------------------------------------------------------------------------------


def to_option() -> Any:
    return option(
        "--to",
        "The data folder (default $QRELKIT_DATA, else $XDG_DATA_HOME/qrelkit, i.e. ~/.local/share/qrelkit).",
        None,
        parse=optional_path,
    )


@dataclass(frozen=True)
class DataListRequest(Request):
    """`qrelkit data list`: list the bundles there are, or one bundle's files."""

    name: str | None = option("NAME", "A bundle: list its files, sources and how each checksum was established.", None, argument=True)

    use_case = "qrelkit.commands.bundles:run_list"
    document = "qrelkit.commands.documents.bundles:bundles"
    uses_db = False


@dataclass(frozen=True)
class DataPathRequest(Request):
    """`qrelkit data path`: print the data folder, or the folder a bundle was fetched into: `D=$(qrelkit data
    path trec-dl-2019)` (an error naming the fetch command when it was not fetched)."""

    name: str | None = option("NAME", "A bundle (default: the data folder itself).", None, argument=True)
    to: Path | None = to_option()

    use_case = "qrelkit.commands.bundles:run_path"
    document = "qrelkit.commands.documents.bundles:path"
    positional = ("name",)
    uses_db = False


@dataclass(frozen=True)
class DataFetchRequest(Request):
    """`qrelkit data fetch`: fetch a bundle: download (resuming) a bundle's public files, build its files, check every
    sha256. Exit 3 when a file could not be had (a source unreachable, behind a login, refused by its
    checksum)."""

    name: str = option("NAME", "The bundle (qrelkit data list).", argument=True)
    to: Path | None = to_option()
    mirror: str | None = option(
        "--mirror",
        "Fetch from here instead of the network (env QRELKIT_MIRROR): a folder, file:// or http(s):// base holding "
        "each public file at <host>/<path> of its URL, or a copy of a data folder.",
        None,
        envvar="QRELKIT_MIRROR",
    )
    max_images: int | None = option("--max-images", "Fetch at most this many images (a quick start).", None, min=0)
    image_urls: Path | None = option(
        "--image-urls", "A table of image URLs: `docid<TAB>url` lines, or JSONL with docid and url.", None, parse=optional_path
    )
    quiet: bool = option("--quiet", "No progress output.", False, api=False)

    use_case = "qrelkit.commands.bundles:run_fetch"
    document = "qrelkit.commands.documents.bundles:fetched"
    uses_db = False
