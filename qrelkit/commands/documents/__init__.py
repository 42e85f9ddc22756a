"""What each use case's result says, as a `qrelkit.report.document.Document`: the one description of
a result that every format renders (issue 42). A request names its builder (``document``), a
function ``(result, request) -> Document`` in one of these modules; report/ renders documents and
knows no result's type, and cli/ only prints them."""

from __future__ import annotations

from typing import Any

from qrelkit.report.document import Estimate


def ranged(
    value: float | None, found: Any, digits: int = 4, interval_digits: int = 3, *, signed: bool = False, percent: bool = False
) -> Estimate:
    """``value`` with ``found``'s interval (a record with ``low``, ``high`` and ``note``, or None), marked where it has a note."""
    if found is None:
        return Estimate(value, digits=digits, interval_digits=interval_digits, signed=signed, percent=percent)
    return Estimate(value, found.low, found.high, digits, interval_digits, mark=bool(found.note), signed=signed, percent=percent)


def bracket(found: Any, digits: int = 3) -> str:
    """`` [low, high]`` of an interval record (``low``, ``high``) for a sentence, or nothing where there is none."""
    return "" if found is None else f" [{found.low:.{digits}f}, {found.high:.{digits}f}]"
