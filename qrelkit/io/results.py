"""What every result of the Python API has besides its fields: `to_pandas()` that says how to
install pandas when it is missing, a one-line `repr` in a terminal and a table in a notebook.

pandas is optional (the `pandas` extra): nothing imports it until a result is turned into a
DataFrame.
"""

from __future__ import annotations

import html
from typing import Any

from qrelkit.errors import MissingExtraError

PANDAS_HINT = "to_pandas() needs pandas, which is not installed: pip install 'qrelkit[pandas]' (or pip install pandas)"


def pandas() -> Any:
    """The pandas module, or a MissingExtraError saying how to install it."""
    try:
        import pandas as pd
    except ModuleNotFoundError:
        raise MissingExtraError(PANDAS_HINT, name="pandas") from None
    return pd


def duration(seconds: float) -> str:
    """A span of time as results say it: `4s`, `3m07s`, `2h05m`."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class Result:
    """A result's face in a notebook: ``repr`` is its class and a short summary (``summary()``),
    ``_repr_html_`` that line and the first rows of ``to_pandas()`` (just the line without pandas)."""

    SHOWN_ROWS = 20

    def summary(self) -> str:
        return ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.summary()})"

    def _repr_html_(self) -> str:
        head = f"<p><code>{html.escape(repr(self))}</code></p>"
        to_pandas = getattr(self, "to_pandas", None)
        if to_pandas is None:
            return head
        try:
            frame = to_pandas()
        except MissingExtraError:
            return head
        more = f"<p>{len(frame) - self.SHOWN_ROWS} more rows: .to_pandas()</p>" if len(frame) > self.SHOWN_ROWS else ""
        return head + frame.head(self.SHOWN_ROWS)._repr_html_() + more
