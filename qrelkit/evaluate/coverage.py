"""Which pairs each side of an audit ranks systems on, and why.

A judge that judged a sample of its pool (or a job's judgments so far) holds only part of the pairs
the reference judges. Scored as it stands, every pooled pair it did not judge counts as
non-relevant on its side alone, and the system ranking it gives is compared with the reference's
ranking under all of its pairs: two different sets of pairs, and a τ that says as much about the
sample's size as about the judge (on DL19, MiniLM's 600-pair sample: τ 0.57 against NIST's 9,260
pairs, 0.73 against NIST cut to the same 600). Cutting the reference to the pairs the judge judged
ranks both sides on the same pairs. κ and α are untouched: they read the shared pairs either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qrelkit.errors import QrelkitError
from qrelkit.io import Qrels

ALL, JUDGED = "all", "judged"
REFERENCE_PAIRS = (ALL, JUDGED)


def check_reference_pairs(value: str) -> str:
    if value not in REFERENCE_PAIRS:
        raise QrelkitError(f"--reference-pairs {value!r}: choose 'judged' (the pairs the judge judged) or 'all' (every reference pair)")
    return value


def cut_to_judged(reference: Qrels, model: Qrels) -> Qrels:
    """The reference's judgments of the (qid, docid) pairs the model judged, under the reference's name."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def keys(table: pa.Table) -> pa.Array:
        return pc.binary_join_element_wise(table.column("qid"), table.column("docid"), "\t")

    table = reference.table
    kept = table.filter(pc.is_in(keys(table), value_set=keys(model.table).combine_chunks()))
    return Qrels.from_table(reference.name, kept, source=reference.source)


@dataclass(frozen=True)
class Coverage:
    """The pairs the system rankings read on each side: the model's qrels as they are, and the
    reference as given (``on="all"``) or cut to the pairs the model judged (``on="judged"``).
    ``model_covers``: what the model's pairs are when they are part of a pool ("sample", "partial");
    ``why``: the same in words, from whoever resolved the qrels (the judge run's recorded sample)."""

    on: str = ALL
    model_pairs: int = 0
    reference_pairs: int = 0  # the reference pairs the rankings read (after the cut)
    reference_given: int = 0  # the reference pairs as given
    model_covers: str | None = None
    why: str | None = None

    @property
    def restricted(self) -> bool:
        return self.on == JUDGED

    def sentence(self) -> str | None:
        """What the rankings were computed on, when it is not simply both qrels as given."""
        why = f" ({self.why})" if self.why else ""
        if self.restricted:
            return (
                f"Systems ranked on the judged pairs only: the reference cut to the {self.reference_pairs:,} of its "
                f"{self.reference_given:,} pairs the model judged{why}; --reference-pairs all ranks them under every reference pair."
            )
        if self.model_covers is not None:
            return (
                f"Systems ranked under the reference's full pool ({self.reference_given:,} pairs) against the model's "
                f"{self.model_pairs:,} judged pairs{why}, as asked (--reference-pairs all): every pair the model did not judge "
                "counts as non-relevant on its side only, so τ reflects the sample's size as well as the judge."
            )
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "reference_pairs": self.on,
            "model": {"pairs": self.model_pairs, "covers": self.model_covers or "as given"},
            "reference": {
                "pairs": self.reference_pairs,
                "given": self.reference_given,
                "cut_to": "the pairs the model judged" if self.restricted else None,
            },
            "why": self.why,
            "sentence": self.sentence(),
        }
