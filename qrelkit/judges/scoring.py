"""The one scoring rule and the one status policy of every generative judge (openai, vllm,
llamacpp, transformers, and any that come next). Backends only read their model's output into
the shapes below; what counts as a grade, where it is read, and which status a failure gets is
decided here, so that expected scores and status counts are comparable across backends.

**The answer position.** The place in the model's answer where the grade is written:

* with a *forced* answer prefix (llamacpp, transformers and vLLM's `expected` mode append the
  template's answer prefix, e.g. "Relevance: ", to the prompt), the first generated token;
* otherwise (a free answer such as "The passage is on topic. Relevance: 2"), the token in which
  the template parser's ``score`` group begins, in its last match: the grade the parsed score
  comes from. With no match there is no answer position.

**The expected grade** at that position: the next-token log-probabilities of the template's
grade tokens (`PromptTemplate.grade_token_list`, by default each integer of the score range),
renormalised over those tokens: E = Σ g·p(g) / Σ p(g). A grade's variants that differ only in
surrounding white space ("2", " 2", "▁2" decoded as " 2") are one grade: their probabilities
add up. Renormalising makes E independent of how much mass the model put on other tokens, and
of whether a backend gives the full vocabulary (llamacpp, transformers) or only the top-k
alternatives (OpenAI, vLLM): a grade outside the top-k counts as probability 0.

**The status policy.**

* ``input_error``: the pair could not be put to the model (the template cannot render it, the
  image is missing, corrupt or outside its root, the prompt does not fit the context). Decided
  before the model runs.
* ``model_error``: the model or endpoint did not produce an answer (an exception in the backend,
  an HTTP failure after its retries, a malformed response, an answer withheld by a content
  filter), or, when the judge scores by the expected grade, the answer came without any token
  probabilities at all (the backend cannot give what the judge needs).
* ``parse_error``: the model answered, but the answer holds no score: the parser finds no grade
  in range, or, when scoring by the expected grade, no grade token has a probability at the
  answer position (or there is no answer position).
* ``ok``: a score. ``score`` is the parsed grade (``score: parsed``) or the expected grade
  (``score: expected``); the other one is stored beside it when it exists (``parsed``,
  ``expected``), so a run can be graded by either without judging again.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from qrelkit.judges.base import JudgeError, Judgment
from qrelkit.prompts import PromptTemplate, parse_score, score_offset

ScoreMode = Literal["parsed", "expected"]
# Per generated token: (its text, {candidate token text: log-probability}); the candidates should
# include the generated token itself.
TokenPositions = Sequence[tuple[str, Mapping[str, float]]]


def grade_values(grade_tokens: Sequence[str]) -> dict[str, float]:
    """Grade token (stripped) -> its grade value."""
    return {token.strip(): float(token) for token in grade_tokens}


def expected_grade(candidates: Mapping[str, float] | None, grade_tokens: Sequence[str]) -> float | None:
    """Σ g·p(g) / Σ p(g) over the grade tokens among ``candidates`` (token text -> log-probability).

    Variants of one grade (differing in white space) add up; None when no grade token has a
    finite log-probability."""
    if not candidates:
        return None
    grades = grade_values(grade_tokens)
    finite = [(token.strip(), value) for token, value in candidates.items() if token.strip() in grades and math.isfinite(value)]
    if not finite:
        return None
    top = max(value for _, value in finite)  # shift before exp: log-probabilities or raw logits alike
    weights: dict[str, float] = {}
    for grade, value in finite:
        weights[grade] = weights.get(grade, 0.0) + math.exp(value - top)
    total = sum(weights.values())
    return sum(grades[g] * w for g, w in weights.items()) / total


def grade_token_ids(vocabulary: Iterable[tuple[int, str]], grade_tokens: Sequence[str]) -> dict[str, list[int]]:
    """For a backend with the full vocabulary: grade token -> ids of every vocabulary entry whose
    decoded text is that grade up to white space (its variants). ``vocabulary`` is (id, decoded text)."""
    grades = grade_values(grade_tokens)
    ids: dict[str, list[int]] = {grade: [] for grade in grades}
    for token_id, text in vocabulary:
        stripped = text.strip()
        if stripped in ids:
            ids[stripped].append(token_id)
    return ids


def expected_grade_ids(
    vocabulary: Iterable[tuple[int, str]], template: PromptTemplate, mode: ScoreMode, refusal: Callable[[list[str]], str]
) -> dict[str, list[int]] | None:
    """`grade_token_ids` of the template's grades; None when a grade has no single-token spelling
    (e.g. "10" for a tokenizer that splits digits): no expected grade can be read for such a scale,
    and ``score: expected`` is refused (JudgeError: ``refusal`` of those grades)."""
    ids = grade_token_ids(vocabulary, template.grade_token_list)
    missing = [grade for grade, found in ids.items() if not found]
    if missing and mode == "expected":
        raise JudgeError(refusal(missing))
    return None if missing else ids


def candidates_from_logits(logits: np.ndarray, ids: Mapping[str, Sequence[int]]) -> dict[str, float]:
    """Grade token -> log-probability at one position, from the full vocabulary's logits
    (variants of a grade summed: the log-sum-exp of their log-probabilities)."""
    logits = np.asarray(logits, dtype=np.float64)
    shifted = logits - logits.max()
    log_probs = shifted - math.log(float(np.exp(shifted).sum()))
    out = {}
    for grade, token_ids in ids.items():
        if len(token_ids):
            chosen = log_probs[np.asarray(token_ids, dtype=np.int64)]
            top = float(chosen.max())
            out[grade] = top + math.log(float(np.exp(chosen - top).sum()))
    return out


def first_line(text: str) -> str:
    """The answer up to its first line break after some content (a small model that goes on
    writing "Relevance: 2\\nRelevance: 3" answered 2; the parser takes the last match)."""
    stripped = text.lstrip()
    cut = stripped.find("\n")
    return text if cut < 0 else text[: len(text) - len(stripped) + cut]


def answer_candidates(positions: TokenPositions | None, *, template: PromptTemplate, forced: bool) -> Mapping[str, float] | None:
    """The candidates at the answer position (see the module docstring).

    None when the backend gave no token probabilities at all; an empty mapping when it did but
    there is no answer position (a free answer the parser finds no grade in)."""
    if positions is None:
        return None
    if not positions:
        return {}
    if forced:
        return positions[0][1]
    joined = "".join(token for token, _ in positions)
    offset = score_offset(joined, template)
    if offset is None:
        return {}
    ends = itertools.accumulate(len(token) for token, _ in positions)
    return next((candidates for (_, candidates), end in zip(positions, ends) if offset < end), {})


def judgment_from_answer(
    qid: str,
    docid: str,
    *,
    text: str | None,
    template: PromptTemplate,
    mode: ScoreMode,
    candidates: Mapping[str, float] | None,
    **common: Any,
) -> Judgment:
    """The judgment for a model's answer under the one status policy.

    ``candidates``: the answer position's candidates (from :func:`answer_candidates`, or the
    grade tokens' log-probabilities read from full logits); None when the backend gave no token
    probabilities. ``common`` carries raw output, tokens, latency, model id and the like."""
    parsed = parse_score(text, template)
    expected = expected_grade(candidates, template.grade_token_list) if candidates else None
    parsed_score = parsed.score if parsed.ok else None
    if mode == "expected":
        if candidates is None:
            return Judgment(qid, docid, "model_error", error="the backend returned no token probabilities for the answer", **common)
        if expected is None:
            where = "at the answer position" if candidates else "(no answer position: the answer holds no grade)"
            return Judgment(qid, docid, "parse_error", error=f"no grade token has a probability {where}", **common)
        return Judgment(qid, docid, "ok", score=expected, parsed=parsed_score, expected=expected, **common)
    if not parsed.ok:
        return Judgment(qid, docid, "parse_error", error=parsed.error, **common)
    return Judgment(qid, docid, "ok", score=parsed_score, parsed=parsed_score, expected=expected, **common)
