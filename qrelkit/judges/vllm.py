"""`vllm`: LLaVA (and other vLLM vision or text models) in-process, for batch jobs on a GPU.

Thin on purpose: building requests and reading outputs are plain functions on the shared chat
and scoring code, tested without vLLM (tests/test_vllm_judge.py); the adapter only creates one
`vllm.LLM` (prefix caching on, `limit_mm_per_prompt`) and submits all pairs of a batch in one
call so vLLM batches them. Two ways to score:

* ``parsed``: `LLM.chat` with the OpenAI-format messages, the answer parsed (and the expected
  grade read where the parser finds the grade, from the top `logprobs` alternatives);
* ``expected``: **one forward pass** per pair: `LLM.generate` on the model's chat template with
  its generation prompt plus the answer prefix, `max_tokens=1` with `logprobs`; the only
  generated position is the forced answer position. Grades outside the top `logprobs`
  alternatives count as probability 0 (judges.scoring).

Without vLLM or a GPU the judge stops at start and names the server route instead:

    vllm serve llava-hf/llava-1.5-7b-hf --chat-template-content-format openai
    # job: judge: {name: openai, options: {model: llava-hf/llava-1.5-7b-hf, base_url: http://HOST:8000/v1}}
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import Field

from qrelkit.io.images import ImageError, load_image
from qrelkit.judges.base import BaseJudge, JudgeConfig, JudgeError, Judgment, Pair
from qrelkit.judges.chat import build_messages, hf_messages
from qrelkit.judges.scoring import ScoreMode, TokenPositions, answer_candidates, judgment_from_answer
from qrelkit.prompts import PromptTemplate, TemplateError

SERVER_ROUTE = (
    "run the model behind vLLM's OpenAI-compatible server instead (`vllm serve MODEL`) and use the `openai` "
    "judge with `base_url: http://HOST:8000/v1` (see configs/atomic-llava-vllm.yaml)"
)


class VLLMConfig(JudgeConfig):
    model: str = Field("llava-hf/llava-1.5-7b-hf", description="Hugging Face id or local folder of a vLLM-supported model.")
    max_model_len: int = Field(4096, ge=256, description="Context length vLLM reserves per sequence.")
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    tensor_parallel_size: int = Field(1, ge=1)
    dtype: str = Field("auto", description="auto, float16 or bfloat16.")
    images_per_prompt: int = Field(1, ge=0, description="limit_mm_per_prompt for images.")
    max_tokens: int = Field(32, ge=1)
    temperature: float = Field(0.0, ge=0, description="0 = greedy (deterministic).")
    seed: int = 0
    logprobs: int | None = Field(20, ge=1, description="Top logprobs per token, for the expected grade (None: off).")
    score: Literal["parsed", "expected"] = Field("parsed", description="expected: one forward pass, max_tokens=1 after the answer prefix.")
    answer_prefix: str = Field("Relevance: ", description="Forced start of the answer in `expected` mode.")


def build_conversation(pair: Pair, template: PromptTemplate) -> list[dict[str, Any]]:
    """OpenAI-format messages for one pair (the `openai` judge's builder: images as data URLs,
    checked and kept inside the image root); vLLM applies the model's own chat template."""
    rendered = template.render(pair.topic, pair.document)
    return build_messages(rendered, image_root=pair.document.image_root)


def token_positions(completion: Any) -> TokenPositions | None:
    """vLLM's per-step logprobs ({token id: Logprob(logprob, decoded_token)}) as (generated token's
    text, {candidate text: logprob}); None when the request asked for no logprobs."""
    if completion.logprobs is None:
        return None
    positions = []
    for token_id, step in zip(completion.token_ids, completion.logprobs):
        candidates = {entry.decoded_token: entry.logprob for entry in step.values() if entry.decoded_token is not None}
        chosen = step.get(token_id)
        positions.append((chosen.decoded_token if chosen is not None and chosen.decoded_token else "", candidates))
    return positions


def expected_request(
    pair: Pair, template: PromptTemplate, apply_chat_template: Callable[[list[dict[str, Any]]], str], answer_prefix: str, typed: bool
) -> dict[str, Any]:
    """The `expected` mode's prompt for `LLM.generate`: the model's chat template (with its
    generation prompt) over the template's messages, then the answer prefix; the pair's images,
    read and decoded by the one image reader, as `multi_modal_data`. ``typed``: content as typed
    parts (what a vision-language processor's template expects) even for a text-only prompt."""
    messages, paths = hf_messages(template.render(pair.topic, pair.document), typed=typed)
    request: dict[str, Any] = {"prompt": apply_chat_template(messages) + answer_prefix}
    if paths:
        images = [load_image(path, pair.document.image_root, pair.document.image_sha256) for path in paths]
        request["multi_modal_data"] = {"image": images[0] if len(images) == 1 else images}
    return request


