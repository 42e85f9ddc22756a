"""Whether a job's judge can start, checked before the job writes anything (no database created,
nothing loaded): its backend installed, its key variable set, its model files and device present,
and, only when asked (`judge --check-endpoint`), its endpoint answering one cheap request. A dry run
runs the same checks, so it passes only what the run would not refuse at once."""

from __future__ import annotations

from qrelkit.jobs.plan import ResolvedJudge
from qrelkit.jobs.spec import JobError, JobSpec
from qrelkit.judges import BaseJudge
from qrelkit.judges.startup import installed


def _own(cls: type, hook: str) -> bool:
    """Whether the judge class has a check of its own (not the base's, which finds nothing)."""
    return any(hook in vars(klass) for klass in cls.__mro__ if klass is not BaseJudge and klass is not object)


def judge_start_problems(judge: ResolvedJudge, spec: JobSpec, *, check_endpoint: bool = False) -> list[str]:
    """A line per problem (`startup_problems` of the judge's class, then its endpoint), each naming
    the fix; [] when the judge can start. On Ray the backend, model and device are the workers',
    checked where they build the judge."""
    cls = judge.judge_class
    problems: list[str] = []
    startup = getattr(cls, "startup_problems", None)
    if spec.executor.kind == "ray":
        if not installed("ray"):
            problems.append(
                "the Ray executor needs ray, which is not installed: pip install 'qrelkit[ray]', or judge here with --executor local"
            )
    elif callable(startup):
        problems += startup(judge.config)
    endpoint = getattr(cls, "endpoint_problem", None)
    if check_endpoint and not problems and callable(endpoint):
        problem = endpoint(judge.config)
        problems += [problem] if problem else []
    return problems


def check_judge_can_start(judge: ResolvedJudge, spec: JobSpec, *, check_endpoint: bool = False) -> list[str]:
    """Raise `JobError` (exit 2) with one line per problem; else the checks made, as lines for the
    dry run's "checked before judging"."""
    problems = judge_start_problems(judge, spec, check_endpoint=check_endpoint)
    source = spec.source or "job"
    if problems:
        raise JobError("\n".join(f"{source}: {problem}" for problem in problems))
    name, cls = judge.factory.name, judge.judge_class
    checks = []
    if spec.executor.kind == "ray":
        checks.append(f"judge {name!r}: its backend, model files and device are checked on the Ray workers")
    elif _own(cls, "startup_problems"):
        checks.append(f"judge {name!r} can start: its backend is installed, and its key variable, model files and device are there")
    if check_endpoint and _own(cls, "endpoint_problem"):
        checks.append(f"judge {name!r}: its endpoint answered one request")
    return checks
