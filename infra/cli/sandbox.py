"""``flywheel sandbox``: inspect the programmatic sandbox and prove its task suite sound."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from producers.tasks.check import EXPECT_PASS, check_suite, suite_stats
from producers.tasks.suite import build_task_suite

app = typer.Typer(
    help="The programmatic mobile sandbox: apps, typed tools, template task suites and their self-check.",
    no_args_is_help=True,
)


@app.command()
def stats(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    seed: Annotated[int, typer.Option(help="Suite seed.")] = 0,
) -> None:
    """Count apps, tools and tasks per category and split."""
    data = suite_stats(build_task_suite(run_id="sandbox-stats", seed=seed))
    if as_json:
        typer.echo(json.dumps(data))
        return
    table = Table(title=f"sandbox: {data['apps']} apps, {data['tools']} tools")
    for column in ("category", "train", "dev", "test"):
        table.add_column(column)
    for category, splits in data["tasks"].items():
        table.add_row(category, *(str(splits.get(s, 0)) for s in ("train", "dev", "test")))
    Console().print(table)


@app.command()
def check(seed: Annotated[int, typer.Option(help="Suite seed.")] = 0) -> None:
    """Run every task with the reference solver, a no-op and a random policy; exit 1 unless solver passes all and the
    others none."""
    tasks = build_task_suite(run_id="sandbox-check", seed=seed)
    with Progress(transient=True) as progress:
        bar = progress.add_task("checking tasks", total=len(tasks))
        report = check_suite(tasks, on_task=lambda: progress.advance(bar))
    console = Console()
    for name, should_pass in EXPECT_PASS.items():
        ok = not report.wrong[name]
        want = "all" if should_pass else "none"
        console.print(
            f"[{'green' if ok else 'red'}]{name:<9} passed {report.passed[name]:>4}/{report.tasks} (expected {want})"
        )
        for task_id in report.wrong[name][:10]:
            console.print(f"   unexpected: {task_id}")
    raise typer.Exit(0 if report.green else 1)
