"""Text perturbations: the passage with the query's words put in, an instruction to the judge, filler
that says nothing, its end cut off, or its sentences shuffled. Each keeps the passage's own text
as written wherever it leaves it alone (its spacing too)."""

from __future__ import annotations

import math
import re

from qrelkit.probes.draws import draw_int, seeded_order
from qrelkit.probes.spec import InstructionParameters, PaddingParameters, QueryTermsParameters, TruncateParameters

# Common English function words, left out of the query by `terms: content`.
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how in is it of on or the to was what when where which who why will with".split()
)
# Sentences about nothing any search query asks (padding): office routine, weather, a timetable.
FILLER = (
    "The meeting was moved to the second floor because the usual room was being painted.",
    "Several people said they preferred the earlier time, but the schedule stayed as it was.",
    "The weather stayed mild for most of the week, with a little rain on Thursday.",
    "A new coffee machine arrived in the kitchen and was set up by the end of the day.",
    "Everyone was reminded to return their visitor badges at the front desk.",
    "The bus timetable changes slightly on public holidays and during the summer.",
    "Some of the chairs in the hall were replaced after the spring cleaning.",
    "The notice board near the entrance lists the opening hours for the next month.",
    "Parking spaces behind the building are shared with the neighbouring office.",
    "The printer on the third floor was out of paper again on Monday morning.",
    "A short walk around the block takes about ten minutes at an easy pace.",
    "The library closes early on Fridays, so most people visit on other days.",
)
_WORD_START = re.compile(r"(?<!\S)\S")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _word_starts(text: str) -> list[int]:
    return [m.start() for m in _WORD_START.finditer(text)]


def _join(first: str, second: str) -> str:
    return f"{first} {second}" if first and second else first or second


def query_terms(text: str, query: str, settings: QueryTermsParameters, seed: int, qid: str, docid: str) -> str:
    words = query.split()
    if settings.terms == "content":
        kept = [w for w in words if w.lower().strip(".,;:!?\"'()") not in STOPWORDS]
        words = kept or words  # a query of stopwords alone keeps them
    insert = " ".join(words)
    if settings.where == "start":
        return _join(" ".join([insert] * settings.times), text)
    if settings.where == "end":
        return _join(text, " ".join([insert] * settings.times))
    gaps = [*_word_starts(text), len(text)]  # before any word, or after the last
    positions = sorted(
        (gaps[draw_int(len(gaps), seed, "query-terms", qid, docid, str(copy))] for copy in range(settings.times)), reverse=True
    )
    for position in positions:  # from the end, so earlier positions stay where they were
        text = _join(text, insert) if position >= len(text) else text[:position] + insert + " " + text[position:]
    return text


def instruction(text: str, query: str, settings: InstructionParameters) -> str:
    said = _join(settings.sentence.replace("{query}", query).strip(), settings.grade.strip())
    return _join(said, text) if settings.where == "start" else _join(text, said)


def padding(text: str, settings: PaddingParameters, seed: int, qid: str, docid: str) -> str:
    words: list[str] = []
    round_ = 0
    while len(words) < settings.words:
        for index in seeded_order(len(FILLER), seed, "padding", qid, docid, str(round_)):
            words += FILLER[index].split()
        round_ += 1
    filler = " ".join(words[: settings.words])
    return _join(filler, text) if settings.where == "start" else _join(text, filler)


def truncate(text: str, settings: TruncateParameters) -> str:
    starts = _word_starts(text)
    keep = max(1, math.ceil(len(starts) * settings.keep))
    return text if keep >= len(starts) else text[: starts[keep]].rstrip()


def sentence_order(text: str, seed: int, qid: str, docid: str) -> str:
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s]
    order = seeded_order(len(sentences), seed, "sentence-order", qid, docid)
    if len(sentences) > 1 and order == list(range(len(sentences))):
        order = order[1:] + order[:1]  # a draw that kept the order would perturb nothing: rotate it
    return " ".join(sentences[i] for i in order)
