"""``flywheel backends``: the environments installed as plugins, as the rollout workers and the verifier see them."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from producers.backends import plugins

app = typer.Typer(
    help=(
        "Environment backends are plugins: any installed distribution may declare a backend factory in the "
        f"'{plugins.BACKENDS}' entry-point group, its verifier in '{plugins.JUDGES}' (keyed by backend name) "
        f"and extra state predicates in '{plugins.PREDICATES}'. The built-in sandbox, llm_sim and device "
        "backends register the same way (pyproject.toml). See producers/backends/README.md."
    ),
    no_args_is_help=True,
)


@app.command("list")
def list_backends(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per backend, one per line.")] = False,
) -> None:
    """List installed backends: name, trust level, the distribution that provides it, whether a judge verifies it.

    Trust is how far the backend's evidence is believed (exact: a programmatic world; simulated: an LLM plays
    the tools; device: a real phone). A backend without a judge runs, but its episodes get "no verifier"
    verdicts. A plugin that fails to load is listed with its error and makes the command exit 1; the others
    are listed all the same.
    """
    rows = plugins.installed_backends()
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row.__dict__))
    else:
        table = Table(title=f"{len(rows)} backend(s) installed ({plugins.BACKENDS})")
        for column in ("backend", "trust", "provided by", "entry point", "judge"):
            table.add_column(column)
        for row in rows:
            trust = row.trust or "[red]broken[/red]"
            table.add_row(row.name, trust, row.provider, row.entry_point, "yes" if row.judged else "no")
        Console(width=200).print(table)
        for row in rows:
            if row.error:
                Console(stderr=True).print(f"[red]error:[/red] {row.error}", markup=True, highlight=False)
    if any(row.error for row in rows):
        raise typer.Exit(1)
