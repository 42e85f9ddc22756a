"""Scoring runs: `qrelkit evaluate`, `qrelkit correlate`, `qrelkit nrg`, `qrelkit fd`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qrelkit.commands.fields import FORMATS, Request, integers, option, optional_path, paths, unique_strings
from qrelkit.commands.requests.parts import (
    EmbedderRef,
    GroupsFile,
    PriorSpec,
    QrelsRef,
    RunsRef,
    force_option,
    keep_option,
    measures_option,
    more_runs_option,
    on_duplicate_option,
    qrels_option,
    reference_pairs_option,
    resamples_option,
    runs_option,
)
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.choices import FD_DEFAULT_METHOD, check_average, check_keep, check_method, check_seed
from qrelkit.io.duplicates import OnDuplicate

QRELS_HELP = "Qrels: a TREC qrels file, irds:<ir_datasets id>, or the name of a qrels set in --db."


def _cut_seed() -> Any:
    return option("--seed", "With --max-rel: seed of the choice of relevant items.", 0, parse=check_seed)


@dataclass(frozen=True)
class EvaluateRequest(Request):
    """`qrelkit evaluate`: score runs under qrels, per query (ir_measures; default nDCG@10). Means run
    over the queries of the qrels; a run that misses one scores 0 on it (--average run: over the
    queries each run covers). Run scores are ranked as float32 and ties broken by docid descending, as
    trec_eval does; trec_eval's measure names and its -l, -J and -M read as trec_eval reads them."""

    qrels: QrelsRef = qrels_option("--qrels", QRELS_HELP)
    runs: RunsRef = runs_option()
    measures: tuple[str, ...] = measures_option(("nDCG@10",), short="-m")
    average: str = option(
        "--average",
        "What a mean runs over: qrels (every query of the qrels, a missed one scoring 0; default; trec_eval -c) or run (trec_eval "
        "without -c).",
        "qrels",
        parse=check_average,
    )
    rel_level: int | None = option(
        "--rel-level",
        "The relevance level trec_eval's measure names are read at (trec_eval -l): map is 'AP(rel=LEVEL)', num_rel counts grades "
        ">= LEVEL (default 1); with --max-rel, also the grade its cut keeps (default 2 if graded).",
        None,
        short="-l",
    )
    judged_only: bool = option(
        "--judged-only",
        "Score only the documents the qrels judge (grade >= 0), ranked in their order (trec_eval -J), for every measure.",
        False,
        short="-J",
    )
    max_per_query: int | None = option(
        "--max-per-query",
        "Score only each query's first M documents in trec_eval's order (trec_eval -M), for every measure.",
        None,
        short="-M",
        min=1,
    )
    max_rel: int | None = option("--max-rel", "Score under qrels cut to at most M relevant items per query (seed 001, Table 2).", None)
    keep: str = keep_option()
    seed: int = _cut_seed()
    on_duplicate: OnDuplicate = on_duplicate_option()
    per_query: bool = option("--per-query", "Also print each query's value.", False, api=False)

    use_case = "qrelkit.commands.evaluate:run"
    document = "qrelkit.commands.documents.data:evaluation"
    positional = ("qrels", "runs", "measures")
    formats = (*FORMATS, "trec")  # trec_eval -q's output, byte for byte (-c unless --average run)

    @property
    def trec_layout(self) -> bool:
        """The output is trec_eval's, so measure names that collide there are refused up front."""
        return self.output_format == "trec"

    def check(self) -> None:
        from qrelkit.evaluate.trec_names import trec_eval_names

        if not self.qrels.given:
            raise QrelkitError("give the qrels: --qrels FILE_OR_NAME")
        object.__setattr__(self, "measures", self.measures or ("nDCG@10",))
        if self.trec_layout:
            trec_eval_names(list(self.measures))
        if self.max_rel is None and self.keep != "top-grade":
            raise QrelkitError("--keep chooses how --max-rel cuts the qrels; give --max-rel M too")
        if self.rel_level is not None and self.rel_level < 0:
            raise QrelkitError(f"--rel-level {self.rel_level}: a relevance level is a grade >= 0")
        check_keep(self.keep)


