"""The job YAML: collection files, the pool, the judge, the template, the grading, the database.

Relative paths are relative to the job file's folder, so a job can be run from anywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from qrelkit.errors import QrelkitError


class JobError(QrelkitError):
    pass


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CollectionSpec(_Strict):
    topics: Path | None = None
    documents: Path | None = None
    image_root: Path | None = None
    runs: list[Path] = Field(default_factory=list, description="Run files or folders to load.")
    qrels: dict[str, Path] = Field(default_factory=dict, description="Qrels sets to load: name -> file.")


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


class JudgeSpec(_Strict):
    name: str
    options: dict[str, Any] = Field(default_factory=dict)


class GradingSpec(_Strict):
    method: Literal["quantile", "thresholds"] = "quantile"
    quantiles: list[float] = Field(default_factory=lambda: [0.5, 0.75])
    thresholds: list[float] | None = None
    labels: list[int] = Field(default_factory=lambda: [0, 1, 2])
    per_topic: bool = False
    score: Literal["score", "parsed", "expected"] = "score"
    name: str | None = Field(None, description="Name of the qrels set (default: graded-<judge run id>).")

    @field_validator("score", mode="before")
    @classmethod
    def _old_score_name(cls, value: Any) -> Any:
        return "expected" if value == "score_expected" else value  # the column's name before 0.2

    @model_validator(mode="after")
    def _consistent(self) -> GradingSpec:
        cuts = self.thresholds if self.method == "thresholds" else self.quantiles
        if self.method == "thresholds" and not self.thresholds:
            raise ValueError("method `thresholds` needs `thresholds`")
        if cuts != sorted(cuts) or len(set(cuts)) != len(cuts):
            raise ValueError("cut points must be strictly increasing")
        if self.method == "quantile" and not all(0 < q < 1 for q in cuts):
            raise ValueError("quantiles must lie strictly between 0 and 1")
        if len(self.labels) != len(cuts) + 1:
            raise ValueError(f"{len(cuts)} cut points need {len(cuts) + 1} labels, got {len(self.labels)}")
        return self


class JobSpec(_Strict):
    database: Path
    collection: CollectionSpec = Field(default_factory=CollectionSpec)
    pool: PoolSpec
    judge: JudgeSpec
    template: str | None = Field(None, description="A template file or built-in id.")
    grading: GradingSpec | None = None
    batch_size: int = Field(64, ge=1)
    flush_seconds: float = Field(2.0, gt=0, description="Write judgments at least this often.")
    source: Path | None = Field(None, exclude=True)

    def resolve_paths(self, base: Path) -> JobSpec:
        def fix(path: Path | None) -> Path | None:
            return path if path is None or path.is_absolute() else base / path

        data = self.model_copy(deep=True)
        data.database = base / data.database
        c = data.collection
        c.topics, c.documents, c.image_root = fix(c.topics), fix(c.documents), fix(c.image_root)
        c.runs = [base / p for p in c.runs]
        c.qrels = {name: base / p for name, p in c.qrels.items()}
        data.pool.pairs = fix(data.pool.pairs)
        if data.template and not Path(data.template).is_absolute() and (base / data.template).is_file():
            data.template = str(base / data.template)
        return data


def load_job(path: str | Path, overrides: dict[str, Any] | None = None) -> JobSpec:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise JobError(f"job file {path} not found") from None
    except yaml.YAMLError as exc:
        raise JobError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise JobError(f"{path}: expected a mapping (database, collection, pool, judge, template, grading)")
    data.update(overrides or {})
    try:
        spec = JobSpec.model_validate(data)
    except ValidationError as exc:
        lines = [f"{path}: {'.'.join(str(p) for p in e['loc']) or '(job)'}: {e['msg'].removeprefix('Value error, ')}" for e in exc.errors()]
        raise JobError("\n".join(lines)) from None
    spec = spec.resolve_paths(path.resolve().parent)
    spec.source = path
    return spec
