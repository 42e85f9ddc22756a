"""The notebook face of qrelkit: each use case's request class as a function with the request's own
parameters, so `help(qrelkit.agree)` lists them and a notebook's call is the command line's.

Qrels are given as a path (a TREC file, `irds:<id>`), a stored set's name (with ``db``), a
`Qrels`, a ``{qid: {docid: grade}}`` dict, or a pandas/Arrow table with the field's column names
(``query_id``/``qid``, ``doc_id``/``docid``, ``relevance``/``grade``); runs as paths (files or
folders), stored run names, `Run` objects, ``{run: {qid: {docid: score}}}`` or a table (a ``run``
column splits it). Every function builds its request, runs it in a workspace open for that call
alone (nothing holds the database afterwards) and returns the use case's result: plain data with
``to_dict()``, ``to_pandas()`` and a short ``repr``.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

from qrelkit.commands import requests
from qrelkit.commands.fields import Request
from qrelkit.commands.workspace import execute

DB = inspect.Parameter("db", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="str | Path | None")
# How long work shows its progress (`qrelkit.report.progress.api_progress`): False none, True at once,
# a tqdm-like callable (tqdm.auto.tqdm) to drive; None (the default) for work over a few seconds.
PROGRESS = inspect.Parameter("progress", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="bool | Callable | None")


def _parameters(request_cls: type[Request]) -> list[inspect.Parameter]:
    """The request's fields a Python caller gives (not the command line's own: how it prints), the
    ones the class names positional first, then the database."""
    chosen = [f for f in dataclasses.fields(request_cls) if f.init and getattr(f.metadata.get("flag"), "api", True)]
    by_name = {f.name: f for f in chosen}
    order = [by_name[name] for name in request_cls.positional if name in by_name]
    order += [f for f in chosen if f.name not in request_cls.positional]
    out = []
    for field in order:
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if field.name in request_cls.positional else inspect.Parameter.KEYWORD_ONLY
        default = field.default if field.default is not dataclasses.MISSING else inspect.Parameter.empty
        if field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        out.append(inspect.Parameter(field.name, kind, default=default, annotation=field.type))
    if request_cls.uses_db and "db" in request_cls.positional:
        at = request_cls.positional.index("db")
        out.insert(at, DB.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD, default=inspect.Parameter.empty))
    elif request_cls.uses_db:
        out.append(DB)
    return [*out, PROGRESS]


def use_case(name: str, request_cls: type[Request]) -> Callable[..., Any]:
    """The function ``name``: the request built from its arguments, answered by its use case."""
    signature = inspect.Signature(_parameters(request_cls))

    def call(*args: Any, **kwargs: Any) -> Any:
        from qrelkit.report.progress import api_progress

        given = signature.bind(*args, **kwargs).arguments
        db = given.pop("db", None)
        progress = api_progress(given.pop("progress", None))
        return execute(request_cls(**given), db, progress=progress)

    call.__signature__ = signature  # type: ignore[attr-defined]
    call.__name__ = call.__qualname__ = name
    call.__doc__ = inspect.cleandoc(request_cls.__doc__ or "")
    call.__module__ = __name__
    call.request = request_cls  # type: ignore[attr-defined]
    return call


evaluate = use_case("evaluate", requests.EvaluateRequest)
agree = use_case("agree", requests.AuditRequest)
audit = agree  # the model qrels, the reference qrels and the runs, in that order
compare = use_case("compare", requests.CompareRequest)
correlate = use_case("correlate", requests.CorrelateRequest)
nrg = use_case("nrg", requests.NRGRequest)
fd = use_case("fd", requests.FDRequest)
grade = use_case("grade", requests.GradeRequest)
judge = use_case("judge", requests.JudgeRequest)
judgments = use_case("judgments", requests.JudgmentsRequest)
probe = use_case("probe", requests.ProbeRequest)
data_path = use_case("data_path", requests.DataPathRequest)
estimate = use_case("estimate", requests.EstimateRequest)
assess_plan = use_case("assess_plan", requests.AssessPlanRequest)
assess_load = use_case("assess_load", requests.AssessLoadRequest)
