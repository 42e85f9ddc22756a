"""Where the benchmarks find the shared data: $QRELKIT_DATA, else ../shared/data beside the
checkout or beside a folder of checkouts (git worktrees sit one level deeper)."""

from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent


def shared_data() -> Path:
    if os.environ.get("QRELKIT_DATA"):
        return Path(os.environ["QRELKIT_DATA"]).resolve()
    for folder in HERE.parents:
        if (folder / "shared" / "data").is_dir():
            return folder / "shared" / "data"
    return HERE.parents[1] / "shared" / "data"


DL19 = shared_data() / "trec-dl-2019"
