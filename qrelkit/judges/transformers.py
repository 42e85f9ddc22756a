"""`transformers`: any Hugging Face image-text-to-text model (LLaVA-1.5/NeXT, Qwen2-VL, SmolVLM,
Idefics, ...) or causal language model, in-process, with the model's own chat template.

The prompt is the template's messages (`judges.chat.hf_messages`) through the model's chat
template with its generation prompt, followed by the answer prefix ("Relevance: "). Two ways
to score, both under the one rule of `judges.scoring`:

* ``expected`` (default): **one forward pass** and no generation. The next-token distribution
  at the prompt's last position is the answer position: the expected grade over the template's
  grade tokens is the score, and the argmax token's text is parsed as the answer, so the
  parsed grade is stored beside it.
* ``parsed``: greedy generation, batched with left padding, parsed by the template's parser;
  the expected grade of the first generated position is stored beside it.

A batch of the runner is judged in forward batches of ``batch_size`` pairs of similar prompt
length, the pairs of one image kept together; a background thread reads and decodes the next
forward batch's images (each distinct image once per call) and runs the processor, while the
model computes the current one. On a GPU with a fast (torchvision) image processor, the images
take the CLIP judge's path (`qrelkit.embed.device_images`): JPEGs decoded by nvJPEG, the processor
run on the GPU, on the thread's own CUDA stream; elsewhere a pool of threads decodes with PIL.
"""

from __future__ import annotations

import contextlib
import importlib.util
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import Field

from qrelkit.embed.device_images import (
    StreamHandoff,
    as_tensor,
    decode_on_device,
    device_jpeg_works,
    jpeg_file,
    read_and_decode_on_device,
)
from qrelkit.io.images import ImageError, decode_image, read_image_file
from qrelkit.io.workers.parallel import ordered_map
from qrelkit.judges.base import BaseJudge, FatalJudgeError, JudgeConfig, JudgeError, Judgment, Pair
from qrelkit.judges.chat import hf_messages
from qrelkit.judges.scoring import (
    answer_candidates,
    candidates_from_logits,
    expected_grade_ids,
    first_line,
    judgment_from_answer,
)
from qrelkit.machine import available_cores
from qrelkit.prompts import PromptTemplate, TemplateError


class TransformersConfig(JudgeConfig):
    model: str = Field("llava-hf/llava-1.5-7b-hf", description="Hugging Face hub id or local folder.")
    gguf_file: str | None = Field(None, description="A GGUF file inside `model` (transformers dequantises it).")
    device: str = Field("auto", description="auto (CUDA, else MPS, else CPU), cuda, cuda:1, mps or cpu.")
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
        "auto", description="auto: bfloat16 on CUDA (float16 where bf16 is unsupported), float16 on MPS, float32 on CPU."
    )
    batch_size: int = Field(8, ge=1, description="Pairs per forward pass.", json_schema_extra={"identity": False})
    max_new_tokens: int = Field(8, ge=1, le=512, description="Tokens generated after the answer prefix (score: parsed).")
    score: Literal["parsed", "expected"] = Field("expected", description="expected: one forward pass; parsed: greedy generation.")
    answer_prefix: str = Field("Relevance: ", description="Forced start of the answer; the grade is read right after it.")
    attn_implementation: str | None = Field(
        None, description="sdpa, eager, flash_attention_2 ... (default: transformers' choice).", json_schema_extra={"identity": False}
    )
    decode_workers: int | None = Field(
        None, ge=1, description="Threads reading and decoding images (default: one per core).", json_schema_extra={"identity": False}
    )
    # Not part of the identity, as `device: auto` is not: the paths differ by nvJPEG's decoding
    image_decode: Literal["auto", "device", "cpu"] = Field(
        "auto",
        description="Where JPEGs are decoded and preprocessed: auto (the GPU with a fast image processor), device, or cpu (PIL).",
        json_schema_extra={"identity": False},
    )


@dataclass
class Prompt:
    """One pair put to the model: its prompt text and the images its placeholders stand for."""

    index: int
    text: str
    images: list[str]
    image_root: str | None = None
    length: int = 0  # text tokens, for batching by length
    image_sha256: str | None = None  # what the document's image bytes must hash to (`Document.image_sha256`)


