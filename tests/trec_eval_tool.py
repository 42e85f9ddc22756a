"""Where the tests find trec_eval 9.0.8 (usnistgov/trec_eval, tag v9.0.8): a built binary, and its
test suite's files (test/: qrels, runs, and the outputs trec_eval's `make quicktest` checks).
Neither is part of this project; a test that needs one skips, naming what to set, when it is absent.

- the binary: $QRELKIT_TREC_EVAL, a tools/trec_eval-9.0.8/ folder beside the project (or above it),
  or the benchmarks' build in the cache (benchmarks/bench_evaluate.py builds it there);
- the suite: $QRELKIT_TREC_EVAL_SOURCE (trec_eval's source folder, or a git repository holding the
  tag v9.0.8, whose test/ is extracted once into the cache), or the benchmarks' build in the cache,
  which holds the whole source. The cache is $QRELKIT_BENCH_CACHE, by default ~/.cache/qrelkit-bench.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

TAG = "v9.0.8"
CACHE = Path(os.environ.get("QRELKIT_BENCH_CACHE", Path.home() / ".cache" / "qrelkit-bench")) / "trec_eval-9.0.8"
SUITE_REASON = (
    "trec_eval 9.0.8's test suite not found: set QRELKIT_TREC_EVAL_SOURCE to trec_eval's source or git repository "
    "(github.com/usnistgov/trec_eval, tag v9.0.8), or build it as benchmarks/bench_evaluate.py does"
)
BINARY_REASON = "no trec_eval 9.0.8 binary (set QRELKIT_TREC_EVAL, or build it as benchmarks/bench_evaluate.py does)"


def trec_eval_binary() -> Path | None:
    candidates = [Path(os.environ["QRELKIT_TREC_EVAL"])] if os.environ.get("QRELKIT_TREC_EVAL") else []
    candidates += [folder / "tools" / "trec_eval-9.0.8" / "trec_eval" for folder in Path(__file__).resolve().parents]
    candidates.append(CACHE / "trec_eval")
    return next((path for path in candidates if path.is_file() and os.access(path, os.X_OK)), None)


def _is_suite(folder: Path) -> bool:
    return (folder / "qrels.test").is_file() and (folder / "out.test.aq").is_file()


def suite_folder() -> Path | None:
    """trec_eval 9.0.8's test/ folder, or None."""
    source = Path(os.environ["QRELKIT_TREC_EVAL_SOURCE"]) if os.environ.get("QRELKIT_TREC_EVAL_SOURCE") else None
    if source is not None and _is_suite(source / "test"):
        return source / "test"
    if source is not None and shutil.which("git") and not _is_suite(CACHE / "test"):
        archive = subprocess.run(["git", "-C", str(source), "archive", TAG, "test"], capture_output=True)
        if archive.returncode == 0:
            CACHE.mkdir(parents=True, exist_ok=True)
            subprocess.run(["tar", "-x", "-C", str(CACHE)], input=archive.stdout, check=True)
    return CACHE / "test" if _is_suite(CACHE / "test") else None
