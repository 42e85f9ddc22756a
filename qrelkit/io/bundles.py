"""Named public data bundles: what `qrelkit data fetch NAME` downloads and builds, and where.

A bundle is a manifest shipped with qrelkit (`qrelkit/data/bundles/NAME.yaml`): the public
*sources* (each a URL, its size and sha256 where one could be established, and a sentence saying
how), and the bundle's *files*, each made from sources or earlier files by a named rule
(`qrelkit.io.derive`) and checked against its own sha256. A checksum of None means none could be
established from a public snapshot when the manifest was written: such a file is fetched, said to
be unverified, and its sha256 recorded on first download (`.qrelkit-bundle.json` in the bundle's
folder), so a later change is still caught.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from qrelkit.errors import QrelkitError

STATE_FILE = ".qrelkit-bundle.json"
SOURCES_FOLDER = ".sources"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_MD5 = re.compile(r"^[0-9a-f]{32}$")


class BundleError(QrelkitError):
    """An unknown bundle, or a manifest that does not hold together."""


def data_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where bundles live: $QRELKIT_DATA, else the per-user data folder of the XDG convention
    ($XDG_DATA_HOME/qrelkit, by default ~/.local/share/qrelkit). A per-user folder outside any
    clone, because an installed qrelkit has no `../shared` beside it; this repository's tests set
    QRELKIT_DATA to its own ../shared/data (tests/conftest.py)."""
    environ = os.environ if environ is None else environ
    if environ.get("QRELKIT_DATA"):
        return Path(environ["QRELKIT_DATA"]).expanduser()
    base = environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "qrelkit"


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where qrelkit keeps what it can compute again (embeddings of documents when no database is
    given): $QRELKIT_CACHE, else the per-user cache folder of the XDG convention ($XDG_CACHE_HOME/qrelkit,
    by default ~/.cache/qrelkit)."""
    environ = os.environ if environ is None else environ
    if environ.get("QRELKIT_CACHE"):
        return Path(environ["QRELKIT_CACHE"]).expanduser()
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "qrelkit"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _checked_digest(value: str | None, pattern: re.Pattern[str], what: str) -> str | None:
    if value is not None and not pattern.match(value):
        raise ValueError(f"{what} {value!r} is not a lower-case hex digest")
    return value


Sha256 = Annotated[str | None, AfterValidator(lambda value: _checked_digest(value, _SHA256, "sha256"))]
Md5 = Annotated[str | None, AfterValidator(lambda value: _checked_digest(value, _MD5, "listed_md5"))]


class Source(_Strict):
    """A public file a bundle is made from."""

    id: str
    url: str
    size: int | None = None
    sha256: Sha256 = None
    listed_md5: Md5 = Field(None, description="An MD5 the publisher lists; reported, never refused on (its bytes are not stated).")
    auth_env: str | None = Field(None, description="Environment variable holding `user:password` for a source behind a login.")
    checksum: str = Field(description="How sha256 was established, or why there is none.")

    @field_validator("url")
    @classmethod
    def _https(cls, value: str) -> str:
        if not value.startswith("https://"):
            raise ValueError(f"a source URL is https:// ({value!r})")
        return value

    @property
    def verified(self) -> bool:
        return self.sha256 is not None


class BundleFile(_Strict):
    """A file of the bundle, made by ``rule`` from ``inputs`` (source ids, or earlier files' paths)."""

    path: str
    what: str
    rule: str
    inputs: list[str] = []
    options: dict[str, Any] = {}
    sha256: Sha256 = None
    reference_sha256: Sha256 = Field(None, description="For an unverified file: the copy behind this project's published figures.")
    checksum: str

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        parts = Path(value).parts
        if Path(value).is_absolute() or ".." in parts or not parts or parts[0].startswith("."):
            raise ValueError(f"a bundle path stays inside the bundle's folder ({value!r})")
        return value

    @property
    def verified(self) -> bool:
        return self.sha256 is not None


class Images(_Strict):
    """Images fetched one by one by URL (AToMiC): the ids are a bundle file, the URLs a table the user gives (--image-urls)."""

    ids: str
    folder: str
    documents: str
    note: str


class Bundle(_Strict):
    name: str
    title: str
    description: str
    licence: str
    size: str
    sources: list[Source] = []
    files: list[BundleFile]
    images: Images | None = None

    @model_validator(mode="after")
    def _inputs_exist_before_use(self) -> Bundle:
        ids = [s.id for s in self.sources]
        if len(set(ids)) != len(ids):
            raise ValueError("two sources share an id")
        made: set[str] = set()
        for item in self.files:
            for name in item.inputs:
                if name not in ids and name not in made:
                    raise ValueError(f"{item.path}: input {name!r} is neither a source nor an earlier file")
            if item.path in made:
                raise ValueError(f"{item.path} is listed twice")
            made.add(item.path)
        return self

    def source(self, source_id: str) -> Source | None:
        return next((s for s in self.sources if s.id == source_id), None)

    def file(self, path: str) -> BundleFile | None:
        return next((f for f in self.files if f.path == path), None)


def _manifests() -> Any:
    return resources.files("qrelkit") / "data" / "bundles"


def bundle_names() -> list[str]:
    return sorted(p.name[: -len(".yaml")] for p in _manifests().iterdir() if p.name.endswith(".yaml"))


@cache
def load_bundle(name: str) -> Bundle:
    """The manifest of bundle ``name``; BundleError naming the bundles there are when it is unknown."""
    names = bundle_names()
    if name not in names:
        raise BundleError(f"no data bundle named {name!r}; there are: {', '.join(names)}")
    text = (_manifests() / f"{name}.yaml").read_text(encoding="utf-8")
    try:
        return Bundle.model_validate(yaml.safe_load(text))
    except ValidationError as exc:
        raise BundleError(f"the manifest of {name!r} is broken: {exc}") from None
