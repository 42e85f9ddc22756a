"""The image embedder for FD (the CLIPScore judge's open_clip image tower), on a tiny model with
random weights created here (no pretrained weights offline)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from qrelkit.errors import QrelkitError

open_clip = pytest.importorskip("open_clip")
torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")

from conftest import tiny_open_clip  # noqa: E402

from qrelkit.embed import embed_with_cache  # noqa: E402
from qrelkit.embed.image import load_image_embedder, parse_image_embedder_name  # noqa: E402
from qrelkit.storage import Store  # noqa: E402


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return "qrelkit-tiny-clip", tiny_open_clip(tmp_path_factory.mktemp("clip"), "qrelkit-tiny-clip", embed_dim=16)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    paths = []
    for i, size in enumerate([(40, 30), (64, 64), (20, 50)]):
        path = folder / f"img{i}.png"
        Image.fromarray(rng.integers(0, 255, (*size, 3), dtype=np.uint8)).save(path)
        paths.append(path)
    return paths


def test_image_embedder_from_a_local_checkpoint(tiny_model, images):
    name, checkpoint = tiny_model
    embedder = load_image_embedder(name, str(checkpoint), batch_size=2)
    assert embedder.dim == 16 and embedder.embedder_id == f"openclip:{name}/tiny.pt/image"  # the CLIPScore judge's id
    vectors = embedder.encode(images)
    assert vectors.shape == (3, 16) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(embedder.encode(images[::-1])[::-1], vectors, atol=1e-5)  # input order kept
    # the same checkpoint loaded again gives the same id and vectors (a stable cache key)
    again = load_image_embedder(name, str(checkpoint))
    assert again.embedder_id == embedder.embedder_id
    np.testing.assert_allclose(again.encode(images[:1]), vectors[:1], atol=1e-5)
    assert embedder.encode([]).shape == (0, 16)


def test_image_vectors_are_cached_by_file_content(tiny_model, images, tmp_path):
    name, checkpoint = tiny_model
    embedder = load_image_embedder(name, str(checkpoint))
    items = {f"d{i}": str(p) for i, p in enumerate(images)}
    hashes = {key: f"hash-{key}" for key in items}
    with Store(tmp_path / "db.duckdb") as store:
        first = embed_with_cache(store, embedder, "document", items, content_hashes=hashes)
        calls = []
        original = embedder.encode
        embedder.encode = lambda paths: calls.append(list(paths)) or original(paths)
        second = embed_with_cache(store, embedder, "document", items, content_hashes=hashes)
        assert calls == []
        for key in items:
            np.testing.assert_array_equal(first[key], second[key])


def test_image_embedder_errors_are_user_errors(tiny_model, tmp_path):
    name, checkpoint = tiny_model
    with pytest.raises(QrelkitError, match="cannot load CLIP model"):
        load_image_embedder("no-such-architecture", None)
    embedder = load_image_embedder(name, str(checkpoint))
    with pytest.raises(QrelkitError, match="not found"):
        embedder.encode([tmp_path / "missing.png"])


def test_image_embedder_names():
    assert parse_image_embedder_name("open_clip:ViT-B-32:openai") == ("ViT-B-32", "openai")
    assert parse_image_embedder_name("clip:ViT-B-32:/m/ckpt.pt") == ("ViT-B-32", "/m/ckpt.pt")
    assert parse_image_embedder_name("open_clip:hf-hub:laion/x") == ("hf-hub:laion/x", None)
    assert parse_image_embedder_name("minilm") is None


def test_fd_over_an_image_collection(tiny_model, tmp_path):
    import qrelkit

    name, checkpoint = tiny_model
    rng = np.random.default_rng(1)
    lines = []
    for i in range(8):
        Image.fromarray(rng.integers(0, 255, (24, 24, 3), dtype=np.uint8)).save(tmp_path / f"i{i}.png")
        lines.append(json.dumps({"docid": f"i{i}", "image": f"i{i}.png"}))
    (tmp_path / "docs.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 i{q * 4 + j} {1 + (j < 2)}\n" for q in range(2) for j in range(4)))
    (tmp_path / "a.run").write_text("".join(f"{q} Q0 i{q * 4 + j} {j + 1} {9 - j} a\n" for q in range(2) for j in range(4)))
    report = qrelkit.fd(
        str(tmp_path / "qrels.txt"),
        [str(tmp_path / "a.run")],
        docs=tmp_path / "docs.jsonl",
        embedder=f"open_clip:{name}:{checkpoint}",
        k=2,
        resamples=20,
    )
    fd = report.runs["a"]["FD@2"]
    assert report.d == 16 and report.embedder.startswith("openclip:") and report.n_rel == 4
    assert fd.n_ret == 4 and fd.value == pytest.approx(0.0, abs=1e-6)  # top-2 = the grade-2 images
    with pytest.raises(QrelkitError, match="image embedder"):
        qrelkit.fd(str(tmp_path / "qrels.txt"), [str(tmp_path / "a.run")], docs=tmp_path / "docs.jsonl", embedder="minilm", k=2)
