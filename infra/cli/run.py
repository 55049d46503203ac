"""``flywheel run``: the main job — N rounds of the closed loop, then a report under ``runs/<run_id>/``."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

if TYPE_CHECKING:
    from infra.loop.config import LoopConfig

console = Console()

BusOpt = Annotated[str | None, typer.Option("--bus", help="kafka://host:port or sqlite:///path (default: embedded)")]
BlobsOpt = Annotated[
    str | None, typer.Option("--blobs", help="s3://bucket?endpoint=host:port or file:///abs/dir | file:rel/dir")
]
RegistryOpt = Annotated[str | None, typer.Option("--registry", help="http://mlflow-host:port or sqlite:///file.db")]
InferenceOpt = Annotated[
    str | None,
    typer.Option(
        "--inference",
        help="How model versions run: local: (transformers in process, default) | openai+http(s)://host:port/v1"
        "[?model=NAME&safe_names=1] (an OpenAI-compatible server) | vllm: (offline engine, GPU)",
    ),
]


def _loop_config(path: Path, base: LoopConfig) -> LoopConfig:
    """The --config file laid over ``base`` (the profile's config), nested fields one by one: a file that sets only
    ``{"learner": {"tiny": {"copy_head": true}}}`` keeps every other learner setting of the profile (its SFT steps,
    self weight...), not the bare ``LearnerConfig`` defaults. A malformed or mistyped file is one clear error naming
    it."""
    from pydantic import ValidationError

    from infra.cli.errors import CliError
    from infra.loop.config import LoopConfig

    try:
        overrides = json.loads(path.read_bytes())
    except json.JSONDecodeError as exc:
        raise CliError(
            f"--config {path} is not a valid loop config (file: Invalid JSON: {exc})", "fix the JSON file"
        ) from None
    if not isinstance(overrides, dict):
        raise CliError(f"--config {path} is not a valid loop config (file: not a JSON object)", "fix the JSON file")
    try:
        return LoopConfig.model_validate(_laid_over(base.model_dump(mode="json"), overrides))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}"
            for e in exc.errors(include_input=False, include_url=False)[:3]
        )
        raise CliError(f"--config {path} is not a valid loop config ({problems})", "fix the JSON file") from None


def _laid_over(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` applied: objects merge key by key, anything else replaces."""
    merged = dict(base)
    for key, value in overrides.items():
        nested = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _laid_over(merged[key], value) if nested else value
    return merged


def run(
    profile: Annotated[
        str,
        typer.Option(
            help="quick (default: 15-18 min on 2 cores, shows every mechanism) or full (longer, learns more); see "
            "infra/loop/config.py."
        ),
    ] = "quick",
    rounds: Annotated[int | None, typer.Option(min=1, help="Rounds of the loop (default 3).")] = None,
    first_rollouts: Annotated[
        int | None, typer.Option(min=1, help="Round 0 rollouts of the reference solver (the cold start).")
    ] = None,
    rollouts: Annotated[
        int | None, typer.Option(min=1, help="Rollouts of the round's model in each later round.")
    ] = None,
    retries: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=16,
            help="Sampled retries of each train rollout the round's model failed (default 2; 0: none). A retry "
            "that succeeds is a task greedy decoding does not solve yet; it is curated like any rollout. Their "
            "seeds follow --seed, so a run with retries repeats.",
        ),
    ] = None,
    rollout_workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=16,
            help="Rollout workers (default 2): episodes decode on one core each, so two use both cores of a 2-core "
            "machine through rollouts and dev evaluations. Worker 0 runs in the loop and the others as processes "
            "(their logs in runs/<run_id>/logs/); --spawn-consumers runs them as one 'flywheel consume "
            "rollout-worker --workers N'. The figures do not depend on it.",
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            help="Seed of the train rollout draw: the tasks round 0's cold start demonstrates and those each later "
            "round rolls out, with their seeds (default 0). The same seed reproduces a run's draw; the dev and test "
            "splits do not change with it."
        ),
    ] = None,
    algorithm: Annotated[
        str | None,
        typer.Option(
            help="After round 0: sft (continued SFT on admitted data), rl (GRPO with CARE on rollouts through the "
            "bus) or mixed (continued SFT, then GRPO with CARE)."
        ),
    ] = None,
    sft_steps: Annotated[int | None, typer.Option(min=1, help="SFT optimiser steps per training run.")] = None,
    base_model: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            file_okay=False,
            help="Start from this local Hugging Face checkpoint dir (weights, tokenizer, chat template) instead of "
            "the tiny model: prompts use its own chat template, the full default harness, a 4,096-token window. "
            "Nothing is downloaded.",
        ),
    ] = None,
    lora: Annotated[
        bool,
        typer.Option(
            "--lora/--full",
            help="Train LoRA adapters (peft) instead of every weight, in SFT and RL; versions are saved merged.",
        ),
    ] = False,
    lora_rank: Annotated[int, typer.Option(min=1, help="LoRA rank (with --lora).")] = 16,
    external_suite: Annotated[
        list[str] | None,
        typer.Option(
            help="An installed external suite (flywheel suites list, e.g. bfcl) whose tasks join every dev "
            "evaluation, --dev-per-category of them, scored apart from the sandbox Overall. Repeatable."
        ),
    ] = None,
    dev_per_category: Annotated[
        int | None, typer.Option(min=1, help="Dev tasks per category in each dev evaluation (default 16).")
    ] = None,
    auto_approve: Annotated[
        str | None,
        typer.Option(
            help="Harness change kinds published without review, comma-separated ('' = all wait for `flywheel review`)."
        ),
    ] = None,
    no_revise: Annotated[bool, typer.Option("--no-revise", help="Run without the harness reviser.")] = False,
    spawn_consumers: Annotated[
        bool,
        typer.Option(
            "--spawn-consumers",
            help="Run every consumer as its own `flywheel consume` process (always on a kafka:// bus).",
        ),
    ] = False,
    config: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help=(
                "A JSON file of LoopConfig fields laid over the --profile, nested objects key by key "
                '(e.g. {"learner": {"tiny": {"copy_head": true}}}); flags override it.'
            ),
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Where reports go: <out>/<run_id>/ (default runs/).")] = None,
    run_id: Annotated[
        str | None, typer.Option(help="Name of the run (default run-<time>-<random>); its topics are namespaced by it.")
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    bus: BusOpt = None,
    blobs: BlobsOpt = None,
    registry: RegistryOpt = None,
    inference: InferenceOpt = None,
) -> None:
    """Run the closed loop: tasks -> rollouts -> verification -> curation -> diagnosis -> reweighting -> training
    -> dev evaluation -> harness revision, N rounds, on the embedded adapters under ./.flywheel/ by default
    (no servers) or on Kafka + S3 + MLflow with --bus/--blobs/--registry. Ends with runs/<run_id>/report.html."""
    from infra.cli.quiet import quiet_console
    from infra.cli.signals import exit_on_sigterm
    from infra.config import load_settings, mask_credentials
    from infra.loop.config import LoopConfig
    from infra.loop.config import profile as loop_profile
    from infra.loop.run import run_loop
    from infra.report.write import learned_from_itself, versus_previous
    from learner.config import for_base_model
    from learner.model.lora import LoraSettings

    base = _loop_config(config, loop_profile(profile)) if config else loop_profile(profile)
    updates: dict[str, object] = {
        k: v
        for k, v in {
            "rounds": rounds,
            "first_round_rollouts": first_rollouts,
            "rollouts_per_round": rollouts,
            "failure_retries": retries,
            "rollout_workers": rollout_workers,
            "seed": seed,
            "external_suites": tuple(external_suite) if external_suite else None,
            "algorithm": algorithm,
            "out_dir": out,
        }.items()
        if v is not None
    }
    if auto_approve is not None:
        updates["auto_approve"] = tuple(k.strip() for k in auto_approve.split(",") if k.strip())
    if no_revise:
        updates["revise_harness"] = False
    learner: dict[str, object] = {}
    if sft_steps is not None:
        learner["sft"] = base.learner.sft.model_copy(update={"max_steps": sft_steps})
    if dev_per_category is not None:
        learner["dev_per_category"] = dev_per_category
    learner_config = base.learner.model_copy(update=learner)
    lora_settings = LoraSettings(rank=lora_rank, alpha=2 * lora_rank) if lora else None
    if base_model is not None:
        learner_config = for_base_model(learner_config, base_model, lora=lora_settings)
    elif lora_settings is not None:
        learner_config = learner_config.model_copy(update={"lora": lora_settings})
    if learner_config != base.learner:
        updates["learner"] = learner_config
    loop = LoopConfig.model_validate({**base.model_dump(), **updates})
    settings = load_settings(bus=bus, blobs=blobs, registry=registry, inference=inference)
    name = run_id or f"run-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    log_file = quiet_console(loop.out_dir / name / "logs" / "flywheel.log")
    console.print(
        f"[bold]flywheel run[/] {name}: profile {profile}, {loop.rounds} rounds, consumers "
        f"{'as processes' if spawn_consumers else 'in-process'}\n  bus={mask_credentials(settings.bus)}\n"
        f"  blobs={mask_credentials(settings.blobs)}\n  registry={mask_credentials(settings.registry)}\n"
        f"  inference={mask_credentials(settings.inference)}\n"
        f"  library output (bars, warnings, logs): {log_file}"
    )
    with exit_on_sigterm() as stopping:
        result = run_loop(
            settings, loop, run_id=name, spawn=spawn_consumers, console=console, show_progress=progress, stop=stopping
        )
    overall = " -> ".join(f"{r.dev.overall:.3f}" if r.dev else "-" for r in result.rounds)
    console.print(
        f"[bold]dev Overall per round:[/] {overall}   ({result.wall_time_s / 60:.1f} min, "
        f"{result.dead_letters} dead letters)"
    )
    paired = [f"round {r.round} {versus_previous(r)}" for r in result.report.rounds if r.dev_vs_previous]
    if paired:
        console.print(
            "[bold]each round's model vs the previous round's[/] (same dev tasks and seeds; paired delta [95%] "
            f"won/lost): {'; '.join(paired)}"
        )
    learned = [f"round {r.round}: {learned_from_itself(r)}" for r in result.report.rounds if r.admitted_self_templates]
    if learned:
        console.print(
            "[bold]what each round learned from itself[/] (the model's own admitted trajectories by template, with "
            f"the round's dev solved/tasks of it): {'; '.join(learned)}"
        )
    console.print(f"report: {result.report_html}")
    console.print(
        f"mlflow: run {result.mlflow_run_id} (experiment {loop.learner.model_name}) "
        f"at {mask_credentials(settings.registry)}"
    )
    console.print(f"audit:  flywheel replay --bus '{mask_credentials(result.bus_url)}' --from-start --verify")
    console.print(f"episode: flywheel episode show EPISODE_ID --run-id {name} --bus '{mask_credentials(settings.bus)}'")
