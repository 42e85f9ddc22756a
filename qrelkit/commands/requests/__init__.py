"""Requests as data: one frozen request class per use case, built from shared parts.

A request is built from the command line's flags, from a `--config FILE.yaml` of the same fields,
or from the Python API's arguments; each field is declared once (`qrelkit.commands.fields.option`:
its flag, help and default) and parses what it is given once (a grade map, a group's regex, a groups
file's column), so the layers below only ever see typed values and no flag is parsed twice.

The requests are frozen dataclasses checked on creation, not pydantic models as DESIGN.md first
said: building one from flags must not import pydantic, ~0.2 s of every command's start-up
(`tests/test_startup.py`).
"""

from qrelkit.commands.requests.assess import AssessLoadRequest, AssessPlanRequest, EstimateRequest
from qrelkit.commands.requests.audit import AuditRequest, CompareRequest, JudgeAudit, ModelAudit, ReportRequest
from qrelkit.commands.requests.data import (
    DataFetchRequest,
    DataListRequest,
    DataPathRequest,
    LoadDocsRequest,
    LoadQrelsRequest,
    LoadRunsRequest,
    LoadTopicsRequest,
    ShowRequest,
    StatusRequest,
)
from qrelkit.commands.requests.judging import (
    BatchCancelRequest,
    BatchesRequest,
    DemoRequest,
    ExportJudgmentsRequest,
    ExportQrelsRequest,
    GradeRequest,
    ImportScoresRequest,
    JudgeRequest,
    JudgesRequest,
    JudgmentsRequest,
    PromptsListRequest,
    PromptsShowRequest,
)
from qrelkit.commands.requests.parts import (
    EmbedderRef,
    GradeMap,
    GroupPattern,
    GroupsFile,
    PriorSpec,
    QrelsRef,
    RunGroups,
    RunsRef,
    parse_group_patterns,
)
from qrelkit.commands.requests.probe import ProbeRequest
from qrelkit.commands.requests.resample import OverlapRequest, ResampleEvaluateRequest, RestrainRequest, ResttestRequest
from qrelkit.commands.requests.scoring import CorrelateRequest, EvaluateRequest, FDRequest, NRGRequest

__all__ = [
    "AssessLoadRequest",
    "AssessPlanRequest",
    "AuditRequest",
    "BatchCancelRequest",
    "BatchesRequest",
    "CompareRequest",
    "CorrelateRequest",
    "DataFetchRequest",
    "DataListRequest",
    "DataPathRequest",
    "DemoRequest",
    "EmbedderRef",
    "EstimateRequest",
    "EvaluateRequest",
    "ExportJudgmentsRequest",
    "ExportQrelsRequest",
    "FDRequest",
    "GradeMap",
    "GradeRequest",
    "GroupPattern",
    "GroupsFile",
    "ImportScoresRequest",
    "JudgeAudit",
    "JudgeRequest",
    "JudgesRequest",
    "JudgmentsRequest",
    "LoadDocsRequest",
    "LoadQrelsRequest",
    "LoadRunsRequest",
    "LoadTopicsRequest",
    "ModelAudit",
    "NRGRequest",
    "OverlapRequest",
    "PriorSpec",
    "ProbeRequest",
    "PromptsListRequest",
    "PromptsShowRequest",
    "QrelsRef",
    "ReportRequest",
    "ResampleEvaluateRequest",
    "RestrainRequest",
    "ResttestRequest",
    "RunGroups",
    "RunsRef",
    "ShowRequest",
    "StatusRequest",
    "parse_group_patterns",
]