@dataclass
class ForwardBatch:
    prompts: list[Prompt]
    inputs: Any = None  # the processor's or tokenizer's output (CPU tensors; pixels on the GPU on the device path)
    errors: dict[int, str] = field(default_factory=dict)  # pair index -> why its image failed
    ready: Any = None  # on the device path: the CUDA event after which the inputs may be read


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise JudgeError(f"device {device!r} asked for, but no CUDA GPU is visible")
    return device


def resolve_dtype(dtype: str, device: str) -> Any:
    import torch

    if dtype != "auto":
        return getattr(torch, dtype)
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float16 if device == "mps" else torch.float32


def takes_tensors(image_processor: Any) -> bool:
    """Whether an image processor works on torch tensors where they are (transformers 5's
    torchvision backend, transformers 4's *ImageProcessorFast), rather than on PIL images."""
    if getattr(image_processor, "backend", None) == "torchvision":
        return True
    return type(image_processor).__name__.endswith("Fast")


def pixel_dtype(model: Any) -> Any:
    """The dtype of the layer pixels enter (a vision tower's patch-embedding conv), not the
    first parameter's (models may keep some parameters in float32)."""
    import torch

    for module in model.modules():
        if isinstance(module, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)):
            return module.weight.dtype
    return model.dtype


def forward_batches(prompts: Sequence[Prompt], batch_size: int) -> list[list[Prompt]]:
    """Batches of similar length with the pairs of one image together: pairs are grouped by
    their images, groups ordered by their mean length, and cut into batches in that order."""
    groups: dict[tuple[str, ...], list[Prompt]] = {}
    for prompt in prompts:
        groups.setdefault(tuple(prompt.images), []).append(prompt)
    ordered = sorted(groups.values(), key=lambda group: (sum(p.length for p in group) / len(group), group[0].index))
    flat = [prompt for group in ordered for prompt in sorted(group, key=lambda p: p.length)]
    return [flat[start : start + batch_size] for start in range(0, len(flat), batch_size)]


def read_next_token_logits(
    pair: Pair,
    logits: np.ndarray | None,
    *,
    decode: Callable[[int], str],
    grade_ids: Mapping[str, Sequence[int]] | None,
    template: PromptTemplate,
    config: TransformersConfig,
    **common: Any,
) -> Judgment:
    """The judgment for one row of next-token logits at the forced answer position (expected
    mode): the expected grade over the grade tokens, and the argmax token's text after the answer
    prefix as the answer, so its parsed grade is stored too. None logits: the model gave none."""
    answer = config.answer_prefix + decode(int(np.argmax(logits))) if logits is not None else None
    candidates = candidates_from_logits(logits, grade_ids) if logits is not None and grade_ids is not None else None
    return judgment_from_answer(
        *pair.key, text=answer, template=template, mode=config.score, candidates=candidates, raw_output=answer, **common
    )


