"""`qrelkit batches [list] | cancel`: Batch API submissions of judging jobs."""

from __future__ import annotations

from typing import Annotated

import typer

from qrelkit.cli.base import DEFAULT_DB, DbOption, JsonOption, app, out, print_json

batches_app = typer.Typer(help="Batch API submissions: check and collect them (the default), or cancel one.", invoke_without_command=True)
app.add_typer(batches_app, name="batches")
CheckOption = Annotated[bool, typer.Option("--check/--no-check", help="Ask the API about open batches and collect finished ones.")]
BaseUrlOption = Annotated[
    str | None,
    typer.Option("--base-url", help="The endpoint to ask (default: the openai judge's, https://api.openai.com/v1); never the database's."),
]
KeyEnvOption = Annotated[
    str, typer.Option("--api-key-env", help="The environment variable holding the key sent there (never the database's).")
]
StoredOption = Annotated[
    bool,
    typer.Option(
        "--use-stored-endpoint", help="Send to the endpoint, with the key variable, stored with each batch (trust this database)."
    ),
]


def _endpoint(base_url: str | None, api_key_env: str):
    from qrelkit.jobs.batch_api_job import Endpoint

    return Endpoint(base_url, api_key_env)


def _show(db, check: bool, as_json: bool, endpoint, use_stored: bool) -> None:
    from qrelkit.commands import batches
    from qrelkit.report.batches import batches_table

    found = batches.list_batches(db, check=check, endpoint=endpoint, use_stored_endpoint=use_stored)
    if as_json:
        print_json(batches.payload(found))
        return
    out.print(batches_table(found))


@batches_app.callback()
def batches_default(
    ctx: typer.Context,
    db: DbOption = DEFAULT_DB,
    check: CheckOption = True,
    as_json: JsonOption = False,
    base_url: BaseUrlOption = None,
    api_key_env: KeyEnvOption = "OPENAI_API_KEY",
    use_stored: StoredOption = False,
) -> None:
    """Check every open batch of --db and collect the finished ones into judgments, then list them all."""
    if ctx.invoked_subcommand is None:
        _show(db, check, as_json, _endpoint(base_url, api_key_env), use_stored)


@batches_app.command("list")
def batches_list(
    db: DbOption = DEFAULT_DB,
    check: CheckOption = True,
    as_json: JsonOption = False,
    base_url: BaseUrlOption = None,
    api_key_env: KeyEnvOption = "OPENAI_API_KEY",
    use_stored: StoredOption = False,
) -> None:
    """Check every open batch of --db and collect the finished ones into judgments, then list them all."""
    _show(db, check, as_json, _endpoint(base_url, api_key_env), use_stored)


@batches_app.command("cancel")
def batches_cancel(
    batch_id: Annotated[str, typer.Argument(help="The batch id (batch_...) or qrelkit's submission id.")],
    db: DbOption = DEFAULT_DB,
    as_json: JsonOption = False,
    base_url: BaseUrlOption = None,
    api_key_env: KeyEnvOption = "OPENAI_API_KEY",
    use_stored: StoredOption = False,
) -> None:
    """Cancel a running batch. Its answered requests are kept when it is collected; the rest go back
    to pending (the next run of the job sends them again)."""

    from qrelkit.commands import batches
    from qrelkit.report.batches import batch_line

    cancelled = batches.cancel(db, batch_id, endpoint=_endpoint(base_url, api_key_env), use_stored_endpoint=use_stored)
    if as_json:
        print_json(cancelled.to_dict())
        return
    out.print(batch_line(cancelled.to_dict()), highlight=False)
