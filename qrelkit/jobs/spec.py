"""The job YAML: collection files, the pool, the judge, the template, the grading, the database.

Relative paths are relative to the job file's folder, so a job can be run from anywhere.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from qrelkit.errors import QrelkitError
from qrelkit.io import OnDuplicate
from qrelkit.io.files import OutputPathError, check_writable
from qrelkit.io.paths import irds_id
from qrelkit.io.structured import field_problems, read_yaml_mapping, value_problem
from qrelkit.jobs.grade import GradingSpec


class JobError(QrelkitError):
    pass


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CollectionSpec(_Strict):
    """Files (relative to the job file), or ir_datasets ids (`irds:<id>`) for topics, documents and qrels."""

    topics: Path | None = None
    documents: Path | None = None
    image_root: Path | None = None
    runs: list[Path] = Field(default_factory=list, description="Run files or folders to load.")
    qrels: dict[str, Path] = Field(default_factory=dict, description="Qrels sets to load: name -> file.")
    on_duplicate: OnDuplicate = Field(
        OnDuplicate.error, description="A repeated (qid, docid) in a run or qrels file: error, or keep the first, last or max."
    )


class PoolSpec(_Strict):
    """Exactly one of: `depth` (top-k of runs), `pairs` (a file of `qid docid`), `qrels` (a set's pairs)."""

    depth: int | None = Field(None, ge=1)
    runs: list[str] | None = Field(None, description="Run names for depth pooling (default: all runs).")
    pairs: Path | None = None
    qrels: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> PoolSpec:
        chosen = [name for name in ("depth", "pairs", "qrels") if getattr(self, name) is not None]
        if len(chosen) != 1:
            raise ValueError("set exactly one of `depth` (with optional `runs`), `pairs` or `qrels`")
        if self.runs is not None and self.depth is None:
            raise ValueError("`runs` goes with `depth`")
        return self


class SampleSpec(_Strict):
    """Judge `pairs` pairs of the pool spread over every topic (`qrelkit.jobs.pool.sample_pool`): the
    same seed always gives the same order, and a larger sample holds a smaller one."""

    pairs: int = Field(ge=1, description="How many pairs of the pool to judge.")
    seed: int = Field(0, ge=0, description="Seed of the sample's order.")


class JudgeSpec(_Strict):
    name: str
    options: dict[str, Any] = Field(default_factory=dict)


class ExecutorSpec(_Strict):
    """Where the judging runs: in this process (`local`, the default) or on Ray actors (`ray`), each
    building the judge once and pulling shards of the pending pairs; the driver stays the only writer."""

    kind: Literal["local", "ray"] = "local"
    address: str | None = Field(
        None, description="Ray cluster: `auto` (the one `ray start` made on this node), `ray://host:10001`, or none (start a local Ray)."
    )
    workers: int = Field(1, ge=1, description="Ray actors, each with its own judge (a model loads once per worker).")
    num_gpus: float = Field(0, ge=0, description="GPUs per worker: 0, a fraction below 1 (workers share a GPU), or a whole number.")
    num_cpus: float = Field(1, gt=0, description="CPUs per worker.")
    runtime_env: dict[str, Any] | None = Field(
        None,
        description="Ray runtime environment of the workers (env_vars, pip, py_modules, working_dir), e.g. for your own judge module.",
    )

    @model_validator(mode="after")
    def _ray_options_go_with_ray(self) -> ExecutorSpec:
        if self.kind == "local":
            given = sorted(self.model_fields_set - {"kind"})
            if given:
                raise ValueError(f"{', '.join(given)}: only with `kind: ray` (or --executor ray); the local executor runs one judge here")
        if self.num_gpus > 1 and not float(self.num_gpus).is_integer():
            raise ValueError(f"num_gpus: {self.num_gpus} GPUs per worker: use a fraction below 1 or a whole number (Ray's rule)")
        return self


class JobSpec(_Strict):
    database: Path
    collection: CollectionSpec = Field(default_factory=lambda: CollectionSpec())
    pool: PoolSpec
    judge: JudgeSpec
    template: str | None = Field(None, description="A template file or built-in id.")
    grading: GradingSpec | None = None
    sample: SampleSpec | None = Field(None, description="Judge a stratified sample of the pool (also --sample N --seed S).")
    batch_size: int = Field(64, ge=1)
    flush_seconds: float = Field(2.0, gt=0, description="Write judgments at least this often.")
    allow_import: bool = Field(
        False,
        description="Allow `judge.name: module:Class`, which imports and runs that Python module: only the command line "
        "(--allow-import, --set allow_import=true) or the Python caller can; a job file's own `allow_import: true` is ignored.",
    )
    max_consecutive_failures: int = Field(
        20, ge=0, description="Stop when this many judgments in a row fail with the same error (the judge is broken); 0: never."
    )
    executor: ExecutorSpec = Field(default_factory=lambda: ExecutorSpec())
    source: Path | None = Field(None, exclude=True)

    def check_paths(self) -> None:
        """Every file the job names exists (and is a file, or a folder where one is expected), the
        files it writes can be written, and its grading does not aim at a qrels set it loads: all
        known before the first call to a judge."""
        c = self.collection
        files = [("collection.topics", c.topics), ("collection.documents", c.documents), ("pool.pairs", self.pool.pairs)]
        files += [(f"collection.qrels.{name}", q) for name, q in c.qrels.items()]
        for key, file in files:
            if file is not None and irds_id(file) is None and not file.is_file():
                reason = "is a directory, not a file" if file.is_dir() else "is not a regular file" if file.exists() else "not found"
                raise JobError(f"{self.source}: {key}: {file} {reason}")
        for i, run in enumerate(c.runs):
            if not run.exists():
                raise JobError(f"{self.source}: collection.runs[{i}]: {run} not found")
        if c.image_root is not None and not c.image_root.is_dir():
            raise JobError(f"{self.source}: collection.image_root: {c.image_root} is not a folder")
        if self.database.is_dir():
            raise JobError(f"{self.source}: database: {self.database} is a directory; name a database file")
        if not self.database.parent.is_dir():
            raise JobError(f"{self.source}: database: the folder {self.database.parent} does not exist")
        try:
            check_writable(self.database)
        except OutputPathError as exc:
            raise JobError(f"{self.source}: database: {exc}") from None
        requests = self.database.with_name(self.database.name + ".batches")  # jobs.batch_api.batch_folder
        if self.judge.options.get("mode") == "batch" and requests.exists() and not requests.is_dir():
            raise JobError(f"{self.source}: database: batch mode writes its request files into {requests}, which is a file, not a folder")
        if self.grading is not None and self.grading.name in c.qrels:
            raise JobError(
                f"{self.source}: grading.name: {self.grading.name!r} is the qrels set the job loads from {c.qrels[self.grading.name]}; "
                "grading into it would overwrite those qrels: choose another grading.name"
            )

    def resolve_paths(self, base: Path) -> JobSpec:
        def fix(path: Path | None) -> Path | None:
            return path if path is None or path.is_absolute() or irds_id(path) is not None else base / path

        data = self.model_copy(deep=True)
        data.database = base / data.database
        c = data.collection
        c.topics, c.documents, c.image_root = fix(c.topics), fix(c.documents), fix(c.image_root)
        c.runs = [base / p for p in c.runs]
        c.qrels = {name: fix(p) for name, p in c.qrels.items()}  # type: ignore[misc]
        data.pool.pairs = fix(data.pool.pairs)
        if data.template and not Path(data.template).is_absolute() and (base / data.template).is_file():
            data.template = str(base / data.template)
        return data


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_variables(value: Any, where: str, path: Path, environ: Mapping[str, str]) -> Any:
    """``${VAR}`` and ``${VAR:-default}`` in every string of the job, from the environment."""
    if isinstance(value, dict):
        return {key: expand_variables(item, f"{where}.{key}" if where else str(key), path, environ) for key, item in value.items()}
    if isinstance(value, list):
        return [expand_variables(item, f"{where}[{i}]", path, environ) for i, item in enumerate(value)]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ and environ[name] != "":
            return environ[name]
        if default is not None:
            return default
        raise JobError(f"{path}: {where}: ${{{name}}} is not set; export {name}=... or write ${{{name}:-default}}")

    return _VARIABLE.sub(substitute, value)


def apply_sets(data: dict[str, Any], sets: list[str], path: Path) -> None:
    """``--set key.path=value`` overrides; the value is read as YAML (numbers, booleans, lists)."""
    for item in sets:
        key, equals, raw = item.partition("=")
        if not equals or not key.strip():
            raise JobError(f"--set {item!r}: expected KEY.PATH=VALUE, e.g. judge.options.batch_size=32")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except (yaml.YAMLError, ValueError, RecursionError):
            value = raw
        problem = value_problem(value)
        if problem:
            raise JobError(f"--set {key.strip()}: {problem}")
        set_dotted(data, key.strip(), value, path, f"--set {item!r}")


def set_dotted(data: dict[str, Any], key: str, value: Any, path: Path, where: str) -> None:
    """Set ``a.b.c`` in the job's data (a `--set`, a sweep's cell), making the mappings on the way."""
    parts = key.split(".")
    node = data
    for depth, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise JobError(f"{where}: {'.'.join(parts[: depth + 1])} in {path} is not a mapping")
        node = child
    node[parts[-1]] = value


def with_data_root(environ: Mapping[str, str]) -> Mapping[str, str]:
    """The environment a job's ``${VAR}`` read, with QRELKIT_DATA defaulting to the data folder
    `qrelkit data fetch` writes to (so `${QRELKIT_DATA}/trec-dl-2019/...` needs no setting)."""
    if environ.get("QRELKIT_DATA"):
        return environ
    from qrelkit.io.bundles import data_root

    return {**environ, "QRELKIT_DATA": str(data_root(environ))}


def load_job(
    path: str | Path,
    overrides: dict[str, Any] | None = None,
    *,
    sets: list[str] | None = None,
    environ: Mapping[str, str] | None = None,
    allow_import: bool = False,
    cell: Mapping[str, Any] | None = None,
) -> JobSpec:
    """Read, expand (``${VAR}``), override (``--set``), validate and resolve a job file; every
    problem is one line naming the job file and the key.

    ``allow_import``: a `module:Class` judge may be imported (`--allow-import`). A job file cannot
    allow that by itself: job files are shared like databases, and importing a module runs its
    code, so the file's own `allow_import` is dropped; only the caller (this argument, an override,
    a `--set`) can allow it.

    A job with a `sweep:` is several jobs (`qrelkit.jobs.sweep`): ``cell`` gives one cell's values
    (dotted key -> value, applied after `--set`); without it such a job is refused, never run as one."""
    path = Path(path)
    if not path.exists():
        raise JobError(f"job file {path} not found")
    if path.is_dir():
        raise JobError(f"job file {path} is a directory, not a YAML file")
    data = read_yaml_mapping(path, JobError, "a mapping (database, collection, pool, judge, template, grading)")
    data.pop("allow_import", None)  # the file's own say does not count (see above)
    sweep = data.pop("sweep", None)
    if sweep is not None and cell is None:
        raise JobError(
            f"{path}: sweep: this job is a sweep, one judge run per cell; run it with `qrelkit judge {path}` "
            "(or qrelkit.jobs.sweep.sweep_jobs), which runs every cell"
        )
    apply_sets(data, sets or [], path)  # first, so that a --set value may use ${VAR} as well
    for key, value in (cell or {}).items():
        set_dotted(data, key, value, path, f"{path}: sweep: {key}")
    data = expand_variables(data, "", path, with_data_root(os.environ if environ is None else environ))
    data.update(overrides or {})
    if allow_import:
        data["allow_import"] = True
    try:
        spec = JobSpec.model_validate(data)
    except ValidationError as exc:
        problems = field_problems(exc, JobSpec, hidden=("allow_import", "source"), also=("sweep",))
        raise JobError("\n".join(f"{path}: {field or '(job)'}: {problem}" for field, problem in problems)) from None
    spec = spec.resolve_paths(path.resolve().parent)
    spec.source = path
    return spec
