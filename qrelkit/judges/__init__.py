"""The judge protocol and registry; one module per backend. Judges never write to the database."""

from qrelkit.judges.base import BaseJudge, BatchJudge, FatalJudgeError, Judge, JudgeConfig, JudgeContext, JudgeError, Judgment, Pair
from qrelkit.judges.registry import (
    JudgeFactory,
    create_judge,
    describe_judges,
    judge_class,
    judge_names,
    make_config,
)

__all__ = [
    "BaseJudge",
    "BatchJudge",
    "Judge",
    "JudgeConfig",
    "JudgeContext",
    "FatalJudgeError",
    "JudgeError",
    "JudgeFactory",
    "Judgment",
    "Pair",
    "create_judge",
    "describe_judges",
    "judge_class",
    "judge_names",
    "make_config",
]
