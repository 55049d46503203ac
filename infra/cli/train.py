"""``flywheel train seed|sft|rl`` and ``flywheel eval``: the learner's jobs with progress bars (wiring only)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from infra.bootstrap import Ports, open_ports
from infra.config import load_settings

console = Console()
app = typer.Typer(
    help=(
        "The learner: seed cold-start episodes, SFT a planner (tiny model from a config, or a local checkpoint with "
        "--base-checkpoint, fully or with --lora), "
        "GRPO with CARE rewards over bus rollouts. Every run is an MLflow run; checkpoints become @candidate."
    ),
    no_args_is_help=True,
)

BusOpt = Annotated[str | None, typer.Option("--bus", help="kafka://host:port or sqlite:///path (default: embedded)")]
BlobsOpt = Annotated[
    str | None, typer.Option("--blobs", help="s3://bucket?endpoint=host:port or file:///abs/dir | file:rel/dir")
]
RegistryOpt = Annotated[str | None, typer.Option("--registry", help="http://mlflow-host:port or sqlite:///file.db")]
RunOpt = Annotated[str | None, typer.Option("--run-id", help="Run id on every event (default: a fresh one).")]
ModelOpt = Annotated[str, typer.Option("--model", help="Registered model name.")]
WorkOpt = Annotated[Path, typer.Option("--work-dir", help="Where checkpoints are written.")]
LoraOpt = Annotated[
    bool,
    typer.Option(
        "--lora/--full",
        help="Train LoRA adapters (peft) instead of every weight; the checkpoint is saved with them merged in.",
    ),
]
LoraRankOpt = Annotated[int, typer.Option(min=1, help="LoRA rank (with --lora).")]


@contextmanager
def _ports(bus: str | None, blobs: str | None, registry: str | None) -> Iterator[Ports]:
    ports = open_ports(load_settings(bus=bus, blobs=blobs, registry=registry))
    try:
        yield ports
    finally:
        ports.close()


@contextmanager
def _bar(label: str) -> Iterator[Callable[[int, int], None]]:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        task = progress.add_task(label, total=None)
        yield lambda done, total: progress.update(task, completed=done, total=total)


def _run_id(run_id: str | None) -> str:
    return run_id or f"train-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


def _logged_run(run_id: str | None, command: str) -> str:
    """The run id; library output (bars, warnings, logs) of the command goes to runs/<run_id>/logs/<command>.log."""
    from infra.cli.quiet import quiet_console

    run_id = _run_id(run_id)
    quiet_console(Path("runs") / run_id / "logs" / f"{command}.log")
    return run_id


def _config(model: str, work_dir: Path, **updates: object):  # noqa: ANN202 (LearnerConfig, imported lazily)
    from learner.config import LearnerConfig

    return LearnerConfig(model_name=model, work_dir=work_dir, **{k: v for k, v in updates.items() if v is not None})


def _lora(lora: bool, rank: int):  # noqa: ANN202 (LoraSettings | None, imported lazily)
    from learner.model.lora import LoraSettings

    return LoraSettings(rank=rank, alpha=2 * rank) if lora else None


@app.command()
def seed(
    bus: BusOpt = None,
    blobs: BlobsOpt = None,
    registry: RegistryOpt = None,
    run_id: RunOpt = None,
    seeds: Annotated[int | None, typer.Option(help="Task-suite seeds whose train split is solved.")] = None,
) -> None:
    """Publish reference-solver episodes of the train split (through the harness) as cold-start data."""
    run_id = _logged_run(run_id, "seed")
    from learner.jobs import seed_reference_episodes

    config = _config("planner", Path(".flywheel/learner"), cold_start_seeds=seeds)
    with _ports(bus, blobs, registry) as ports, _bar("reference episodes") as bar:
        passed = seed_reference_episodes(ports, config, run_id=_run_id(run_id), progress=bar)
    console.print(f"[green]{passed}[/] verified reference episodes published")


@app.command()
def sft(
    bus: BusOpt = None,
    blobs: BlobsOpt = None,
    registry: RegistryOpt = None,
    run_id: RunOpt = None,
    model: ModelOpt = "planner",
    work_dir: WorkOpt = Path(".flywheel/learner"),
    base_checkpoint: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            file_okay=False,
            help="A local Hugging Face checkpoint dir with its tokenizer and chat template (default: the tiny "
            "model). Prompts are rendered with its own template; nothing is downloaded.",
        ),
    ] = None,
    base_version: Annotated[str | None, typer.Option(help="Continue from this registered version (e.g. 3).")] = None,
    max_steps: Annotated[int | None, typer.Option(help="Optimizer steps (default: the learner config's).")] = None,
    time_budget: Annotated[float | None, typer.Option(help="Stop after this many seconds of training.")] = None,
    round: Annotated[int, typer.Option(help="Round number on the events and the checkpoint folder.")] = 0,
    parent_merge: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=0.99,
            help="With --base-version: the share of the parent's weights the result keeps, weight by weight "
            "(0: none; the main job merges at 0.5).",
        ),
    ] = 0.0,
    lora: LoraOpt = False,
    lora_rank: LoraRankOpt = 16,
) -> None:
    """SFT on the admitted (or verified) trajectories, from scratch or continued; registers it as @candidate."""
    if parent_merge and base_version is None:
        raise typer.BadParameter("merging needs a parent: give --base-version", param_hint="--parent-merge")
    run_id = _logged_run(run_id, "sft")
    from learner.config import for_base_model
    from learner.jobs import run_sft

    config = _config(model, work_dir, lora=_lora(lora, lora_rank), parent_merge=parent_merge)
    if base_checkpoint is not None:
        config = for_base_model(config, base_checkpoint, lora=config.lora)
    with _ports(bus, blobs, registry) as ports, _bar("SFT steps") as bar:
        outcome = run_sft(
            ports,
            config,
            run_id=_run_id(run_id),
            round=round,
            progress=bar,
            base_version=base_version,
            max_steps=max_steps,
            time_budget_s=time_budget,
        )
    _print_outcome(model, outcome.model_version, outcome.dataset_digest, outcome.metrics)


@app.command()
def rl(
    version: Annotated[str, typer.Argument(help="Model version to start from (e.g. 3).")],
    bus: BusOpt = None,
    blobs: BlobsOpt = None,
    registry: RegistryOpt = None,
    run_id: RunOpt = None,
    model: ModelOpt = "planner",
    work_dir: WorkOpt = Path(".flywheel/learner"),
    steps: Annotated[int, typer.Option(help="GRPO steps.")] = 4,
    local_workers: Annotated[
        bool,
        typer.Option(
            help="Also run a rollout worker and the verifier in this process (off: only `flywheel consume "
            "rollout-worker` / `verifier` processes serve the groups)."
        ),
    ] = True,
    lora: LoraOpt = False,
    lora_rank: LoraRankOpt = 16,
) -> None:
    """GRPO with CARE rewards over groups of bus rollouts; registers the result as @candidate."""
    run_id = _logged_run(run_id, "rl")
    import tempfile

    from learner.jobs import run_rl
    from learner.rl.services import LocalServices

    config = _config(model, work_dir, lora=_lora(lora, lora_rank))
    with _ports(bus, blobs, registry) as ports, _bar("RL steps") as bar, tempfile.TemporaryDirectory() as scratch:
        services = LocalServices(ports, Path(scratch)) if local_workers else None
        try:
            outcome, reports = run_rl(
                ports,
                config,
                version,
                steps=steps,
                run_id=_run_id(run_id),
                progress=bar,
                pump=services.pump if services else None,
            )
        finally:
            if services is not None:
                services.close()
    for i, r in enumerate(reports):
        console.print(
            f"step {i}: success {r.success_rate:.2f} reward {r.mean_reward:.3f} samples {r.samples} "
            f"staleness {r.staleness:.0f} |log ratio| {r.mean_abs_log_ratio:.4f} "
            f"rollout {r.rollout_s:.1f}s scoring {r.scoring_s:.1f}s update {r.update_s:.1f}s"
        )
    _print_outcome(model, outcome.model_version, outcome.dataset_digest, outcome.metrics)


def evaluate(
    version: Annotated[str, typer.Argument(help="Model version to evaluate (e.g. 3).")],
    bus: BusOpt = None,
    blobs: BlobsOpt = None,
    registry: RegistryOpt = None,
    run_id: RunOpt = None,
    model: ModelOpt = "planner",
    work_dir: WorkOpt = Path(".flywheel/learner"),
    per_category: Annotated[int, typer.Option(help="Dev tasks per capability.")] = 16,
    require_approval: Annotated[bool, typer.Option(help="Tag instead of promoting; a human promotes.")] = False,
) -> None:
    """Run the dev split through the harness, publish DevSetEvaluated, promote to @production if better."""
    run_id = _logged_run(run_id, "eval")
    from learner.jobs import run_eval

    config = _config(model, work_dir, dev_per_category=per_category, require_approval=require_approval)
    with _ports(bus, blobs, registry) as ports, _bar("dev tasks") as bar:
        report, promoted = run_eval(ports, config, version, run_id=_run_id(run_id), progress=bar)
    table = Table(title=f"{model}/{version} on dev")
    for column in ("capability", "success", "tasks"):
        table.add_column(column)
    for capability, score in report.evaluated.per_category.items():
        table.add_row(capability, f"{score.success_rate:.3f}", str(score.tasks))
    table.add_row("Overall", f"{report.evaluated.overall:.3f}", "")
    console.print(table)
    console.print(
        f"tokens/task {report.evaluated.tokens_per_task:.0f}, tool calls/task "
        f"{report.evaluated.tool_calls_per_task:.2f}; promoted to @production: {promoted}"
    )


def _print_outcome(model: str, version: str, digest: str, metrics: dict[str, float]) -> None:
    console.print(f"[green]registered[/] {model}/{version} @candidate (dataset {digest[:23]})")
    for key, value in sorted(metrics.items()):
        console.print(f"  {key}: {value:.4g}")