@dataclass(frozen=True)
class CorrelateRequest(Request):
    """`qrelkit correlate`: Kendall τ-b, Spearman ρ and τ_AP between orderings of the same runs:
    between measures (seed 000, Table 3; FD@k through `qrelkit fd --json > fd.json` and --scores
    fd.json), between qrels sets, or between full and cut qrels (--max-rel; seed 001, Table 2)."""

    qrels: tuple[QrelsRef, ...] = option(
        "--qrels", "Qrels files or stored sets; repeatable (orderings under each).", (), cli=list[str] | None, parse=QrelsRef.several
    )
    runs: RunsRef = runs_option()
    measures: tuple[str, ...] = option(
        "--measure",
        "An ir_measures or trec_eval measure, e.g. nDCG@10, 'AP(rel=2)', ndcg_cut_10; repeatable.",
        ("nDCG@10",),
        parse=unique_strings,
    )
    max_rel: tuple[int, ...] = option(
        "--max-rel", "Also the first qrels cut to at most M relevant per query; repeatable.", (), parse=integers
    )
    keep: str = keep_option()
    rel_level: int | None = option("--rel-level", "With --max-rel: relevant = grade >= LEVEL (default 2 if graded).", None)
    seed: int = _cut_seed()
    scores: tuple[Path, ...] = option(
        "--scores",
        "More orderings: `qrelkit fd --json` output (its FD@k, URR-FD@k) or `run score` lines; repeatable.",
        (),
        parse=paths,
    )
    reference_pairs: str | None = reference_pairs_option()
    on_duplicate: OnDuplicate = on_duplicate_option()

    use_case = "qrelkit.commands.correlate:run"
    document = "qrelkit.commands.documents.data:correlations"
    positional = ("qrels", "runs", "measures")

    def check(self) -> None:
        if not self.qrels:
            raise QrelkitError("give the qrels: --qrels FILE_OR_NAME (repeatable)")
        object.__setattr__(self, "measures", self.measures or ("nDCG@10",))
        check_keep(self.keep)


@dataclass(frozen=True)
class NRGRequest(Request):
    """`qrelkit nrg`: Normalized Residual Gain (Bigdeli, Arabzadeh, Bagheri and Clarke, SIGIR-AP 2024):
    what each run adds over its prior runs. Means run over the queries of the qrels; a run that misses
    one scores 0 on it."""

    qrels: QrelsRef = qrels_option("--qrels", QRELS_HELP)
    runs: RunsRef = runs_option()
    more_runs: tuple[str, ...] = more_runs_option()
    browsing_model: str = option("--browsing-model", "ndcg, rr (seen = 1/i), precision (seen = 1 to K), rbp:P.", "ndcg")
    depth: str | None = option(
        "--depth",
        "Cut-off K for the run and its priors, or 'full' (the reference code's choice).",
        "10",
        cli=str,
        parse=lambda value: None if value is None else str(value),
    )
    gain: str = option("--gain", "linear (the grade), exp (2^g - 1), or binary:REL_LEVEL.", "linear")
    prior: PriorSpec = option(
        "--prior",
        "all-others | order:FILE | best-per-group:FILE[:COLUMN] | runs:A,B; from Python also {run: [prior runs]}.",
        "all-others",
        cli=str,
        parse=PriorSpec.parse,
    )
    order: str = option("--order", "Ranking order: trec_eval (score desc, docid desc) or file (as listed).", "trec_eval")
    compare: bool = option("--compare", "Also unique contributions, rareness-based P@K and TaSC.", False)
    plot: Path | None = option("--plot", "Write the NRG vs metric plot (PNG/PDF/SVG) here.", None, parse=optional_path)
    force: bool = force_option()
    groups: GroupsFile | None = option(
        "--groups", "FILE[:COLUMN] of run groups to mark in the plot.", None, cli=str | None, parse=GroupsFile.parse
    )
    on_duplicate: OnDuplicate = on_duplicate_option()
    best_by: Any = None  # best-per-group: rank each group's runs by these scores ({run: score}; default: this NRG's base metric)
    per_query: bool = option("--per-query", "Also print each query's values.", False, api=False)

    use_case = "qrelkit.commands.nrg:run"
    document = "qrelkit.commands.documents.scoring:nrg"
    positional = ("qrels", "runs")

    def check(self) -> None:
        if not self.qrels.given:
            raise QrelkitError("give the qrels: --qrels FILE_OR_NAME")
        object.__setattr__(self, "runs", self.runs.plus(self.more_runs))


