"""trec_eval's measure names, read as the measures they are: `ndcg_cut_10` (or `ndcg_cut.10`, the
`-m` spelling) is nDCG@10, `map` is AP, `recip_rank` is RR, `P_5` is P@5, `recall_1000` is R@1000.
A name's relevance level is trec_eval's `-l` (default 1); `map_rel2`-style suffixes, which some
track overviews print (`map_rel2` = AP(rel=2)), are read too.

Pure string work: no import of ir_measures, so that common names stay on the vectorised path.
"""

from __future__ import annotations

import re
from typing import Any

from qrelkit.errors import QrelkitError

# trec_eval name -> ir_measures name; {k} is a cut-off.
_FIXED = {
    "map": "AP",
    "ndcg": "nDCG",
    "recip_rank": "RR",
    "bpref": "Bpref",
    "Rprec": "Rprec",
    "num_ret": "NumRet",
    "num_rel": "NumRel",
    "num_rel_ret": "NumRelRet",
    "infAP": "infAP",
}
_CUT = {"ndcg_cut": "nDCG@{k}", "P": "P@{k}", "recall": "R@{k}", "map_cut": "AP@{k}", "success": "Success@{k}"}
_WITH_REL = {"AP", "RR", "P", "R", "Rprec", "Bpref", "NumRelRet", "Success"}
_NAME = re.compile(r"^(?P<base>[A-Za-z_]+?)(?:[._](?P<k>\d+))?(?:_rel(?P<rel>\d+))?$")


def from_trec_eval(name: str) -> str | None:
    """The ir_measures spelling of a trec_eval measure name, or None when ``name`` is not one."""
    match = _NAME.match(name.strip())
    if match is None:
        return None
    base, k, rel = match["base"], match["k"], match["rel"]
    if k is not None and base in _CUT:
        measure = _CUT[base].format(k=k)
    elif k is None and base in _FIXED:
        measure = _FIXED[base]
    else:
        return None
    if rel is not None and rel != "1":
        family, _, cutoff = measure.partition("@")
        if family not in _WITH_REL:
            return None
        measure = f"{family}(rel={rel})" + (f"@{cutoff}" if cutoff else "")
    return measure


# Other toolkits' spellings (ranx's `ndcg@10`, `mrr@10`, `precision@5`, lower-case names) -> the
# family qrelkit spells: offered as a suggestion in the error, never read silently, since the user
# should see which measure (and relevance level) they get.
_OTHER_FAMILIES = {
    "ndcg": "nDCG",
    "mrr": "RR",
    "rr": "RR",
    "recip_rank": "RR",
    "map": "AP",
    "ap": "AP",
    "precision": "P",
    "p": "P",
    "recall": "R",
    "r": "R",
    "hit_rate": "Success",
    "hitrate": "Success",
    "success": "Success",
    "r-precision": "Rprec",
    "r_precision": "Rprec",
    "rprec": "Rprec",
    "bpref": "Bpref",
    "judged": "Judged",
}
_OTHER = re.compile(r"^(?P<family>[A-Za-z_\-]+?)(?:@(?P<k>\d+))?$")


def suggest_measure(name: str) -> str | None:
    """The measure qrelkit spells for another toolkit's name (``ndcg@10`` -> nDCG@10, ``mrr@10`` ->
    RR@10), or None when there is none to offer."""
    match = _OTHER.match(name.strip())
    if match is None:
        return None
    family = _OTHER_FAMILIES.get(match["family"].lower())
    if family is None:
        return None
    suggestion = family + (f"@{match['k']}" if match["k"] else "")
    return None if suggestion == name.strip() else suggestion


# trec_eval 9.0.8's measure table (measures.c): `-q` prints a query's measures, and the final
# `all` block, in this order whatever the order of -m; a family's cut-offs ascending.
TREC_EVAL_ORDER = (
    "runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank iprec_at_recall P relstring recall infAP "
    "gm_bpref Rprec_mult utility 11pt_avg binG G ndcg ndcg_rel Rndcg ndcg_cut map_cut relative_P success"
).split()
# Counts: trec_eval prints them as integers, and their `all` line is a sum over queries, not a mean.
TREC_EVAL_COUNTS = {"num_ret", "num_rel", "num_rel_ret"}
_FAMILY_TO_TREC = {"nDCG": "ndcg", "AP": "map", "RR": "recip_rank"}
_CUT_FAMILY_TO_TREC = {"nDCG": "ndcg_cut", "P": "P", "R": "recall", "AP": "map_cut", "Success": "success"}
_OURS = re.compile(r"^(?P<family>[A-Za-z]+)(?:\(rel=(?P<rel>\d+)\))?(?:@(?P<k>\d+))?$")


def to_trec_eval(name: str) -> str | None:
    """The name trec_eval prints for the measure spelled ``name`` (nDCG@10 -> ndcg_cut_10,
    AP(rel=2) -> map, P_10_rel2 -> P_10: trec_eval names no relevance level, it takes one per
    call with -l), or None when trec_eval has no such measure."""
    spelled = from_trec_eval(name)
    measure = spelled if spelled is not None else name.strip()
    match = _OURS.match(measure)
    if match is None:
        return None
    family, k = match["family"], match["k"]
    if k is not None:
        base = _CUT_FAMILY_TO_TREC.get(family)
        return f"{base}_{k}" if base else None
    fixed = {value: key for key, value in _FIXED.items()}
    return _FAMILY_TO_TREC.get(family) or fixed.get(family)


def trec_eval_sort_key(trec_name: str) -> tuple[int, int]:
    """(position in trec_eval's table, cut-off) of a name :func:`to_trec_eval` gave."""
    for family in sorted(TREC_EVAL_ORDER, key=len, reverse=True):
        rest = trec_name[len(family) :]
        if trec_name == family or (trec_name.startswith(family + "_") and rest[1:].isdigit()):
            return TREC_EVAL_ORDER.index(family), int(rest[1:]) if rest else 0
    return len(TREC_EVAL_ORDER), 0


def trec_eval_names(measures: list[str]) -> dict[str, str]:
    """measure -> the name `--format trec` prints it under; two measures that trec_eval would
    print under one name (AP and AP(rel=2) are both `map`) are an error."""
    printed: dict[str, str] = {}
    taken: dict[str, str] = {}
    for measure in measures:
        name = to_trec_eval(measure) or measure
        if name in taken:
            raise QrelkitError(
                f"--format trec: {taken[name]!r} and {measure!r} both print as trec_eval's {name!r} (trec_eval takes one "
                "relevance level, -l, per call); evaluate them in two calls, or use --format table or json"
            )
        printed[measure] = name
        taken[name] = measure
    return printed


def trec_eval_all(evaluation: Any, run: str, measure: str) -> float:
    """The value of trec_eval's `all` line of ``measure`` for ``run``: trec_eval adds the queries up
    one by one in qid order, then divides by num_q (a count is a plain sum); with -c (a mean over the
    qrels' queries) a query the run misses is added too (it adds only to num_rel)."""
    import numpy as np

    covered = evaluation.covers(run)
    summed = covered if evaluation.average == "run" else np.ones_like(covered)
    total = float(np.cumsum(evaluation.values[run][measure][summed])[-1]) if summed.any() else 0.0
    divisor = 1 if trec_eval_names([measure])[measure] in TREC_EVAL_COUNTS else evaluation.num_q(run)
    return total / divisor if divisor else 0.0