class TransformersJudge(BaseJudge[TransformersConfig]):
    """A Hugging Face vision-language or text model, in-process; expected or parsed grades."""

    template: PromptTemplate  # needs_template: the runner always gives one
    name = "transformers"
    Config = TransformersConfig
    needs_template = True

    @classmethod
    def model_id_for(cls, config: TransformersConfig) -> str:
        return f"{config.model}/{config.gguf_file}" if config.gguf_file else config.model

    @classmethod
    def startup_problems(cls, config: Any) -> list[str]:
        from qrelkit.judges.startup import missing_device, missing_model, missing_modules

        problems = missing_modules(
            {"torch": "pip install 'qrelkit[transformers]'", "transformers": "pip install 'qrelkit[transformers]'"}, cls.name
        )
        return problems + [p for p in (missing_model(config.model, cls.name), missing_device(config.device, cls.name)) if p]

    def __init__(self, config, template, context=None):
        super().__init__(config, template, context)
        try:
            import torch
            import transformers
        except ImportError:
            raise JudgeError("judge 'transformers' needs torch and transformers: pip install 'qrelkit[transformers]'") from None
        self.torch = torch
        self.device = resolve_device(config.device)
        self.dtype = resolve_dtype(config.dtype, self.device)
        self._load(transformers)
        self.pixel_dtype = pixel_dtype(self.model)
        self.workers = config.decode_workers or available_cores()
        self.image_decode = self._image_path(config.image_decode)
        self.handoff = StreamHandoff(self.device) if self.image_decode == "device" else None
        vocabulary = enumerate(self.tokenizer.batch_decode([[i] for i in range(len(self.tokenizer))]))
        self.grade_ids = expected_grade_ids(vocabulary, self.template, config.score, self._refusal)

    def _image_path(self, asked: str) -> str:
        """device: JPEGs decoded and processed where the model is (needs a fast image processor);
        cpu: PIL, in threads. auto: device on a GPU where both work."""
        if asked == "cpu" or self.processor is None:
            return "cpu"
        fast = takes_tensors(self.processor.image_processor)
        if asked == "device":
            if not fast:
                kind = type(self.processor.image_processor).__name__
                raise JudgeError(f"image_decode: device needs a fast (torchvision) image processor; {self.model_id!r} has {kind}")
            return "device"
        return "device" if fast and self.device.startswith("cuda") and device_jpeg_works(self.device) else "cpu"

    def _load(self, transformers: Any) -> None:
        c = self.config
        extra = {"gguf_file": c.gguf_file} if c.gguf_file else {}
        try:
            hf_config = transformers.AutoConfig.from_pretrained(c.model, **extra)
            from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

            self.is_vlm = hf_config.model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
            if self.template.modality == "image" and not self.is_vlm:
                kind = hf_config.model_type
                raise JudgeError(f"model {self.model_id!r} ({kind}) takes no images, but template {self.template.id!r} is for images")
            model_class = transformers.AutoModelForImageTextToText if self.is_vlm else transformers.AutoModelForCausalLM
            options = {"dtype": self.dtype, **extra}
            if c.attn_implementation:
                options["attn_implementation"] = c.attn_implementation
            if importlib.util.find_spec("accelerate") is not None:
                options["device_map"] = self.device  # straight onto the device, not through host memory first
            self.model = model_class.from_pretrained(c.model, **options).to(self.device).eval()
            if self.is_vlm:
                # transformers 4 gives the slow (PIL) image processor unless asked; 5 the torchvision one
                fast = {"use_fast": True} if self.device.startswith("cuda") and int(transformers.__version__.split(".")[0]) < 5 else {}
                self.processor = transformers.AutoProcessor.from_pretrained(c.model, **fast)
                self.tokenizer = self.processor.tokenizer
            else:
                self.processor = None
                self.tokenizer = transformers.AutoTokenizer.from_pretrained(c.model, **extra)
        except JudgeError:
            raise
        except (OSError, ValueError, KeyError, ImportError, RuntimeError) as exc:
            raise JudgeError(f"judge 'transformers' cannot load model {self.model_id!r}: {type(exc).__name__}: {exc}") from None
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        chat = self.processor if self.processor is not None else self.tokenizer
        if not getattr(chat, "chat_template", None):
            raise JudgeError(f"model {self.model_id!r} has no chat template")

    def _refusal(self, missing: list[str]) -> str:
        shown = ", ".join(map(repr, missing[:5])) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        return (
            f"score: expected needs every grade as one token, but {shown} are not single tokens "
            f"for {self.model_id!r}; use score: parsed, or set `grade_tokens` in the template"
        )

    # -- inputs -------------------------------------------------------------------------------------

    def prompt_text(self, messages: list[dict[str, Any]]) -> str:
        """The chat template with its generation prompt, then the answer prefix."""
        chat = self.processor if self.processor is not None else self.tokenizer
        text = chat.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return text + self.config.answer_prefix

    def _prompt(self, index: int, pair: Pair) -> Prompt:
        messages, images = hf_messages(self.template.render(pair.topic, pair.document), typed=self.is_vlm)
        return Prompt(index, self.prompt_text(messages), images, pair.document.image_root, image_sha256=pair.document.image_sha256)

    def _prepare(self, prompts: list[Prompt], decoded: dict[str, Any], last_use: dict[str, int], number: int) -> ForwardBatch:
        """Decode the batch's images not decoded yet (in parallel, each once per call) and run the
        processor; images no later batch needs are let go."""
        batch = ForwardBatch(prompts)
        new = {path: (p.image_root, p.image_sha256) for p in prompts for path in p.images if path not in decoded}
        with self._producing():
            decoded.update(self._decode(new))
            usable = []
            for prompt in prompts:
                failed = [decoded[path] for path in prompt.images if isinstance(decoded[path], ImageError)]
                if failed:
                    batch.errors[prompt.index] = str(failed[0])
                else:
                    usable.append(prompt)
            batch.prompts = usable
            if usable:
                batch.inputs = self._tokenize(usable, decoded)
                batch.ready = self.handoff.ready() if self.handoff is not None else None
        for path in [path for path, last in last_use.items() if last == number]:
            decoded.pop(path, None)
        return batch

    def _producing(self) -> Any:
        """On the device path: inference mode and the preparing thread's own CUDA stream."""
        if self.handoff is None:
            return contextlib.nullcontext()
        stack = contextlib.ExitStack()
        stack.enter_context(self.torch.inference_mode())
        stack.enter_context(self.handoff.producing())
        return stack

    def _decode(self, paths: dict[str, tuple[Any, ...]]) -> dict[str, Any]:
        """path -> the decoded image (a tensor on the device path, a PIL image otherwise) or its
        ImageError; the path's value: `read_image_file`'s further arguments (the root, ...)."""
        if self.image_decode == "device":
            return read_and_decode_on_device(paths, self.device, self.workers)

        def decode(item: tuple[str, tuple[Any, ...]]) -> Any:
            try:
                return decode_image(read_image_file(item[0], *item[1]))
            except ImageError as exc:
                return exc

        return dict(zip(paths, ordered_map(decode, paths.items(), workers=self.workers, window=2 * self.workers)))

    def _tokenize(self, prompts: list[Prompt], decoded: dict[str, Any]) -> Any:
        # expected: right padding, so every row's positions start at 0 and its last token is read;
        # parsed: left padding, so generation continues every row from the same place
        self.tokenizer.padding_side = "right" if self.config.score == "expected" else "left"
        texts = [p.text for p in prompts]
        # the chat template already wrote the special tokens (BOS and the like)
        if self.processor is None:
            return self.tokenizer(texts, padding=True, return_tensors="pt", add_special_tokens=False)
        images = [decoded[path] for p in prompts for path in p.images] or None
        if images and any(isinstance(image, self.torch.Tensor) for image in images):  # with JPEGs decoded on the device:
            images = [as_tensor(image, self.device) for image in images]  # all there, the processor runs there
        return self.processor(text=texts, images=images, padding=True, return_tensors="pt", add_special_tokens=False)

    def _to_device(self, inputs: Any, ready: Any = None) -> dict[str, Any]:
        """The inputs on the device, floats in the pixel dtype; tensors the preparing thread made on
        the device are taken over once its stream says they are ready."""
        if self.handoff is not None:
            self.handoff.take(ready, [value for value in inputs.values() if getattr(value, "is_cuda", False)])
        on_cuda = self.device.startswith("cuda")
        moved = {}
        for name, value in inputs.items():
            if not hasattr(value, "to"):
                moved[name] = value
                continue
            if on_cuda and not value.is_cuda:
                value = value.pin_memory()
            value = value.to(self.device, non_blocking=on_cuda)
            moved[name] = value.to(self.pixel_dtype) if value.is_floating_point() else value
        return moved

    # -- the model ------------------------------------------------------------------------------------

    def _last_logits(self, inputs: dict[str, Any]) -> Any:
        """Logits at each row's last real token (right padding), (rows, vocab) float32 on the CPU.
        Only those positions go through the LM head when the model takes `logits_to_keep`."""
        torch = self.torch
        last = inputs["attention_mask"].sum(dim=1) - 1
        keep, where = torch.unique(last, return_inverse=True)
        rows = torch.arange(len(last), device=last.device)
        try:
            logits = self.model(**inputs, logits_to_keep=keep).logits
            return logits[rows, where].float().cpu()
        except TypeError:  # a model without logits_to_keep
            return self.model(**inputs).logits[rows, last].float().cpu()

    def _expected(self, batch: ForwardBatch, pairs: Sequence[Pair]) -> dict[int, Judgment]:
        started = time.perf_counter()
        inputs = self._to_device(batch.inputs, batch.ready)
        logits = self._last_logits(inputs).numpy()
        latency = (time.perf_counter() - started) * 1000 / len(batch.prompts)
        lengths = inputs["attention_mask"].sum(dim=1).tolist()
        out = {}
        for row, prompt in enumerate(batch.prompts):
            out[prompt.index] = read_next_token_logits(
                pairs[prompt.index],
                logits[row],
                decode=lambda token: self.tokenizer.decode([token]),
                grade_ids=self.grade_ids,
                template=self.template,
                config=self.config,
                tokens_in=int(lengths[row]),
                tokens_out=1,
                latency_ms=latency,
                model_id=self.model_id,
            )
        return out

    def _parsed(self, batch: ForwardBatch, pairs: Sequence[Pair]) -> dict[int, Judgment]:
        started = time.perf_counter()
        inputs = self._to_device(batch.inputs, batch.ready)
        generated = self.model.generate(
            **inputs,
            max_new_tokens=self.config.max_new_tokens,
            do_sample=False,
            temperature=None,
            top_p=None,
            top_k=None,
            pad_token_id=self.tokenizer.pad_token_id,
            output_logits=True,
            return_dict_in_generate=True,
        )
        latency = (time.perf_counter() - started) * 1000 / len(batch.prompts)
        width = inputs["input_ids"].shape[1]
        lengths = inputs["attention_mask"].sum(dim=1).tolist()
        stops = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        forced = bool(self.config.answer_prefix)
        out = {}
        for row, prompt in enumerate(batch.prompts):
            tokens = generated.sequences[row, width:].tolist()
            steps = next((i for i, token in enumerate(tokens) if token in stops), len(tokens))
            read = 1 if forced else max(steps, 1)  # a forced answer position is the first generated token
            positions = [(self.tokenizer.decode([tokens[step]]), self._candidates(generated.logits[step][row])) for step in range(read)]
            candidates = answer_candidates(positions, template=self.template, forced=forced) if self.grade_ids is not None else None
            answer = self.config.answer_prefix + first_line(self.tokenizer.decode(tokens[:steps], skip_special_tokens=True))
            out[prompt.index] = judgment_from_answer(
                *pairs[prompt.index].key,
                text=answer,
                template=self.template,
                mode=self.config.score,
                candidates=candidates,
                raw_output=answer,
                tokens_in=int(lengths[row]),
                tokens_out=steps,
                latency_ms=latency,
                model_id=self.model_id,
            )
        return out

    def _candidates(self, logits: Any) -> dict[str, float]:
        return candidates_from_logits(logits.float().cpu().numpy(), self.grade_ids) if self.grade_ids is not None else {}

    # -- the judge ------------------------------------------------------------------------------------

    def judge(self, batch: Sequence[Pair]) -> list[Judgment]:
        results: dict[int, Judgment] = {}
        prompts = []
        for index, pair in enumerate(batch):
            try:
                prompts.append(self._prompt(index, pair))
            except TemplateError as exc:
                results[index] = Judgment.failed(pair, "input_error", str(exc), model_id=self.model_id)
        if prompts:
            for prompt, ids in zip(prompts, self.tokenizer([p.text for p in prompts], add_special_tokens=False)["input_ids"]):
                prompt.length = len(ids)
        groups = forward_batches(prompts, self.config.batch_size)
        last_use = {path: number for number, group in enumerate(groups) for p in group for path in p.images}
        decoded: dict[str, Any] = {}
        # one background thread prepares the next forward batch while the model runs this one
        prepared = ordered_map(
            lambda numbered: self._prepare(numbered[1], decoded, last_use, numbered[0]), enumerate(groups), workers=1, window=1
        )
        with self.torch.inference_mode():
            for forward in prepared:
                for index, error in forward.errors.items():
                    results[index] = Judgment.failed(batch[index], "input_error", error, model_id=self.model_id)
                if forward.prompts:
                    run = self._expected if self.config.score == "expected" else self._parsed
                    results.update(run(forward, batch))
        return [results[i] for i in range(len(batch))]

    def preflight(self) -> None:
        """One forward pass on a short prompt (with a small image for a vision model)."""
        from PIL import Image

        try:
            content: Any = [{"type": "text", "text": "Is this relevant?"}, {"type": "image"}] if self.is_vlm else "Is this relevant?"
            text = self.prompt_text([{"role": "user", "content": content}])
            self.tokenizer.padding_side = "right"
            if self.processor is None:
                inputs = self.tokenizer([text], return_tensors="pt", add_special_tokens=False)
            else:  # on the device path a JPEG, through nvJPEG and the processor on the GPU
                image = Image.new("RGB", (64, 48), (120, 90, 60))
                images = decode_on_device([jpeg_file(image)], self.device) if self.image_decode == "device" else [image]
                inputs = self.processor(text=[text], images=images, return_tensors="pt", add_special_tokens=False)
            with self.torch.inference_mode():
                logits = self._last_logits(self._to_device(inputs))
            if not bool(self.torch.isfinite(logits).all()):
                raise ValueError("the logits are not finite")
        except Exception as exc:
            where = f"{str(self.dtype).removeprefix('torch.')} on {self.device}"
            raise FatalJudgeError(f"model {self.model_id!r} ({where}) fails a forward pass: {type(exc).__name__}: {exc}") from None