@dataclass(frozen=True)
class FDRequest(Request):
    """`qrelkit fd`: Fréchet distance between the embeddings of the relevant judged items and each
    run's top-k (Arabzadeh and Clarke, EACL 2024): lower is better. Reports n and d; FD with fewer
    items than dimensions is exact but its covariance is rank-deficient. Documents from --docs or the
    database; vectors cached in --cache, by default the database (or, without one, the cache folder):
    a second run embeds nothing it embedded before, and says what it reused."""

    qrels: QrelsRef = qrels_option("--qrels", "Qrels: a TREC file, or a qrels set in --db.")
    runs: RunsRef = runs_option()
    more_runs: tuple[str, ...] = more_runs_option()
    docs: Path | None = option("--docs", "Documents JSONL (text or image); default: the documents in --db.", None, parse=optional_path)
    embedder: str = option("--embedder", "minilm | a sentence-transformers path or hub id | open_clip:MODEL:WEIGHTS (images).", "minilm")
    backend: str = option("--backend", "For minilm: onnx (int8, no torch) or torch.", "onnx")
    k: tuple[int, ...] = option(
        "--k", "Cut-off; repeatable (paper: --k 1 --k 10). Default 10.", (10,), parse=lambda v: integers(v) or (10,)
    )
    urr: bool = option("--urr", "Unlabeled Retrieved Results: the first k unjudged items per query.", False)
    max_rel: int | None = option("--max-rel", "At most M relevant items per query (see --keep).", None)
    keep: str = keep_option()
    rel_level: int | None = option("--rel-level", "Relevant = grade >= LEVEL (default 2 if graded, else 1).", None)
    resamples: int = resamples_option(
        "Resamples (half-samples for subsampling) of the queries for 95% intervals (0: no intervals; the jackknife draws none)."
    )
    seed: int = option("--seed", "Seed of the sparsification and the resamples.", 0, parse=check_seed)
    interval: str = option(
        "--interval",
        "Interval method over queries: bca (default for FD: bootstrap, bias-corrected and accelerated), percentile, "
        "jackknife or subsampling.",
        FD_DEFAULT_METHOD,
        parse=check_method,
    )
    workers: int | None = option(
        "--workers", "Processes for the bootstrap (default: one per core when it is large; 1: this one).", None, min=1
    )
    judge_run: str | None = option("--judge-run", "A judge run in --db: its id, a unique id prefix, or its name.", None)
    cache: Path | None = option(
        "--cache",
        "Database file that caches embeddings (default: --db when it exists, else embeddings.duckdb in the cache folder, "
        "$QRELKIT_CACHE or ~/.cache/qrelkit).",
        None,
        parse=optional_path,
    )
    image_root: Path | None = option("--image-root", "Folder image paths are relative to.", None, parse=optional_path)
    plot: Path | None = option("--plot", "Write the bootstrap intervals per run (PNG/PDF/SVG).", None, parse=optional_path)
    plot_metric: Path | None = option("--plot-metric", "Write FD vs --metric per run, with Kendall τ.", None, parse=optional_path)
    metric: str = option("--metric", "ir_measures measure for --plot-metric (full qrels).", "nDCG@10")
    force: bool = force_option()
    on_duplicate: OnDuplicate = on_duplicate_option()

    use_case = "qrelkit.commands.fd:run"
    document = "qrelkit.commands.documents.scoring:fd"
    positional = ("qrels", "runs")

    def check(self) -> None:
        if self.qrels.given == (self.judge_run is not None):
            raise QrelkitError("give either --qrels (a file or a qrels set in --db) or --judge-run (its graded qrels)")
        if self.judge_run is not None:
            object.__setattr__(self, "qrels", QrelsRef(judge_run=self.judge_run))
        object.__setattr__(self, "runs", self.runs.plus(self.more_runs))
        check_keep(self.keep)

    @property
    def embedder_ref(self) -> EmbedderRef:
        return EmbedderRef(self.embedder, self.backend)

    @property
    def settings(self) -> Any:
        """The FD settings (`qrelkit.evaluate.fd.FDSettings`)."""
        from qrelkit.evaluate.fd.runs import FDSettings

        return FDSettings(self.k, self.urr, self.max_rel, self.rel_level, self.resamples, self.seed, self.interval, self.keep)