def expected_sampling(config: VLLMConfig) -> dict[str, Any]:
    """SamplingParams options of the `expected` mode: one greedy token and its top alternatives."""
    return {"max_tokens": 1, "temperature": 0.0, "seed": config.seed, "logprobs": config.logprobs or 20}


def read_expected_output(
    pair: Pair, output: Any, template: PromptTemplate, config: VLLMConfig, model_id: str, latency_ms: float
) -> Judgment:
    """The `expected` mode's RequestOutput: its one generated position is the forced answer
    position; the generated token after the prefix is the answer whose grade is parsed."""
    return _read(
        pair, output, template, prefix=config.answer_prefix, mode="expected", forced=True, model_id=model_id, latency_ms=latency_ms
    )


def read_output(pair: Pair, output: Any, template: PromptTemplate, config: VLLMConfig, model_id: str, latency_ms: float) -> Judgment:
    """One vLLM RequestOutput (text, token ids, logprobs) as a judgment, under the one scoring rule."""
    return _read(pair, output, template, prefix="", mode=config.score, forced=False, model_id=model_id, latency_ms=latency_ms)


def _read(
    pair: Pair, output: Any, template: PromptTemplate, *, prefix: str, mode: ScoreMode, forced: bool, model_id: str, latency_ms: float
) -> Judgment:
    completion = output.outputs[0]
    answer = prefix + completion.text
    candidates = answer_candidates(token_positions(completion), template=template, forced=forced)
    qid, docid = pair.key
    return judgment_from_answer(
        qid,
        docid,
        text=answer,
        template=template,
        mode=mode,
        candidates=candidates,
        raw_output=answer,
        tokens_in=len(output.prompt_token_ids or []),
        tokens_out=len(completion.token_ids),
        model_id=model_id,
        latency_ms=latency_ms,
    )


class VLLMJudge(BaseJudge[VLLMConfig]):
    """A vision-language (or text) model in-process through vLLM; needs a CUDA GPU."""

    template: PromptTemplate  # needs_template: the runner always gives one
    name = "vllm"
    Config = VLLMConfig
    needs_template = True

    @classmethod
    def model_id_for(cls, config: VLLMConfig) -> str:
        return config.model

    def __init__(self, config, template, context=None):
        super().__init__(config, template, context)
        try:
            import vllm
        except ImportError:
            raise JudgeError(f"judge 'vllm' needs the vllm package (CUDA only): pip install 'qrelkit[vllm]'; or {SERVER_ROUTE}") from None
        try:
            import torch

            has_gpu = torch.cuda.is_available()
        except ImportError:
            has_gpu = False
        if not has_gpu:
            raise JudgeError(f"judge 'vllm' needs a CUDA GPU and none is visible; {SERVER_ROUTE}")
        self.llm = vllm.LLM(
            model=config.model,
            max_model_len=config.max_model_len,
            gpu_memory_utilization=config.gpu_memory_utilization,
            tensor_parallel_size=config.tensor_parallel_size,
            dtype=config.dtype,
            seed=config.seed,
            enable_prefix_caching=True,
            limit_mm_per_prompt={"image": config.images_per_prompt},
            max_logprobs=max(20, config.logprobs or 0),
        )
        if config.score == "expected":
            from transformers import AutoProcessor

            processor = AutoProcessor.from_pretrained(config.model)
            self.typed = hasattr(processor, "image_processor")
            self.apply_chat_template = lambda messages: processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            self.sampling = vllm.SamplingParams(**expected_sampling(config))
        else:
            self.sampling = vllm.SamplingParams(
                temperature=config.temperature, max_tokens=config.max_tokens, seed=config.seed, logprobs=config.logprobs
            )

    def _request(self, pair: Pair) -> Any:
        if self.config.score == "expected":
            return expected_request(pair, self.template, self.apply_chat_template, self.config.answer_prefix, self.typed)
        return build_conversation(pair, self.template)

    def judge(self, batch: Sequence[Pair]) -> list[Judgment]:
        results: dict[int, Judgment] = {}
        requests, positions = [], []
        for i, pair in enumerate(batch):
            try:
                requests.append(self._request(pair))
                positions.append(i)
            except (TemplateError, ImageError) as exc:
                results[i] = Judgment.failed(pair, "input_error", str(exc))
        if requests:
            started = time.perf_counter()
            # one call: vLLM batches them
            if self.config.score == "expected":
                outputs = self.llm.generate(requests, self.sampling, use_tqdm=False)
            else:
                outputs = self.llm.chat(requests, self.sampling, use_tqdm=False)
            latency = (time.perf_counter() - started) * 1000 / len(requests)
            read = read_expected_output if self.config.score == "expected" else read_output
            for i, output in zip(positions, outputs):
                results[i] = read(batch[i], output, self.template, self.config, self.model_id, latency)
        return [results[i] for i in range(len(batch))]
