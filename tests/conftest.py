"""Shared fixtures. Real DL19 data lives in ../shared/data (developer machines and CI only)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def shared_data() -> Path:
    """../shared/data beside the checkout, or beside a folder of checkouts (git worktrees)."""
    for folder in ROOT.parents:
        if (folder / "shared" / "data").is_dir():
            return folder / "shared" / "data"
    return ROOT.parent / "shared" / "data"


DL19 = shared_data() / "trec-dl-2019"


@pytest.fixture(scope="session")
def dl19() -> Path:
    """Path to TREC DL 2019 passage data; the test is skipped when ../shared/data is absent."""
    if not (DL19 / "qrels.txt").is_file():
        pytest.skip(f"TREC DL 2019 data not found at {DL19} (only on developer machines and in CI)")
    return DL19


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
