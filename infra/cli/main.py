"""The ``flywheel`` command: one Typer app, each area of the platform a sub-command group."""

from __future__ import annotations

import typer

from infra.cli import audit, consume, review, run, sandbox, schemas, serve, smoke, stack, status, train

app = typer.Typer(
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
app.add_typer(stack.app, name="stack")
app.add_typer(schemas.app, name="schemas")
app.add_typer(sandbox.app, name="sandbox")
app.add_typer(serve.app, name="serve")


if __name__ == "__main__":  # pragma: no cover
    app()
