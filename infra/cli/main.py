"""The ``flywheel`` command: one Typer app, each area of the platform a sub-command group."""

from __future__ import annotations

from typing import Annotated

import typer

from infra.cli import (
    audit,
    backends,
    consume,
    review,
    run,
    sandbox,
    schemas,
    serve,
    smoke,
    stack,
    status,
    suites,
    train,
    ui,
)
from infra.cli.errors import FlywheelGroup, mask_logs
from infra.cli.quiet import QUIET_COMMANDS, quiet_libraries

app = typer.Typer(
    cls=FlywheelGroup,
    name="flywheel",
    help=(
        "planner-flywheel: a closed-loop, event-sourced platform for developing LLM planner agents.\n\n"
        "Every step of an episode is an immutable event on a bus (Kafka or the embedded log); blobs live in a "
        "content-addressed store (S3 or a directory); models and harness configs are versioned in MLflow. "
        "Adapters are chosen by URL: --bus/--blobs/--registry flags, FLYWHEEL_* env vars or flywheel.toml."
    ),
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


@app.callback()
def main(
    ctx: typer.Context,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="On failure, print the traceback too; show the libraries' progress bars, warnings and logs.",
        ),
    ] = False,
) -> None:
    """Errors are one line on stderr and a non-zero exit; -v adds the traceback. run, train, eval and consume
    keep library output (progress bars, warnings, log records) in a log file unless -v."""
    ctx.meta["flywheel.verbose"] = verbose
    mask_logs()
    if ctx.invoked_subcommand in QUIET_COMMANDS:
        quiet_libraries(verbose)


app.command("run")(run.run)
app.command("smoke")(smoke.smoke)
app.command("consume")(consume.consume)
app.command("status")(status.status)
app.command("replay")(audit.replay)
app.add_typer(audit.episode_app, name="episode")
app.add_typer(audit.export_app, name="export")
app.add_typer(review.app, name="review")
app.add_typer(train.app, name="train")
app.command("eval")(train.evaluate)
app.command("ui")(ui.ui)
app.add_typer(stack.app, name="stack")
app.add_typer(schemas.app, name="schemas")
app.add_typer(sandbox.app, name="sandbox")
app.add_typer(backends.app, name="backends")
app.add_typer(suites.app, name="suites")
app.add_typer(serve.app, name="serve")


if __name__ == "__main__":  # pragma: no cover
    app()
