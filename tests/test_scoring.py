"""One expected-grade rule and one status policy for every generative judge (judges/scoring.py):
the same token probabilities fed to each backend's reader give the same expected grade and status."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from qrelkit.io import Document, Topic
from qrelkit.judges import Pair, create_judge
from qrelkit.judges.chat_completions import read_reply
from qrelkit.judges.scoring import (
    answer_candidates,
    candidates_from_logits,
    expected_grade,
    grade_token_ids,
    judgment_from_answer,
)
from qrelkit.judges.transformers import TransformersConfig, read_next_token_logits
from qrelkit.judges.vllm import VLLMConfig, read_output
from qrelkit.prompts import load_template, score_offset

TEMPLATE = load_template("trec-dl-graded")
PAIR = Pair(Topic("q1", "how do goldfish grow"), Document("d1", "Goldfish grow with their tank."))
# The answer position's distribution: p("0")=.10, p("1")=.20, p("2")=.50, p("3")=.15, p(other)=.05.
PROBABILITIES = {"0": 0.10, "1": 0.20, "2": 0.50, "3": 0.15, "maybe": 0.05}
EXPECTED = (0 * 0.10 + 1 * 0.20 + 2 * 0.50 + 3 * 0.15) / 0.95


def openai_body(probabilities: dict[str, float] | None, answer: str = "2") -> str:
    """A Chat Completions body answering "Relevance: <answer>" (free answer, no forced prefix); the
    answer token's alternatives are ``probabilities``, the answer token among them."""
    tokens = ["Relevance", ":", " " + answer]
    choice: dict = {"index": 0, "message": {"role": "assistant", "content": "".join(tokens)}, "finish_reason": "stop"}
    if probabilities is not None:
        top = [{"token": " " + t, "logprob": math.log(p)} for t, p in probabilities.items()]
        logprob = {2: math.log(probabilities[answer])}
        choice["logprobs"] = {
            "content": [
                {"token": t, "logprob": logprob.get(i, -0.01), "top_logprobs": top if i == 2 else [{"token": t, "logprob": -0.01}]}
                for i, t in enumerate(tokens)
            ]
        }
    return json.dumps({"choices": [choice], "usage": {"prompt_tokens": 90, "completion_tokens": 3}})


def openai_judgment(probabilities, mode, answer="2"):
    judge = create_judge(
        "openai",
        {"base_url": "http://127.0.0.1:9/v1", "logprobs": probabilities is not None or mode == "expected", "score": mode},
        TEMPLATE,
    )
    try:
        return judge.route.judgment(*PAIR.key, read_reply(openai_body(probabilities, answer)), 1, 1.0)
    finally:
        judge.close()


def vllm_judgment(probabilities, mode, answer="2"):
    tokens = [(10, "Relevance"), (11, ":"), (12, " " + answer)]
    steps = None
    if probabilities is not None:
        ids = {t: 20 + i for i, t in enumerate(probabilities)}
        ids[answer] = 12  # the generated token
        steps = [{10: SimpleNamespace(logprob=-0.01, decoded_token="Relevance")}, {11: SimpleNamespace(logprob=-0.01, decoded_token=":")}]
        steps.append({ids[t]: SimpleNamespace(logprob=math.log(p), decoded_token=" " + t) for t, p in probabilities.items()})
    completion = SimpleNamespace(text="Relevance: " + answer, token_ids=[t for t, _ in tokens], logprobs=steps)
    output = SimpleNamespace(outputs=[completion], prompt_token_ids=list(range(90)))
    return read_output(PAIR, output, TEMPLATE, VLLMConfig(score=mode, answer_prefix=""), "llava", 1.0)  # a free answer


def full_logits_judgment(probabilities, mode):
    """llamacpp and transformers: the full vocabulary's logits at the forced answer position."""
    vocabulary = ["Relevance", ":", "0", "1", "2", "3", "maybe", " 2", "<eos>"]
    ids = grade_token_ids(enumerate(vocabulary), TEMPLATE.grade_token_list)
    candidates = None
    if probabilities is not None:
        p = np.full(len(vocabulary), 1e-300)
        for token, value in probabilities.items():
            p[vocabulary.index(token)] = value
        logits = np.log(p) + 7.0  # logits are log-probabilities up to a constant
        candidates = candidates_from_logits(logits, ids)
    return judgment_from_answer("q1", "d1", text="Relevance: 2", template=TEMPLATE, mode=mode, candidates=candidates)


