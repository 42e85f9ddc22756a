"""trec_eval's measure names, read as the measures they are: `ndcg_cut_10` (or `ndcg_cut.10`, the
`-m` spelling) is nDCG@10, `map` is AP, `recip_rank` is RR, `P_5` is P@5, `recall_1000` is R@1000.
A name's relevance level is trec_eval's `-l` (default 1); `map_rel2`-style suffixes, which some
track overviews print (`map_rel2` = AP(rel=2)), are read too.

Pure string work: no import of ir_measures, so that common names stay on the vectorised path.
"""

from __future__ import annotations

import re

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
