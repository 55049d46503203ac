"""``flywheel stack``: provision, start, inspect and stop the local servers (Kafka, S3, MLflow)."""

from __future__ import annotations

import json
import shlex
import sys
import time
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from infra.config import Settings, StackSettings
from infra.stack import SERVICE_ORDER, Stack, StackError

app = typer.Typer(
    help=(
        "Run the real servers the platform talks to, on 127.0.0.1, without Docker: Apache Kafka 4 "
        "(single-node KRaft, jars from Maven Central, needs Java 17+), a SeaweedFS S3 store (`weed mini` "
        "from PyPI; buckets created on start) and an MLflow tracking server + model registry (SQLite, "
        "artifacts in the S3 store).\n\n"
        "Data, logs (.stack/logs/<service>.log) and pid files (.stack/run/) live under the stack dir "
        "(FLYWHEEL_STACK_DIR, default .stack). Ports and credentials come from FLYWHEEL_STACK_* settings "
        "or the stack table of flywheel.toml. Services: " + ", ".join(SERVICE_ORDER) + "."
    ),
    no_args_is_help=True,
)

# Logs and CI output are not terminals: give tables room instead of rich's 80-column default.
console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160)

ServicesArg = Annotated[
    list[str] | None,
    typer.Argument(
        help=f"Services to act on ({', '.join(SERVICE_ORDER)}); default: all. mlflow also starts s3.",
        show_default=False,
    ),
]

STATE_STYLE = {"running": "green", "stopped": "dim", "crashed": "bold red"}


def _settings() -> StackSettings:
    return Settings().stack


def _stack() -> Stack:
    return Stack(_settings(), echo=lambda msg: console.print(msg, markup=False, soft_wrap=True))


def _fail(exc: StackError) -> None:
    err.print(f"[bold red]error:[/] {exc}", markup=True, soft_wrap=True)
    raise typer.Exit(code=1)


PROVISION_HELP = (
    "Download and prepare what the servers need, without starting them.\n\n"
    "Fetches the Kafka jars from Maven Central once (cached under the stack's cache dir; if `mvn` is not "
    "on PATH, Apache Maven itself is fetched from Maven Central first), checks Java 17+, and formats the "
    "Kafka log dir once. A warm run downloads nothing."
)
UP_HELP = (
    "Start the services (provisioning first) and wait until each really answers.\n\n"
    "Ready means: Kafka answers a metadata request, S3 lists buckets with the configured keys, MLflow "
    "answers an API call. Already-running services are left alone (a second `up` is a no-op); a crashed "
    "one is started again. On failure the error shows the tail of the server's log and the exit code is 1."
)
STATUS_HELP = (
    "Show each service as running, stopped or crashed, with pid, URL and memory (exit code 1 if any is "
    "crashed).\n\n"
    "crashed = a pid file exists but its process is gone or does not answer its readiness check."
)
DOWN_HELP = (
    "Stop the servers this stack started (and only those), using the pid files.\n\n"
    "Each gets SIGTERM, then SIGKILL after FLYWHEEL_STACK_STOP_GRACE_S seconds. A pid that now belongs to "
    "some other process is never signalled. Data stays in the stack dir."
)
LOGS_HELP = "Print the last lines of a service's log (.stack/logs/SERVICE.log)."
ENV_HELP = 'Print the environment variables that point clients at this stack: eval "$(flywheel stack env)".'


@app.command(help=PROVISION_HELP)
def provision(services: ServicesArg = None) -> None:
    started = time.monotonic()
    try:
        timings = _stack().provision(services)
    except StackError as exc:
        _fail(exc)
    spent = ", ".join(f"{k} {v:.1f}s" for k, v in timings.items())
    console.print(f"[green]provisioned[/] in {time.monotonic() - started:.1f}s ({spent})")


@app.command(help=UP_HELP)
def up(services: ServicesArg = None) -> None:
    started = time.monotonic()
    stack = _stack()
    try:
        statuses = stack.up(services)
    except StackError as exc:
        _fail(exc)
    _print_table(statuses)
    console.print(f"[green]stack up[/] in {time.monotonic() - started:.1f}s. Client settings: `flywheel stack env`")


@app.command(help=STATUS_HELP)
def status(
    services: ServicesArg = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list instead of a table.")] = False,
) -> None:
    try:
        statuses = _stack().status(services)
    except StackError as exc:
        _fail(exc)
    if as_json:
        print(json.dumps([s.as_dict() for s in statuses], indent=2))
    else:
        _print_table(statuses)
    if any(s.state == "crashed" for s in statuses):
        raise typer.Exit(code=1)


@app.command(help=DOWN_HELP)
def down(services: ServicesArg = None) -> None:
    try:
        stopped = _stack().down(services)
    except StackError as exc:
        _fail(exc)
    console.print(f"[green]stack down[/] ({', '.join(stopped) if stopped else 'nothing was running'})")


@app.command(help=LOGS_HELP)
def logs(
    service: Annotated[str, typer.Argument(help=f"One of: {', '.join(SERVICE_ORDER)}.")],
    lines: Annotated[int, typer.Option("-n", "--lines", help="How many lines from the end.")] = 50,
) -> None:
    stack = _stack()
    try:
        text = stack.logs(service, lines)
    except StackError as exc:
        _fail(exc)
    if not text:
        err.print(f"no log yet at {stack.log_path(service)}", markup=False)
        return
    print(text)


@app.command(help=ENV_HELP)
def env(
    shell: Annotated[bool, typer.Option("--export/--plain", help="Prefix lines with `export`.")] = True,
) -> None:
    for key, value in _stack().client_env().items():
        line = f"{key}={shlex.quote(value)}"
        print(f"export {line}" if shell else line)


def _print_table(statuses: list) -> None:  # noqa: ANN001
    table = Table(title="flywheel stack", title_justify="left")
    table.add_column("service")
    table.add_column("state")
    table.add_column("pid", justify="right")
    table.add_column("url", no_wrap=True)
    table.add_column("RSS MiB", justify="right")
    table.add_column("detail", overflow="fold")
    for s in statuses:
        style = STATE_STYLE.get(s.state, "")
        table.add_row(
            s.name,
            f"[{style}]{s.state}[/]",
            str(s.pid or ""),
            s.url,
            f"{s.rss_mb:.0f}" if s.rss_mb is not None else "",
            (s.detail[:300] if s.detail else ""),
        )
    console.print(table)
