"""trec_eval's measure names, read as the measures they are, and printed as trec_eval prints them.

Read: `ndcg_cut_10` (or `ndcg_cut.10`, the `-m` spelling) is nDCG@10, `map` is AP, `recip_rank` is
RR, `P_5` is P@5, `recall_1000` is R@1000, `iprec_at_recall_0.10` is IPrec@0.1, `set_P` is SetP,
`num_ret` is NumRet; `ndcg.1=3,2=9` is nDCG with those gains; `Rprec_mult_0.20`, `relative_P_10`,
`utility`, `11pt_avg`, `binG` and `num_nonrel_judged_ret`, which ir_measures has no name for, are
read into the measures `qrelkit.evaluate.trec_measures` computes. A name's relevance level is
trec_eval's `-l` (``level``, `evaluate --rel-level`; default 1); a `_rel2` suffix, which some track
overviews print (`map_rel2` = AP(rel=2)), is read too. A `-m` list (`P.5,10`) is several measures
(`expand_trec_eval`). trec_eval's measures qrelkit does not compute are refused by name, with the
reason (`refusal`).

Pure string work: no import of ir_measures, so that common names stay on the vectorised path.
"""

from __future__ import annotations

import re
from typing import Any

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.measures import Measure, parse_gains

# trec_eval name -> ir_measures name; {k} is a cut-off, {r} a recall level.
_FIXED = {
    "map": "AP",
    "ndcg": "nDCG",
    "recip_rank": "RR",
    "bpref": "Bpref",
    "Rprec": "Rprec",
    "num_q": "NumQ",
    "num_ret": "NumRet",
    "num_rel": "NumRel",
    "num_rel_ret": "NumRelRet",
    "infAP": "infAP",
    "set_P": "SetP",
    "set_recall": "SetR",
    "set_F": "SetF",
    "set_map": "SetAP",
    "set_relative_P": "SetRelP",
}
_CUT = {"ndcg_cut": "nDCG@{k}", "P": "P@{k}", "recall": "R@{k}", "map_cut": "AP@{k}", "success": "Success@{k}"}
_RECALL_CUT = {"iprec_at_recall": "IPrec@{r}"}
# families whose value depends on the relevance level (trec_eval's -l)
_WITH_REL = {"AP", "RR", "P", "R", "Rprec", "Bpref", "NumRel", "NumRelRet", "Success", "IPrec", "infAP"}
_WITH_REL |= {"SetP", "SetR", "SetF", "SetAP", "SetRelP"}
_NAME = re.compile(r"^(?P<base>[A-Za-z_]+?)(?:[._](?P<k>[0-9]+|[0-9]*\.[0-9]+))?$")
_REL_SUFFIX = re.compile(r"_rel(?P<rel>[0-9]+)$")

# measures with no ir_measures name, computed in trec_measures: trec_eval name -> what follows it
_TREC_ONLY = {"Rprec_mult": "multiple", "relative_P": "cutoff", "utility": "coefficients", "11pt_avg": "recall levels", "binG": None}
_TREC_ONLY |= {"num_nonrel_judged_ret": None}
_ONLY = re.compile(r"^(?P<base>Rprec_mult|relative_P|utility|11pt_avg|binG|num_nonrel_judged_ret|ndcg|set_F)(?:[._](?P<params>.+))?$")

_ASSESSORS = "it reads preference or multi-assessor (qrels_jg) judgments, which qrelkit does not read"
_REFUSED = {
    "gm_map": "it is a geometric mean over queries (of AP, each floored at 1e-5) that trec_eval prints only on its `all` line, "
    "not a value per query, and qrelkit's means are arithmetic: take the per-query AP of `evaluate --measure AP --per-query --json`",
    "gm_bpref": "it is a geometric mean over queries (of bpref, each floored at 1e-5) that trec_eval prints only on its `all` line, "
    "not a value per query, and qrelkit's means are arithmetic: take the per-query Bpref of `evaluate --measure Bpref --per-query --json`",
    "relstring": "it is a string of the top documents' grades, not a number",
    "G": "it is one of trec_eval's experimental gain measures (2008), which no track reports; qrelkit does not compute it",
    "Rndcg": "it is one of trec_eval's experimental nDCG variants (2008), which no track reports; qrelkit does not compute it",
    "ndcg_rel": "it is one of trec_eval's experimental nDCG variants (2008), which no track reports; qrelkit does not compute it",
    "ndcg_p": "it is trec_eval's ndcg with gains by another name: write ndcg.LEVEL=GAIN,... (or nDCG(gains={LEVEL: GAIN}))",
    "rbp": "it is trec_eval 10.0's (rank-biased precision); qrelkit computes trec_eval 9.0.8's measures, checked against its test suite",
    "rbp_resid": "it is trec_eval 10.0's (rank-biased precision's residual); qrelkit computes trec_eval 9.0.8's measures",
    "unjudged": "it is trec_eval 10.0's; Judged@k is its complement (the share of the top k that is judged)",
    "yaap": "it is trec_eval's experimental measure, which no track reports; qrelkit does not compute it",
}
_REFUSED_PREFIXES = ("prefs_",)
_REFUSED_SUFFIXES = ("_avgjg",)


