"""`qrelkit probe`: a job's judge put to gullibility probes. Its options are `ProbeRequest`'s fields:
each flag, help text and default is read from the request (declared there once)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from qrelkit.cli.base import ConfigOption, app, err, out, print_json
from qrelkit.commands.requests import ProbeRequest, field_option


def _option(name: str) -> Any:
    """The typer option of a request field, with its flag and help."""
    flag, text, _ = field_option(ProbeRequest, name)
    return typer.Option(flag, help=text)


def _default(name: str) -> Any:
    return field_option(ProbeRequest, name)[2]


@app.command("probe")
def probe_cmd(
    job: Annotated[Path | None, typer.Argument(help=field_option(ProbeRequest, "job")[1])] = None,
    probe: Annotated[list[str] | None, _option("probes")] = None,
    sample: Annotated[int, _option("sample")] = _default("sample"),
    seed: Annotated[int, _option("seed")] = _default("seed"),
    reference_qrels: Annotated[str | None, _option("reference")] = _default("reference"),
    grade: Annotated[list[int] | None, _option("grades")] = None,
    rel_level: Annotated[int, _option("rel_level")] = _default("rel_level"),
    relevant_at: Annotated[float | None, _option("relevant_at")] = _default("relevant_at"),
    score_from: Annotated[str, _option("score_from")] = _default("score_from"),
    resamples: Annotated[int, _option("resamples")] = _default("resamples"),
    permutations: Annotated[int, _option("permutations")] = _default("permutations"),
    interval: Annotated[str, _option("interval")] = _default("interval"),
    dry_run: Annotated[bool, _option("dry_run")] = _default("dry_run"),
    retry_failed: Annotated[bool, _option("retry_failed")] = _default("retry_failed"),
    overrides: Annotated[list[str] | None, _option("sets")] = None,
    allow_import: Annotated[bool, _option("allow_import")] = _default("allow_import"),
    list_probes: Annotated[bool, typer.Option("--list", help="List the built-in probes and what each tests.")] = False,
    output_format: Annotated[str, typer.Option("--format", help="table (default), markdown or latex (booktabs).")] = "table",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON: each probe's shift, shares, intervals and p-values.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress output.")] = False,
    config: ConfigOption = None,
) -> None:
    """Can the job's judge be fooled? Judge a sample of the job's pool that the reference calls
    non-relevant as it is and as each probe perturbs it (query terms or an instruction injected,
    padding, truncation, shuffled sentences; text drawn into an image, a blank or noise image,
    crop, scale), then per probe the mean shift of the scores and the share pushed to relevant,
    with paired bootstrap intervals over queries and a paired randomisation test (docs/probes.md).
    Resumable: a run killed is run again, and nothing judged is judged twice."""
    from qrelkit.commands import probe as probe_command
    from qrelkit.commands.compare import check_output
    from qrelkit.commands.workspace import Workspace
    from qrelkit.report import probes as views
    from qrelkit.report.progress import progress_output

    if list_probes:
        out.print(views.probes_table(probe_command.builtin_probes()))
        return
    check_output(output_format)
    request = ProbeRequest(
        job=job,  # type: ignore[arg-type]  # None: the request says what is missing
        probes=tuple(probe or ()),
        sample=sample,
        seed=seed,
        reference=reference_qrels,
        grades=tuple(grade or _default("grades")),
        rel_level=rel_level,
        relevant_at=relevant_at,
        score_from=score_from,
        resamples=resamples,
        permutations=permutations,
        interval=interval,
        dry_run=dry_run,
        retry_failed=retry_failed,
        sets=tuple(overrides or ()),
        allow_import=allow_import,
    )

    def progress_for(run: str) -> Any:
        return progress_output(f"probing {request.job.name} [{run}]", console=err, enabled=not (quiet or as_json or dry_run))

    with Workspace(probe_command.job_database(request)) as workspace:
        result = probe_command.run(request, workspace, progress_for=progress_for)
    if as_json:
        print_json(result.to_dict())
    elif output_format == "markdown":
        print(views.markdown(result), end="")
    elif output_format == "latex":
        print(views.latex(result), end="")
    elif not out.is_terminal:  # a pipe or a file: plain text, no cell cut to a width
        print(views.plain(result), end="")
    else:
        for part in views.terminal(result):
            out.print(part)
    if result.interrupted:
        raise typer.Exit(130)
