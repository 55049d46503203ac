"""Does the loop beat plain SFT? Two arms from the same seeds and the same demonstration budget, in one run.

(a) ``sft-only``: round 0 only: the reference solver's cold-start demonstrations, then SFT for as many optimiser
    steps as the full loop spends in all its training runs together.
(b) ``loop``: the default closed loop (rounds of rollouts on instances the model was not shown, admission of its
    own verified successes, new tasks, harness revisions, continued SFT or RL with CARE per ``--algorithm``).

Both arms run ``flywheel run``'s in-process loop on their own embedded bus, blob store and registry, with the
same run settings except the rounds; the loop's final step evaluates the best model by dev once on the test
split. The table gives dev and test Overall per category for both arms, what the loop learned from itself
(admitted_self, train_examples_self per round) and the wall time of each arm. CARE vs no-CARE from one SFT
checkpoint is ``bench/care_ablation.py``.

    .venv/bin/python bench/flywheel_ablation.py [--rounds 3] [--algorithm sft|rl|mixed] [--out runs/ablation]
"""

# ruff: noqa: E402  (HF_HUB_OFFLINE is set before transformers and trl are imported)
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rich.console import Console
from rich.table import Table

from infra.cli.quiet import quiet_console
from infra.config import load_settings
from infra.loop.config import LoopConfig, profile
from infra.loop.run import LoopResult, run_loop
from learner.config import CATEGORIES


def loop_steps(config: LoopConfig) -> int:
    """Optimiser steps the loop's training runs take together (round 0 fresh, later rounds continued)."""
    later = config.learner.continued_sft.max_steps
    if config.algorithm == "rl":
        later = config.learner.rl.steps_per_round
    elif config.algorithm == "mixed":
        later = config.trainer_learner().rl.sft_steps + config.learner.rl.steps_per_round
    return config.learner.sft.max_steps + later * (config.rounds - 1)


def sft_only(config: LoopConfig) -> LoopConfig:
    """Round 0 alone with every step of the loop in its one SFT run, nothing revised."""
    learner = config.learner.model_copy(
        update={"sft": config.learner.sft.model_copy(update={"max_steps": loop_steps(config)})}
    )
    return config.model_copy(update={"rounds": 1, "revise_harness": False, "learner": learner})


def run_arm(name: str, config: LoopConfig, root: Path, console: Console) -> LoopResult:
    state = root / name
    state.mkdir(parents=True, exist_ok=True)
    settings = load_settings(
        bus=f"sqlite:///{state / 'bus.db'}",
        blobs=f"file://{state / 'blobs'}",
        registry=f"sqlite:///{state / 'mlflow.db'}",
    )
    console.rule(f"arm {name}: {config.rounds} round(s), algorithm {config.algorithm}")
    return run_loop(settings, config.model_copy(update={"out_dir": root}), run_id=name, console=console)


def _scores(report: dict, key: str) -> dict[str, float]:
    rounds = report["rounds"]
    last = rounds[-1]
    if key == "dev":
        best = max(rounds, key=lambda r: r.get("dev_overall") or 0.0)
        return {"overall": best.get("dev_overall") or 0.0, **best.get("dev_per_category", {})}
    return {"overall": last.get("test_overall") or 0.0, **last.get("test_per_category", {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="quick", help="the loop's profile (quick|full)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of the loop arm (default: the profile's)")
    parser.add_argument("--algorithm", choices=("sft", "rl", "mixed"), default=None)
    parser.add_argument("--first-rollouts", type=int, default=None, help="the cold start's demonstration budget")
    parser.add_argument("--rollouts", type=int, default=None, help="the loop's rollouts per later round")
    parser.add_argument("--sft-steps", type=int, default=None, help="the loop's cold-start SFT steps")
    parser.add_argument("--continued-steps", type=int, default=None, help="the loop's SFT steps in later rounds")
    parser.add_argument("--dev-per-category", type=int, default=None, help="dev and test tasks per category")
    parser.add_argument("--out", type=Path, default=Path("runs") / f"ablation-{time.strftime('%Y%m%d-%H%M%S')}")
    args = parser.parse_args()
    console = Console()
    loop = profile(args.profile)
    learner = loop.learner
    if args.sft_steps is not None:
        learner = learner.model_copy(update={"sft": learner.sft.model_copy(update={"max_steps": args.sft_steps})})
    if args.continued_steps is not None:
        continued = learner.continued_sft.model_copy(update={"max_steps": args.continued_steps})
        learner = learner.model_copy(update={"continued_sft": continued})
    if args.dev_per_category is not None:
        learner = learner.model_copy(update={"dev_per_category": args.dev_per_category})
    updates = {
        "rounds": args.rounds,
        "algorithm": args.algorithm,
        "first_round_rollouts": args.first_rollouts,
        "rollouts_per_round": args.rollouts,
    }
    loop = loop.model_copy(update={"learner": learner, **{k: v for k, v in updates.items() if v is not None}})
    args.out.mkdir(parents=True, exist_ok=True)
    quiet_console(args.out / "logs" / "ablation.log")
    console.print(f"same budget: {loop_steps(loop)} optimiser steps per arm; out {args.out}")
    arms = {"sft-only": sft_only(loop), "loop": loop}
    results = {name: run_arm(name, config, args.out, console) for name, config in arms.items()}
    reports = {name: json.loads(r.report_html.with_suffix(".json").read_text()) for name, r in results.items()}

    table = Table(title="SFT on the demonstrations only vs the closed loop (same seeds, same optimiser steps)")
    table.add_column("arm")
    table.add_column("split")
    for column in ("overall", *CATEGORIES):
        table.add_column(column, justify="right")
    table.add_column("wall", justify="right")
    for name, report in reports.items():
        for split in ("dev", "test"):
            scores = _scores(report, split)
            wall = f"{results[name].wall_time_s / 60:.1f} min" if split == "dev" else ""
            table.add_row(name, split, *(f"{scores.get(c, 0.0):.3f}" for c in ("overall", *CATEGORIES)), wall)
    console.print(table)
    for r in reports["loop"]["rounds"]:
        console.print(
            f"loop round {r['round']}: dev {r.get('dev_overall') or 0:.3f}, admitted_self {r.get('admitted_self', 0)}, "
            f"train_examples_self {r.get('train_examples_self', 0)}, rl_steps {r.get('rl_steps', 0)}, "
            f"care_schedule {r.get('care_schedule')}"
        )
    gain = _scores(reports["loop"], "test")["overall"] - _scores(reports["sft-only"], "test")["overall"]
    console.print(f"[bold]test Overall, loop - sft-only: {gain:+.3f}[/]")
    (args.out / "ablation.json").write_text(
        json.dumps({name: {"dev": _scores(r, "dev"), "test": _scores(r, "test")} for name, r in reports.items()})
    )


if __name__ == "__main__":
    main()