def _split_level(name: str) -> tuple[str, str | None]:
    match = _REL_SUFFIX.search(name)
    return (name[: match.start()], match["rel"]) if match else (name, None)


def refusal(name: str) -> str | None:
    """Why qrelkit does not compute the trec_eval measure ``name`` (None: not such a measure)."""
    base = _split_level(name.strip())[0].split(".")[0]
    match = re.match(r"^(?P<base>[A-Za-z_]+?)(?:_[0-9.,=-]+)?$", base)
    base = match["base"] if match else base
    if base in _REFUSED:
        return _REFUSED[base]
    if base.startswith(_REFUSED_PREFIXES) or base.endswith(_REFUSED_SUFFIXES):
        return _ASSESSORS
    return None


def from_trec_eval(name: str, level: int | None = None) -> str | None:
    """The ir_measures spelling of a trec_eval measure name (at relevance ``level`` unless the name
    carries its own `_relL`), or None when ``name`` is not one."""
    text, rel = _split_level(name.strip())
    match = _NAME.match(text)
    if match is None:
        return None
    base, k = match["base"], match["k"]
    if k is not None and base in _CUT and re.fullmatch(r"[0-9]+", k):
        measure = _CUT[base].format(k=int(k))
    elif k is not None and base in _RECALL_CUT:
        measure = _RECALL_CUT[base].format(r=float(k))
    elif k is None and base in _FIXED:
        measure = _FIXED[base]
    else:
        return None
    rel = rel if rel is not None else (str(level) if level is not None else None)
    if rel is not None and rel != "1":
        family, _, cutoff = measure.partition("@")
        if family not in _WITH_REL:
            return None if _split_level(name.strip())[1] is not None else measure
        measure = f"{family}(rel={rel})" + (f"@{cutoff}" if cutoff else "")
    return measure


def _numbers(text: str, name: str) -> tuple[float, ...]:
    try:
        return tuple(float(item) for item in text.split(","))
    except ValueError:
        raise QrelkitError(f"measure {name!r}: expected numbers separated by commas, found {text!r}") from None


def trec_only_measure(name: str, level: int | None = None) -> Measure | None:
    """The measure of a trec_eval name ir_measures has no spelling for (Rprec_mult_0.20,
    relative_P_10, utility, 11pt_avg, binG, num_nonrel_judged_ret, ndcg.1=3,2=9, set_F.0.5), or None."""
    text, rel_text = _split_level(name.strip())
    match = _ONLY.match(text)
    if match is None:
        return None
    base, params = match["base"], match["params"]
    rel = int(rel_text) if rel_text is not None else (level if level is not None else 1)
    if base == "ndcg":
        if params is None or "=" not in params:
            return None
        return Measure("nDCG", 1, None, gains=parse_gains(params.split(","), "=", name))
    if base == "set_F":
        return Measure("SetF", rel, params=_numbers(params, name)[:1]) if params else None
    if base in ("binG", "num_nonrel_judged_ret"):
        return Measure(base, rel) if params is None else None
    if base == "utility":
        coefficients = _numbers(params, name) if params else (1.0, -1.0, 0.0, 0.0)
        if len(coefficients) != 4:
            raise QrelkitError(f"measure {name!r}: utility takes 4 coefficients (retrieved relevant, retrieved nonrelevant, ...)")
        return Measure("utility", rel, params=coefficients)
    if base == "11pt_avg":
        return Measure("11pt_avg", rel, params=_numbers(params, name) if params else ())
    if params is None:
        raise QrelkitError(f"measure {name!r}: give its {_TREC_ONLY[base]}, e.g. {base}_{'0.20' if base == 'Rprec_mult' else '10'}")
    value = _numbers(params, name)[0]
    if base == "relative_P":
        if not value.is_integer() or value < 1:
            raise QrelkitError(f"measure {name!r}: the cut-off must be an integer ≥ 1, found {params!r}")
        return Measure("relative_P", rel, int(value))
    return Measure("Rprec_mult", rel, value)


def expand_trec_eval(name: str) -> list[str]:
    """trec_eval's `-m` lists as one name per measure: `P.5,10` -> P_5, P_10 (trec_eval prints them so);
    trec_eval's `runid` and `num_q` as none (every output says both: --format trec prints their lines,
    JSON has num_q); any other name as it is."""
    if name.strip() in ("runid", "num_q"):
        return []
    families = "P|recall|ndcg_cut|map_cut|success|relative_P|iprec_at_recall|Rprec_mult"
    match = re.fullmatch(rf"(?P<base>{families})\.(?P<list>[0-9.,]+)", name.strip())
    if match is None or "," not in match["list"]:
        return [name]
    base, items = match["base"], [item for item in match["list"].split(",") if item]
    if base in ("iprec_at_recall", "Rprec_mult"):
        return [f"{base}_{float(item):.2f}" for item in sorted(items, key=float)]
    cutoffs = sorted({int(re.match(r"[0-9]*", item)[0] or 0) for item in items})  # type: ignore[index]  # atol, as trec_eval
    return [f"{base}_{cutoff}" for cutoff in cutoffs]


