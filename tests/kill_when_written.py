"""Run the qrelkit command line and SIGKILL it the moment a file in a folder holds at least N bytes:
a kill in the middle of writing an output, whatever name the output is written under.

    python kill_when_written.py FOLDER N qrelkit-arguments...

A thread looks at the folder every half millisecond (the writers, DuckDB's COPY and Arrow's, let it
run while they write); files there at the start are left out, unless their size changes."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time


def _sizes(folder: str) -> dict[str, int]:
    found = {}
    for entry in os.scandir(folder):
        try:
            found[entry.name] = entry.stat(follow_symlinks=False).st_size
        except FileNotFoundError:
            pass  # renamed or removed between the listing and the look
    return found


def watch(folder: str, least: int) -> None:
    before = _sizes(folder)
    while True:
        for name, size in _sizes(folder).items():
            if size != before.get(name) and size >= least:
                os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.0005)


if __name__ == "__main__":
    folder, least, *arguments = sys.argv[1:]
    threading.Thread(target=watch, args=(folder, int(least)), daemon=True).start()
    sys.argv = ["qrelkit", *arguments]
    from qrelkit.cli import script

    script()
