"""Normalized Residual Gain (Bigdeli, Arabzadeh, Bagheri and Clarke, SIGIR-AP 2024; seed 004).

NRG scores a ranking R against prior rankings 𝓡 = {R_1..R_M} a searcher has already seen.
An item's residual gain is what is left of its gain after the priors (Eq. 3):

    G(d|𝓡) = G(d) · Π_j (1 − seen(pos(d, R_j)))          seen(∞) = 0

and NRG is the metric's browsing model with residual gain in place of gain (Eq. 4),
normalised as the metric normalises: nDCG and the 1/i model by the ideal ranking of the
query's judged items sorted by residual gain (cut at the depth), precision by K, RBP by
1/(1−p). With no priors it is the plain metric.

The work is done on one (run × relevant item) matrix of ranks (``layout``), so its cost grows
with runs × relevant items, not with the (target, prior, document) triples that the reference
code loops over. The measures seed 004 compares NRG with are in ``qrelkit.evaluate.nrg.compare``.

Means run over the queries of the qrels; a run that lacks a query scores 0 on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from qrelkit.errors import QrelkitError

Grades = Mapping[str, Mapping[str, int]]
PriorSets = Mapping[str, Sequence[str]]


class NRGError(QrelkitError):
    """A bad NRG option or prior set (unknown run, unknown model, ...)."""


@dataclass(frozen=True)
class BrowsingModel:
    """seen(i): the probability that the searcher looks at rank i."""

    kind: str  # ndcg | rr | precision | rbp
    p: float = 0.8  # persistence, RBP only

    @classmethod
    def parse(cls, spec: str | BrowsingModel) -> BrowsingModel:
        if isinstance(spec, BrowsingModel):
            return spec
        text = spec.strip().lower()
        if text in ("ndcg", "rr", "precision"):
            return cls(text)
        if text.startswith("rbp"):
            p_text = text[4:] if text[3:4] == ":" else ("0.8" if text == "rbp" else "")
            try:
                p = float(p_text)
            except ValueError:
                p = -1.0
            if not 0.0 < p < 1.0:
                raise NRGError(f"model {spec!r}: RBP's persistence must be a number in (0, 1), as in rbp:0.8")
            return cls("rbp", p)
        raise NRGError(f"unknown model {spec!r}; choose ndcg, rr, precision or rbp:P (e.g. rbp:0.8)")

    def seen(self, ranks: np.ndarray) -> np.ndarray:
        """seen(rank) for 1-based ranks; rank 0 means 'not in the ranking' and gives 0."""
        r = ranks.astype(np.float64)
        hit = ranks > 0
        out = np.zeros_like(r)
        if self.kind == "ndcg":
            out[hit] = 1.0 / np.log2(r[hit] + 1.0)
        elif self.kind == "rr":
            out[hit] = 1.0 / r[hit]
        elif self.kind == "precision":
            out[hit] = 1.0
        else:
            out[hit] = self.p ** (r[hit] - 1.0)
        return out

    def label(self, depth: int | None) -> str:
        at = f"@{depth}" if depth else ""
        return {"ndcg": f"nDCG{at}", "rr": f"RR-style{at}", "precision": f"P{at}", "rbp": f"RBP(p={self.p:g}){at}"}[self.kind]


@dataclass(frozen=True)
class Gain:
    """G(d) from a grade: the label (linear), 2^g − 1 (exp), or 1 at grade ≥ level (binary)."""

    kind: str  # linear | exp | binary
    level: int = 1

    @classmethod
    def parse(cls, spec: str | Gain) -> Gain:
        if isinstance(spec, Gain):
            return spec
        text = spec.strip().lower()
        if text in ("linear", "exp"):
            return cls(text)
        if text.startswith("binary"):
            level_text = text.partition(":")[2] or "1"
            try:
                return cls("binary", int(level_text))
            except ValueError:
                pass
        raise NRGError(f"unknown gain {spec!r}; choose linear, exp or binary:LEVEL (e.g. binary:2)")

    def values(self, grades: np.ndarray) -> np.ndarray:
        g = grades.astype(np.float64)
        if self.kind == "binary":
            return (g >= self.level).astype(np.float64)
        g = np.maximum(g, 0.0)  # a negative grade (spam, junk) gives no gain, not a penalty
        return g if self.kind == "linear" else np.exp2(g) - 1.0

    def label(self) -> str:
        return f"binary:{self.level}" if self.kind == "binary" else self.kind


def parse_depth(depth: int | str | None) -> int | None:
    """An int ≥ 1, or None / 'full' for the whole ranking (what the reference code does)."""
    if depth is None or (isinstance(depth, str) and depth.strip().lower() == "full"):
        return None
    try:
        value = int(depth)
    except (TypeError, ValueError):
        raise NRGError(f"depth {depth!r}: give a positive integer or 'full'") from None
    if value < 1:
        raise NRGError(f"depth {depth!r}: give a positive integer or 'full'")
    return value


@dataclass(frozen=True)
class NRGConfig:
    model: BrowsingModel
    gain: Gain
    depth: int | None  # None: full depth
    order: str = "trec_eval"  # trec_eval: score desc, docid desc; file: as the run file lists them

    @classmethod
    def parse(cls, model="ndcg", depth=10, gain="linear", order="trec_eval") -> NRGConfig:
        config = cls(BrowsingModel.parse(model), Gain.parse(gain), parse_depth(depth), order)
        if order not in ("trec_eval", "file"):
            raise NRGError(f"order {order!r}: choose trec_eval (score desc, docid desc) or file (as listed)")
        if config.model.kind == "precision" and config.depth is None:
            raise NRGError("the precision model needs a depth K (seen = 1 down to K); --depth full makes every item seen")
        return config

    @property
    def base_label(self) -> str:
        return self.model.label(self.depth)

    @property
    def label(self) -> str:
        return f"NRG[{self.base_label}, {self.gain.label()} gain]"
