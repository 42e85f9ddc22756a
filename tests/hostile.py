"""Helpers for the hostile-input tests: run the real command line, and photograph a database so a
test can assert that a refused command changed nothing in it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb

ROOT = Path(__file__).resolve().parents[1]


def qrelkit(*args: Any, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`qrelkit ARGS` in a fresh process (the real exit code and stderr, as a user sees them), running
    this checkout's qrelkit (first on the path, whatever folder the command runs in)."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT / "tests"), "COLUMNS": "200", **(env or {})}
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), environ["PYTHONPATH"]])
    return subprocess.run(
        [sys.executable, "-m", "qrelkit.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environ,
        timeout=timeout,
    )


def one_error(result: subprocess.CompletedProcess, code: int) -> str:
    """The one error line of a refused command, after checking its exit code and that no traceback
    was printed; joined into one line (the console may wrap it)."""
    assert result.returncode == code, f"exit {result.returncode}, expected {code}:\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr
    return " ".join(result.stderr.split())


def snapshot(db: Path) -> dict[str, list[tuple]]:
    """Every table's rows, sorted (timestamps included: a rewrite of the same rows shows)."""
    if not db.exists():
        return {}
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()]
        return {t: sorted(map(repr, con.execute(f'SELECT * FROM "{t}"').fetchall())) for t in tables}
    finally:
        con.close()


# A qrelkit command line run by `python -c PEAK ARGS...`, its peak memory printed last on stderr as
# `peak-rss-kib N` (test_untrusted_surface's 2M lines, benchmarks/bench_judge_file_memory.py's 5M):
# the peak the kernel keeps for the process's own memory (VmHWM), not `ru_maxrss`, which Linux
# carries from a parent into a child across vfork and exec (under a pytest process grown to
# 2.3 GB the command "peaked" at 2.3 GB whatever it did).
PEAK = (
    "import sys; sys.argv = ['qrelkit', *sys.argv[1:]]\n"
    "from qrelkit.cli import main\n"
    "def hwm():\n"
    "    with open('/proc/self/status') as status:\n"
    "        return next(line.split()[1] for line in status if line.startswith('VmHWM:'))\n"
    "try:\n    main()\nfinally:\n    print('peak-rss-kib', hwm(), file=sys.stderr)\n"
)


def plant_batch_folder_link(folder: Path, linked: str) -> tuple[Path, Path]:
    """``<folder>/j.duckdb.batches/<linked>`` (``"."``: the batch folder itself) made a link to an empty
    ``<folder>/outside``, as an attacker would plant it; returns (the batch folder, outside)."""
    outside = folder / "outside"
    outside.mkdir()
    root = folder / "j.duckdb.batches"
    planted = root / linked if linked != "." else root
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.symlink_to(outside, target_is_directory=True)
    return root, outside