# Other toolkits' spellings (ranx's `ndcg@10`, `mrr@10`, `precision@5`, lower-case names) -> the
# family qrelkit spells: offered as a suggestion in the error, never read silently, since the user
# should see which measure (and relevance level) they get.
_OTHER_FAMILIES = {
    spelled: family
    for family, spellings in {
        "nDCG": "ndcg",
        "RR": "mrr rr recip_rank",
        "AP": "map ap",
        "P": "precision p",
        "R": "recall r",
        "Success": "hit_rate hitrate success",
        "Rprec": "r-precision r_precision rprec",
        "Bpref": "bpref",
        "Judged": "judged",
    }.items()
    for spelled in spellings.split()
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
    "gm_bpref Rprec_mult utility 11pt_avg binG G ndcg ndcg_rel Rndcg ndcg_cut map_cut relative_P success set_P set_relative_P "
    "set_recall set_map set_F num_nonrel_judged_ret"
).split()
# Counts: trec_eval prints them as integers, and their `all` line is a sum over queries, not a mean.
TREC_EVAL_COUNTS = {"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"}
_TO_TREC = {value: key for key, value in _FIXED.items()}
_CUT_TO_TREC = {"nDCG": "ndcg_cut", "P": "P", "R": "recall", "AP": "map_cut", "Success": "success", "relative_P": "relative_P"}


def _printed(measure: Measure, written: str) -> str | None:
    family, cutoff = measure.family, measure.cutoff
    raw = _ONLY.match(_split_level(written.strip())[0])
    if family in ("IPrec", "Rprec_mult"):
        return f"{'iprec_at_recall' if family == 'IPrec' else family}_{float(cutoff or 0):.2f}"
    if cutoff is not None:
        return f"{_CUT_TO_TREC[family]}_{cutoff}" if family in _CUT_TO_TREC else None
    if family in ("utility", "11pt_avg", "nDCG", "SetF") and (measure.gains or (family != "nDCG" and measure.params)):
        base = {"nDCG": "ndcg", "SetF": "set_F"}.get(family, family)
        if raw is not None and raw["params"]:  # trec_eval prints the parameters as they were given
            return f"{base}_{raw['params']}"
        if measure.gains:
            return f"ndcg_{','.join(f'{level}={gain:g}' for level, gain in measure.gains)}"
        defaults = {"utility": (1.0, -1.0, 0.0, 0.0), "SetF": (1.0,)}.get(family)
        return base if measure.params == defaults else f"{base}_{','.join(f'{value:g}' for value in measure.params)}"
    if family in ("binG", "num_nonrel_judged_ret", "utility", "11pt_avg"):
        return family
    return _TO_TREC.get(family)


def to_trec_eval(name: str) -> str | None:
    """The name trec_eval prints for the measure spelled ``name`` (nDCG@10 -> ndcg_cut_10,
    AP(rel=2) -> map, P_10_rel2 -> P_10: trec_eval names no relevance level, it takes one per
    call with -l), or None when trec_eval has no such measure."""
    from qrelkit.evaluate.measures import vectorised_measure

    measure = trec_only_measure(name)
    if measure is None:
        spelled = from_trec_eval(name) or name.strip()
        try:
            measure = vectorised_measure(spelled)
        except QrelkitError:
            return None
        if measure is None:
            return "infAP" if re.fullmatch(r"infAP(\(rel=\d+\))?", spelled) else None
    return _printed(measure, name)


def trec_eval_sort_key(trec_name: str) -> tuple[int, float]:
    """(position in trec_eval's table, cut-off) of a name :func:`to_trec_eval` gave."""
    for family in sorted(TREC_EVAL_ORDER, key=len, reverse=True):
        rest = trec_name[len(family) :]
        if trec_name == family:
            return TREC_EVAL_ORDER.index(family), 0.0
        if trec_name.startswith(family + "_"):
            number = re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", rest[1:])
            return TREC_EVAL_ORDER.index(family), float(number[0]) if number else 0.0
    return len(TREC_EVAL_ORDER), 0.0


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
    qrels' queries) a query the run misses is added too (it adds only to num_rel), and num_rel's
    `all` line counts the judgments with a grade > 0 whatever the relevance level (m_num_rel.c)."""
    import numpy as np

    printed = trec_eval_names([measure])[measure]
    if printed == "num_rel" and evaluation.average == "qrels" and getattr(evaluation, "judged_positive", None) is not None:
        return float(evaluation.judged_positive)
    covered = evaluation.covers(run)
    summed = covered if evaluation.average == "run" else np.ones_like(covered)
    total = float(np.cumsum(evaluation.values[run][measure][summed])[-1]) if summed.any() else 0.0
    divisor = 1 if printed in TREC_EVAL_COUNTS else evaluation.num_q(run)
    return total / divisor if divisor else 0.0
