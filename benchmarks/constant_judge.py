"""The judge the scale benchmarks run (bench_judging, bench_ray): it scores every pair 1.0 at no
cost, so what a job over it measures is the runner itself. A job names it
`constant_judge:ConstantJudge` with this folder on the import path."""

from __future__ import annotations

from qrelkit.judges import BaseJudge, JudgeConfig, Judgment


class ConstantJudge(BaseJudge):
    """Scores every pair 1.0: the judging costs nothing, so what is measured is the runner."""

    name = "constant"
    Config = JudgeConfig
    needs_template = False

    def judge(self, batch):
        return [Judgment(*pair.key, "ok", score=1.0) for pair in batch]
