"""`vllm`: LLaVA (and other vLLM vision or text models) in-process, for batch jobs on a GPU.

Thin on purpose: building requests and reading outputs are plain functions, tested without
vLLM; the adapter only creates one `vllm.LLM` (prefix caching on, `limit_mm_per_prompt`) and
submits all pairs of a batch in one `LLM.chat` call so vLLM batches them. Without vLLM or a
GPU the judge stops at start and names the server route instead:

    vllm serve llava-hf/llava-1.5-7b-hf --chat-template-content-format openai
    # job: judge: {name: openai, options: {model: llava-hf/llava-1.5-7b-hf, base_url: http://HOST:8000/v1}}
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from qrelkit.judges.base import BaseJudge, JudgeConfig, JudgeError, Judgment, Pair
from qrelkit.judges.chat import build_messages
from qrelkit.judges.scoring import TokenPositions, answer_candidates, judgment_from_answer
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
    score: Literal["parsed", "expected"] = "parsed"


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


def read_output(pair: Pair, output: Any, template: PromptTemplate, config: VLLMConfig, model_id: str, latency_ms: float) -> Judgment:
    """One vLLM RequestOutput (text, token ids, logprobs) as a judgment, under the one scoring rule."""
    completion = output.outputs[0]
    raw = completion.text
    candidates = answer_candidates(token_positions(completion), template=template, forced=False)
    qid, docid = pair.key
    return judgment_from_answer(
        qid,
        docid,
        text=raw,
        template=template,
        mode=config.score,
        candidates=candidates,
        raw_output=raw,
        tokens_in=len(output.prompt_token_ids or []),
        tokens_out=len(completion.token_ids),
        model_id=model_id,
        latency_ms=latency_ms,
    )


class VLLMJudge(BaseJudge):
    """A vision-language (or text) model in-process through vLLM; needs a CUDA GPU."""

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
        )
        self.sampling = vllm.SamplingParams(
            temperature=config.temperature, max_tokens=config.max_tokens, seed=config.seed, logprobs=config.logprobs
        )

    def judge(self, batch: Sequence[Pair]) -> list[Judgment]:
        results: dict[int, Judgment] = {}
        conversations, positions = [], []
        for i, pair in enumerate(batch):
            try:
                conversations.append(build_conversation(pair, self.template))
                positions.append(i)
            except (TemplateError, ValueError, OSError) as exc:  # ImageInputError is a ValueError
                results[i] = Judgment.failed(pair, "input_error", str(exc))
        if conversations:
            started = time.perf_counter()
            outputs = self.llm.chat(conversations, self.sampling, use_tqdm=False)  # one call: vLLM batches them
            latency = (time.perf_counter() - started) * 1000 / len(conversations)
            for i, output in zip(positions, outputs):
                results[i] = read_output(batch[i], output, self.template, self.config, self.model_id, latency)
        return [results[i] for i in range(len(batch))]
