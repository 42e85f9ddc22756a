"""The measures computed here on arrays, per query, exactly as trec_eval 9.0.8 defines them.

nDCG@k / nDCG   gain = grade where > 0 (or the ``gains`` map: ndcg's `level=gain` pairs),
                discount 1/log2(rank + 1); ideal = the query's judged documents by gain,
                descending (all of them, not only those retrieved); 0 when the ideal is 0
                (m_ndcg_cut.c, m_ndcg.c)
AP(rel=L)[@k]   Σ over retrieved relevant (grade ≥ L) in the top k of precision at its rank /
                #relevant (m_map.c, m_map_cut.c)
RR(rel=L)       1 / rank of the first relevant document, 0 if none (m_recip_rank.c)
P(rel=L)@k      relevant in the top k / k, even when fewer than k are retrieved (m_P.c)
R(rel=L)@k      relevant in the top k / #relevant, 0 when none is relevant (m_recall.c)
Judged@k        ir_measures' definition (after OpenNIR): judged documents in the top k / min(k,
                retrieved), ranked by score then docid *ascending* as ir_measures ranks them
the rest        trec_eval's other measures (Rprec, Bpref, infAP, IPrec, Success, the set
                measures, the counts, ...): `qrelkit.evaluate.trec_measures`

``judged_only`` (ir_measures' parameter, trec_eval's -J) ranks only the judged documents (grade ≥
0: trec_eval reads a negative grade as "in the pool, not judged").

Names are read in ir_measures' syntax (`nDCG@10`, `AP(rel=2)`, `P(rel=2)@10`, `IPrec@0.5`,
`SetF(beta=0.5)`); a name of another measure is not computed here and goes to ir_measures, and a
cut-off below 1 (which trec_eval refuses, and pytrec_eval aborts the process on) is an error.
Per-query values are returned over the qrels' queries, 0 for a query the run does not retrieve for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate import trec_measures
from qrelkit.evaluate.ranked import Gains, JudgedPairs, RankedRun, divide, gain_of

_NAME = re.compile(r"(?P<family>[A-Za-z_][A-Za-z0-9_]*)(?:\((?P<params>[^()]*)\))?(?:@(?P<at>[0-9.eE+-]+))?")
_PARAM = re.compile(r"\s*(?P<key>[a-z_]+)\s*=\s*(?P<value>\{[^{}]*\}|[^,]+?)\s*(?:,|$)")

_REL, _REL_JUDGED = frozenset({"rel"}), frozenset({"rel", "judged_only"})
# family -> (what @ holds: "cutoff" (an integer >= 1), "recall" (0..1) or None; @ required; parameters taken)
_FAMILIES: dict[str, tuple[str | None, bool, frozenset[str]]] = {
    "nDCG": ("cutoff", False, frozenset({"judged_only", "gains", "dcg"})),
    "AP": ("cutoff", False, _REL_JUDGED),
    "Judged": ("cutoff", True, frozenset()),
    "NumQ": (None, False, frozenset()),
    "IPrec": ("recall", True, _REL_JUDGED),
    "SetP": (None, False, frozenset({"rel", "judged_only", "relative"})),
    "SetF": (None, False, frozenset({"rel", "judged_only", "beta"})),
    **dict.fromkeys(("P", "R", "Success"), ("cutoff", True, _REL_JUDGED)),
    **dict.fromkeys(("RR", "Rprec", "SetRelP", "SetAP"), (None, False, _REL_JUDGED)),
    **dict.fromkeys(("Bpref", "NumRet", "NumRelRet", "NumRel", "SetR", "infAP"), (None, False, _REL)),
}
CUTOFF_BELOW_ONE = "a cut-off must be at least 1 (trec_eval refuses {k} too: 'Negative cutoff detected')"


@dataclass(frozen=True)
class Measure:
    """One measure computed here. ``cutoff``: the rank cut-off (an integer), IPrec's recall level
    or Rprec_mult's multiple of R; ``gains``: nDCG's (level, gain) pairs; ``params``: utility's
    four coefficients, 11pt_avg's recall levels, set_F's beta."""

    family: str
    rel: int = 1
    cutoff: int | float | None = None
    judged_only: bool = False
    gains: Gains | None = None
    params: tuple[float, ...] = ()


def parse_flag(value: str, key: str, name: str) -> bool:
    if value in ("True", "true", "1"):
        return True
    if value in ("False", "false", "0"):
        return False
    raise QrelkitError(f"measure {name!r}: {key} must be True or False, found {value!r}")


def parse_gains(items: list[str], separator: str, name: str) -> Gains:
    """(level, gain) pairs from ``level<separator>gain`` items (`1:3` in ir_measures' gains, `1=3`
    in trec_eval's ndcg parameters); levels are grades ≥ 0."""
    pairs = []
    for item in (item.strip() for item in items):
        if not item:
            continue
        level, _, gain = item.partition(separator)
        try:
            pairs.append((int(level), float(gain)))
        except ValueError:
            raise QrelkitError(f"measure {name!r}: a gain is LEVEL{separator}GAIN with an integer level, found {item!r}") from None
        if pairs[-1][0] < 0:
            raise QrelkitError(f"measure {name!r}: gains are for grades 0 and up, found level {pairs[-1][0]}")
    return tuple(sorted(dict(pairs).items()))


def _params(text: str, allowed: frozenset[str]) -> dict[str, str] | None:
    """The ``key=value`` parameters, or None when one is not a parameter computed here."""
    found: dict[str, str] = {}
    rest = text.strip()
    while rest:
        match = _PARAM.match(rest)
        if match is None or match["key"] not in allowed:
            return None
        found[match["key"]] = match["value"].strip().strip("'\"")
        rest = rest[match.end() :].strip()
    return found


def _at(kind: str, text: str, name: str) -> int | float:
    if kind == "recall":
        recall = parse_number(text, "the recall level", name)
        if not 0.0 <= recall <= 1.0:
            raise QrelkitError(f"measure {name!r}: IPrec's recall level must lie in [0, 1], found {text}")
        return recall
    if not re.fullmatch(r"-?[0-9]+", text):
        raise QrelkitError(f"measure {name!r}: the cut-off must be an integer, found {text!r}")
    if int(text) < 1:
        raise QrelkitError(f"measure {name!r}: " + CUTOFF_BELOW_ONE.format(k=int(text)))
    return int(text)


def vectorised_measure(name: str) -> Measure | None:
    """The measure ``name`` spells if it is one computed here; None sends it to ir_measures."""
    match = _NAME.fullmatch(name.strip())
    if match is None or match["family"] not in _FAMILIES:
        return None
    family = match["family"]
    at_kind, at_required, allowed = _FAMILIES[family]
    params = _params(match["params"] or "", allowed)
    if params is None or params.get("dcg", "log2") != "log2":
        return None
    if (match["at"] is None and at_required) or (match["at"] is not None and at_kind is None):
        return None
    at = _at(at_kind, match["at"], name) if match["at"] is not None and at_kind else None
    rel = params.get("rel", "1")
    if not re.fullmatch(r"[0-9]+", rel):
        raise QrelkitError(f"measure {name!r}: rel must be an integer ≥ 0, found {rel!r}")
    judged_only = parse_flag(params["judged_only"], "judged_only", name) if "judged_only" in params else False
    gains = parse_gains(params["gains"].strip("{}").split(","), ":", name) if "gains" in params else None
    if family == "SetRelP" or (family == "SetP" and parse_flag(params.get("relative", "False"), "relative", name)):
        family = "SetRelP"
    extra = (parse_number(params.get("beta", "1"), "beta", name),) if family == "SetF" else ()
    if family == "NumRet" and "rel" in params:  # ir_measures' NumRet(rel=L) is trec_eval's num_rel_ret
        family = "NumRelRet"
    return Measure(family, int(rel), at, judged_only, gains, extra)


def parse_number(text: str, key: str, name: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise QrelkitError(f"measure {name!r}: {key} must be a number, found {text!r}") from None


def _ndcg(ranked: RankedRun, pairs: JudgedPairs, cutoff: int | None, gains: Gains | None) -> np.ndarray:
    gain = gain_of(ranked.grade, gains)
    if cutoff is not None:
        gain[ranked.rank > cutoff] = 0.0
    dcg = ranked.per_query(gain / np.log2(ranked.rank + 1.0))
    return divide(dcg, pairs.ideal_dcg(cutoff, gains))


def _average_precision(ranked: RankedRun, pairs: JudgedPairs, level: int, cutoff: int | None) -> np.ndarray:
    relevant, so_far = ranked.relevant_so_far(level)
    if cutoff is not None:
        relevant = relevant & (ranked.rank <= cutoff)
    precision_sum = ranked.per_query(np.where(relevant, so_far / ranked.rank, 0.0))
    return divide(precision_sum, pairs.relevant_counts(level))


def _reciprocal_rank(ranked: RankedRun, level: int) -> np.ndarray:
    relevant = ranked.grade >= level
    out = np.zeros(ranked.n_queries)
    # entries are in rank order within each query, so a query's first relevant entry comes first
    queries, first = np.unique(ranked.query[relevant], return_index=True)
    out[queries] = 1.0 / ranked.rank[relevant][first]
    return out


def compute(measure: Measure, ranked: RankedRun, pairs: JudgedPairs, ranked_ascending: RankedRun | None = None) -> np.ndarray:
    """(Q,) values of ``measure`` for one run over ``pairs.queries``.

    ``ranked_ascending`` (the run in ir_measures' tie order) is needed only by Judged@k.
    """
    family, level, cutoff = measure.family, measure.rel, measure.cutoff
    if measure.judged_only:
        ranked = ranked.judged_only()
    if family == "nDCG":
        return _ndcg(ranked, pairs, int(cutoff) if cutoff is not None else None, measure.gains)
    if family == "AP":
        return _average_precision(ranked, pairs, level, int(cutoff) if cutoff is not None else None)
    if family == "RR":
        return _reciprocal_rank(ranked, level)
    if family == "P":
        assert cutoff is not None
        return ranked.relevant_in_top(level, cutoff) / cutoff
    if family == "R":
        assert cutoff is not None
        return divide(ranked.relevant_in_top(level, cutoff), pairs.relevant_counts(level))
    if family == "Judged":
        if ranked_ascending is None:
            raise ValueError("Judged@k needs the run in ir_measures' tie order")
        assert cutoff is not None
        in_top = ranked_ascending.rank <= int(cutoff)
        return divide(
            ranked_ascending.per_query((ranked_ascending.judged & in_top).astype(np.float64)),
            ranked_ascending.per_query(in_top.astype(np.float64)),
        )
    return trec_measures.compute(measure, ranked, pairs)
