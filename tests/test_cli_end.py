"""How a `qrelkit` process ends: through `cli.base._end`, which does what Python's exit does first
(non-daemon threads joined, atexit handlers run, output flushed) and skips the native libraries'
teardown (Arrow's thread pools abort it now and then: "terminate called without an active
exception" after a command that succeeded)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {"PYTHONPATH": str(ROOT), "PATH": ""}

SCRIPT = textwrap.dedent(
    """
    import atexit, sys, threading, time
    from qrelkit.cli.base import script

    def late():
        time.sleep(0.3)
        print("thread done", flush=False)

    threading.Thread(target=late).start()          # non-daemon: the exit waits for it
    atexit.register(lambda: print("atexit ran"))   # as spawned pools and temp folders register
    class Teardown:
        def __del__(self):
            print("interpreter teardown")

    held = Teardown()                              # freed only by the interpreter's own teardown, which is skipped
    print("before", end="")                        # unflushed: must still come out
    sys.argv = ["qrelkit", *sys.argv[1:]]
    script()
    print("never")
    """
)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env=ENV,
    )


def test_a_command_that_succeeds_ends_with_0_after_threads_and_atexit_handlers():
    done = run("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("before") and "qrelkit" in done.stdout
    assert done.stdout.index("thread done") < done.stdout.index("atexit ran") and "never" not in done.stdout
    assert "interpreter teardown" not in done.stdout


def test_a_failed_command_keeps_its_exit_code_and_runs_the_handlers_too(tmp_path):
    failed = run("evaluate", "--qrels", str(tmp_path / "missing.txt"), "--runs", str(tmp_path))
    assert failed.returncode == 2 and "missing.txt" in failed.stderr
    assert "atexit ran" in failed.stdout and "thread done" in failed.stdout


def test_python_m_qrelkit_cli_ends_the_same_way():
    code = (
        "import atexit, runpy, sys; atexit.register(lambda: print('atexit ran')); sys.argv = ['qrelkit', '--version']\n"
        "class Teardown:\n    def __del__(self): print('interpreter teardown')\n"
        "held = Teardown()\n"
        "runpy.run_module('qrelkit.cli', run_name='__main__'); print('returned to the interpreter')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, env=ENV)
    assert done.returncode == 0 and "atexit ran" in done.stdout and "returned to the interpreter" not in done.stdout
    assert "interpreter teardown" not in done.stdout