def transformers_judgment(probabilities, mode):
    """The transformers judge's reader: one row of next-token logits at the forced answer position."""
    vocabulary = ["Relevance", ":", "0", "1", "2", "3", "maybe", " 2", "<eos>"]
    ids = grade_token_ids(enumerate(vocabulary), TEMPLATE.grade_token_list)
    logits = None
    if probabilities is not None:
        p = np.full(len(vocabulary), 1e-300)
        for token, value in probabilities.items():
            p[vocabulary.index(token)] = value
        logits = np.log(p) - 3.0
    config = TransformersConfig(score=mode)
    return read_next_token_logits(PAIR, logits, decode=vocabulary.__getitem__, grade_ids=ids, template=TEMPLATE, config=config)


READERS = {
    "openai": openai_judgment,
    "vllm": vllm_judgment,
    "llamacpp": full_logits_judgment,
    "transformers": transformers_judgment,
}


@pytest.mark.parametrize("mode", ["parsed", "expected"])
def test_the_same_probabilities_give_the_same_expected_grade_in_every_backend(mode):
    for name, read in READERS.items():
        judgment = read(PROBABILITIES, mode)
        assert judgment.status == "ok", name
        assert judgment.expected == pytest.approx(EXPECTED, abs=1e-9), name
        assert judgment.parsed == 2.0, name
        assert judgment.score == (pytest.approx(EXPECTED) if mode == "expected" else 2.0), name


def test_no_token_probabilities_is_a_model_error_in_expected_mode_and_fine_in_parsed_mode():
    for name, read in READERS.items():
        judgment = read(None, "expected")
        assert (judgment.status, judgment.score) == ("model_error", None), name
        assert "no token probabilities" in judgment.error, name
        if name == "transformers":
            continue  # its parsed mode generates (tests/test_transformers_judge.py); without logits there is no answer
        parsed = read(None, "parsed")
        assert (parsed.status, parsed.score, parsed.expected) == ("ok", 2.0, None), name


def test_no_grade_among_the_candidates_is_a_parse_error_in_expected_mode():
    # The parser reads 2 from "Relevance: 2." but the answer token is "2." (a tokenizer's merge), and
    # no alternative at that position is a grade token: no expected grade, whatever was parsed.
    merged = {"2.": 0.7, "3.": 0.3}
    for name, read in (("openai", openai_judgment), ("vllm", vllm_judgment)):
        judgment = read(merged, "expected", answer="2.")
        assert (judgment.status, judgment.score) == ("parse_error", None), name
        assert "no grade token" in judgment.error
        assert read(merged, "parsed", answer="2.").score == 2.0, name


def test_an_unparseable_answer_is_a_parse_error_in_every_backend():
    j = judgment_from_answer("q", "d", text="I cannot say.", template=TEMPLATE, mode="parsed", candidates=None)
    assert (j.status, j.score, j.parsed) == ("parse_error", None, None)
    # expected mode: the candidates exist but a free answer without a grade has no answer position
    assert answer_candidates([("I", {"I": 0.0}), (" cannot", {" cannot": 0.0})], template=TEMPLATE, forced=False) == {}


def test_variants_of_a_grade_add_up_and_other_tokens_are_ignored():
    candidates = {" 2": math.log(0.5), "2": math.log(0.1), " 3": math.log(0.2), " maybe": math.log(0.2)}
    assert expected_grade(candidates, ["0", "1", "2", "3"]) == pytest.approx((2 * 0.6 + 3 * 0.2) / 0.8)
    ids = grade_token_ids(enumerate(["2", " 2", "▁2".replace("▁", " "), "22", "x"]), ["0", "1", "2", "3"])
    assert ids == {"0": [], "1": [], "2": [0, 1, 2], "3": []}


def test_the_answer_position_is_where_the_parser_reads_the_score_through_markup():
    text = "**Relevance:** `2`"
    offset = score_offset(text, TEMPLATE)
    assert text[offset] == "2"
