"""What a running job says about itself beside its database, for readers that cannot open it.

DuckDB lets one process write a file and no other process read it meanwhile, so a judging job
writes two small files of its own next to the database (`<db>.status.json`: its counts, rate, time
left, process and judge run, every second or so; `<db>.partial.parquet`: the judgments made so far,
every few seconds), each atomically (`qrelkit.io.files.write_atomically`: a reader sees the old file
or the new one, never half of one). `qrelkit status`, `qrelkit show` and `qrelkit agree --partial`
read them while the job holds the database. The files stay after the job: the last status says how
it ended.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from qrelkit.io.files import FileRefused, open_regular, write_atomically

STATUS_SUFFIX = ".status.json"
PARTIAL_SUFFIX = ".partial.parquet"
FORMAT = 1  # the status file's layout; a reader refuses one it does not know


def status_path(database: str | Path) -> Path:
    database = Path(database)
    return database.with_name(database.name + STATUS_SUFFIX)


def partial_path(database: str | Path) -> Path:
    database = Path(database)
    return database.with_name(database.name + PARTIAL_SUFFIX)


def write_status(database: str | Path, status: dict[str, Any]) -> None:
    text = json.dumps({"format": FORMAT, **status}, sort_keys=True)
    write_atomically(status_path(database), lambda temporary: temporary.write_text(text, encoding="utf-8"))


def read_status(database: str | Path) -> dict[str, Any] | None:
    """The last status a job wrote beside ``database``; None when there is none (or it is not a
    regular file: a reader follows no link to a device)."""
    path = status_path(database)
    try:
        with open_regular(path) as handle:
            found = json.loads(handle.read().decode("utf-8"))
    except (FileRefused, ValueError, UnicodeDecodeError):  # not JSON: never half a file (written atomically), one not ours
        return None
    return found if isinstance(found, dict) and found.get("format") == FORMAT else None


def write_partial(database: str | Path, table: Any) -> None:
    import pyarrow.parquet as pq

    write_atomically(partial_path(database), lambda temporary: pq.write_table(table, temporary))


def read_partial(database: str | Path) -> Any:
    """The judgments a job had made when it last wrote them (an Arrow table: qid, docid, status,
    score), or None."""
    import pyarrow.parquet as pq

    path = partial_path(database)
    try:
        with open_regular(path) as handle:
            return pq.read_table(handle)
    except FileRefused:
        return None


def this_process() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": platform.node()}


def job_state(status: dict[str, Any]) -> str:
    """judging (its process runs), finished, interrupted, stopped, failed, or gone (it was judging
    and its process is no more: killed)."""
    state = str(status.get("state"))
    return "gone" if state == "judging" and process_alive(status) is False else state


def process_alive(status: dict[str, Any]) -> bool | None:
    """Whether the process that wrote ``status`` still runs: None when it ran on another host (its
    process cannot be seen from here)."""
    if status.get("host") != platform.node():
        return None
    try:
        os.kill(int(status["pid"]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process of that id
    except (KeyError, TypeError, ValueError):
        return False
    return True
