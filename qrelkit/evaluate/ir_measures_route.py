"""The measures qrelkit does not compute itself (ERR, RBP, ...), through ir_measures, bounded:
what pytrec_eval (trec_eval's C code inside ir_measures) cannot take is refused by name or kept
away from it, never left to abort the process or to hang it.

- a cut-off below 1: trec_eval refuses it ("Negative cutoff detected"), and pytrec_eval then
  aborts the process (SIGABRT) on its first query;
- relevance level 0: pytrec_eval refuses it with a TypeError (trec_eval -l0 takes it);
- a query whose every judgment is negative: trec_eval reads a negative grade as "in the pool, not
  judged", and such a query gives its C code no judged level at all; it then fails or reuses the
  previous query's state, so its values depend on the order of the run's lines, and with
  judged_only it can loop forever. Such a query has nothing relevant and nothing judged: every
  measure this route computes is 0 on it (what trec_eval prints for it when it gets that far), so
  it is scored here and never handed over.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.trec_names import suggest_measure
from qrelkit.io.trec import Run

EXAMPLES = "examples: nDCG@10, 'AP(rel=2)', 'RR(rel=2)', P@10, R@100"


def measure_hint(name: str) -> str:
    """What to write instead of the unknown measure ``name``: the spelling of another toolkit's name
    (ranx's ndcg@10), where FD is scored, or examples."""
    import re

    if re.fullmatch(r"(URR-)?FD@\d+", name.strip(), flags=re.IGNORECASE):
        return (
            f"{name} is not scored from qrels but from embeddings, by `qrelkit fd`: write it with `qrelkit fd ... --json > fd.json`, "
            "then give that file to `qrelkit correlate --scores fd.json` (or to `qrelkit correlate` in Python, scores=)"
        )
    suggestion = suggest_measure(name)
    if suggestion is not None:
        return f"did you mean {suggestion!r}? (qrelkit spells measures as ir_measures does: nDCG@10, 'AP(rel=2)', RR@10, P@10, R@100)"
    return EXAMPLES


def ir_measures_measure(name: str) -> Any:
    """The ir_measures measure ``name`` spells, refused up front where pytrec_eval would fail on it."""
    import ir_measures  # only for measures not computed here: its import costs ~0.5 s

    try:
        measure = ir_measures.parse_measure(name)
    except (ValueError, NameError, SyntaxError, TypeError, AssertionError) as exc:
        raise QrelkitError(f"unknown measure {name!r} ({exc}); {measure_hint(name)}") from None
    params = getattr(measure, "params", {}) or {}
    cutoff = params.get("cutoff")
    if isinstance(cutoff, int | float) and cutoff < 1:
        raise QrelkitError(f"measure {name!r}: a cut-off must be at least 1 (trec_eval refuses {cutoff} too: 'Negative cutoff detected')")
    if params.get("rel") == 0:
        raise QrelkitError(
            f"measure {name!r}: ir_measures hands it to pytrec_eval, which takes no relevance level 0 (trec_eval -l0 does); "
            "qrelkit computes trec_eval's measures (AP, P, R, RR, nDCG, Rprec, Bpref, infAP, IPrec, Success, ...) at level 0 itself"
        )
    return measure


class IrMeasuresScorer:
    """The measures not computed here, one ir_measures evaluator each: ir_measures 0.4 can mix up
    measures of one family that differ only in parameters (nDCG@10 next to nDCG(gains=...)@10)
    when they share an evaluator. Queries whose judgments are all negative never reach it (they
    score 0: see the module's docstring)."""

    def __init__(self, measures: list[tuple[str, Any]], grades: dict[str, dict[str, int]], queries: list[str]):
        import ir_measures

        self.position = {qid: i for i, qid in enumerate(queries)}
        # queries whose every judgment is negative (none judged, in trec_eval's reading)
        self.left_out = {qid for qid, judged in grades.items() if judged and max(judged.values()) < 0}
        # Queries go to the providers as numbers (1, 2, ...): gdeval, behind ERR@k, reads no other query id
        self.alias = {qid: str(i) for i, qid in enumerate((q for q in grades if q not in self.left_out), start=1)}
        self.named = {alias: qid for qid, alias in self.alias.items()}
        handed = {self.alias[qid]: judged for qid, judged in grades.items() if qid in self.alias}
        self.names = [name for name, _ in measures]
        self.evaluators = []
        for name, measure in measures if handed else ():
            try:
                self.evaluators.append((name, ir_measures.evaluator([measure], handed)))
            except ValueError as exc:  # parsed, but no provider computes it
                providers = [line.strip(" -") for line in str(exc).splitlines()[1:] if line.strip()]
                needs = f"; ir_measures would compute it with one of: {', '.join(providers)}" if providers else ""
                raise QrelkitError(f"measure {name!r}: no installed ir_measures provider computes it{needs}") from None

    def score(self, run: Run) -> dict[str, np.ndarray]:
        import subprocess

        # scores as trec_eval compares them (float32), so that pytrec_eval breaks ties as trec_eval does
        qids, docids = run.table.column("qid").to_pylist(), run.table.column("docid").to_pylist()
        scores: dict[str, dict[str, float]] = {}
        for qid, docid, score in zip(qids, docids, run.scores32().tolist()):
            if qid in self.position and qid in self.alias:
                scores.setdefault(self.alias[qid], {})[docid] = score
        out = {name: np.zeros(len(self.position)) for name in self.names}
        for name, evaluator in self.evaluators:
            vector = np.zeros(len(self.position))
            try:
                for metric in evaluator.iter_calc(scores):
                    qid = self.named.get(metric.query_id)
                    if qid in self.position:
                        vector[self.position[qid]] = metric.value
            except subprocess.CalledProcessError as exc:  # a provider that runs a program (gdeval's perl) and failed
                said = (exc.stderr or b"").decode(errors="replace").strip().splitlines() if isinstance(exc.stderr, bytes) else []
                raise QrelkitError(
                    f"measure {name!r}: its ir_measures provider failed on run {run.name!r}" + (f": {said[0]}" if said else "")
                ) from None
            out[name] = vector
        return out
