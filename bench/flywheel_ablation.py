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

One seed is one sample: the main job's test Overall was 0.344 on seed 0 and 0.431 on seed 1 (2026-12-06, same
code), and its round-0 models 0.381 and 0.450, while arms differed by less. ``--seeds 0 1 2`` runs both arms on
each seed (the seed draws the cold start's demonstrations, each round's rollouts and the SFT order; the dev and
test tasks are the same) and ends with the mean of each arm and the paired test difference over every (seed, test
task) pair with its 95% bootstrap interval: an interval that spans 0 says the loop did not beat SFT-only beyond
the noise of these tasks and seeds (it cannot speak for seeds not run). About 28 minutes per seed on two cores.
Measured 2026-12-06 (the default loop, two retries, against 1,600 SFT steps): test 0.363 / 0.494 / 0.344 against
0.331 / 0.406 / 0.400 on seeds 0 / 1 / 2, paired +0.021 [-0.035, +0.079] over 192 pairs: level with SFT-only.
Again 2026-12-07 with continued rounds merged with their parent (``parent_merge`` 0.5; another machine, whose
float results differ): test 0.406 / 0.444 against 0.369 / 0.481 on seeds 0 / 1, paired -0.000 [-0.078, +0.081]
over 128 pairs (each arm alone solved 9 and 10 tasks): still level. Again with the procedure prior ranked for the
goal (2026-12-07; the loop arms read back with ``--resume`` from two clean-clone ``flywheel run --seed N`` runs of
the same code): test 0.387 / 0.362 against 0.381 / 0.444, paired -0.037 [-0.109, +0.031] over 128 pairs (the loop
alone solved 6, SFT-only alone 11): level, the better cold start lifting both arms. Again with the worklist line and
its slots (2026-12-07, loop arms read back the same way): test 0.369 / 0.406 against 0.444 / 0.469, paired -0.069
[-0.134, -0.013] over 128 pairs (the loop alone solved 8, SFT-only alone 16): SFT-only ahead, beyond the noise
(those loop runs were made before a run repeated itself: the same code's seed-0 run scored test 0.463 in the next
process). Again with the rounds on one LR schedule and the own examples at most a tenth of the rows
(``LoopConfig.one_schedule``, ``LearnerConfig.self_share``; 2026-12-07, loop arms read back from ``flywheel run
--seed N``, whose runs now repeat): test 0.456 / 0.469 against 0.444 / 0.456, dev 0.544 / 0.562 against 0.488 /
0.494, paired +0.012 [-0.019, +0.044] over 128 pairs (the loop alone solved 4, SFT-only alone 2); with seed 2
(test 0.531 both, dev 0.494 against 0.512), +0.008 [-0.010, +0.029] over 192 pairs (5 against 3): ahead on two
seeds, level on the third, within the noise. Seed 0's loop picked round 0's model by dev (step 1,200 of the
1,600), seeds 1 and 2 round 2's. Again with constrained action decoding on (``LearnerConfig.constrained_actions``;
2026-12-07, seed 0's loop arm read back from the clean-clone ``make run``): test 0.500 / 0.500 against 0.494 /
0.481, dev 0.594 / 0.556 against 0.556 / 0.581, paired +0.012 [-0.022, +0.053] over 128 pairs (the loop alone
solved 3, SFT-only alone 4): both arms lifted by the constraint, still level. SFT-only took 9.5 / 9.7 min, the
loop 12.4 / 14.3 min. Again on a slower machine (2026-12-08, seed 0, dates held to their pattern; the loop arm read
back from the clean-clone ``make run``): test 0.531 against 0.525, dev 0.625 against 0.613, paired +0.006 [-0.069,
+0.069] over 64 pairs (the loop alone solved 6, SFT-only alone 2): level. SFT-only took 12.4 min, the loop 17.5.

    .venv/bin/python bench/flywheel_ablation.py [--seeds 0 1 2] [--rounds 3] [--algorithm sft|rl|mixed] [--out DIR]
"""

# ruff: noqa: E402  (HF_HUB_OFFLINE is set before transformers and trl are imported)
from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import mean
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rich.console import Console
from rich.table import Table

from consumers.dev_evaluator.handler import PairedResult, compare_paired
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


@dataclass(frozen=True)
class Arm:
    """One arm on one seed: its report, its test episodes and its wall time (None: read back without one)."""

    name: str
    seed: int
    report: dict
    test: dict
    wall_time_s: float | None


ARM_FILE = "arm.json"
"""Written into an arm's folder once it has finished (its wall time): ``--resume`` reads such an arm back."""


def read_arm(name: str, seed: int, folder: Path) -> Arm | None:
    """A finished arm from its folder (``report.json``, ``test_episodes.json``); None when it did not finish."""
    report, test, arm = folder / "report.json", folder / "test_episodes.json", folder / ARM_FILE
    if not report.is_file():
        return None
    wall = json.loads(arm.read_text())["wall_time_s"] if arm.is_file() else None
    episodes = json.loads(test.read_text()) if test.is_file() else {"episodes": []}
    return Arm(name, seed, json.loads(report.read_text()), episodes, wall)


def run_seed(seed: int, loop: LoopConfig, root: Path, console: Console, resume: bool = False) -> list[Arm]:
    """Both arms on ``seed`` (run ids ``<arm>-s<seed>``), the SFT-only arm first. With ``resume``, an arm that
    finished in ``root`` before is read back; one that was interrupted starts again from an empty folder."""
    seeded = loop.model_copy(update={"seed": seed})
    arms = []
    for name, config in (("sft-only", sft_only(seeded)), ("loop", seeded)):
        run_id = f"{name}-s{seed}"
        folder = root / run_id
        done = read_arm(name, seed, folder) if resume else None
        if done is not None:
            console.print(f"arm {run_id}: read back from {folder}")
            arms.append(done)
            continue
        if folder.exists():
            shutil.rmtree(folder)  # an interrupted arm's bus, blobs and registry: it runs again from scratch
        result = run_arm(run_id, config, root, console)
        (folder / ARM_FILE).write_text(json.dumps({"wall_time_s": result.wall_time_s}))
        arm = read_arm(name, seed, folder)
        if arm is None:
            raise RuntimeError(f"arm {run_id} wrote no report.json in {folder}")
        arms.append(arm)
    return arms


def paired_test(arms: list[Arm]) -> PairedResult | None:
    """loop - sft-only on test over every (seed, test task) pair, with the dev evaluator's paired bootstrap."""
    solved: dict[str, dict[str, bool]] = {"sft-only": {}, "loop": {}}
    category: dict[str, str] = {}
    for arm in arms:
        for row in arm.test["episodes"]:
            key = f"s{arm.seed}/{row['task_id']}"
            solved[arm.name][key] = row["outcome"] == "success"
            category[key] = row["category"]
    seeds = sorted({arm.seed for arm in arms})
    return compare_paired(solved["sft-only"], solved["loop"], category, seed=f"ablation/{seeds}")


def print_arms(arms: list[Arm], console: Console) -> None:
    table = Table(title="SFT on the demonstrations only vs the closed loop (same seeds, same optimiser steps)")
    for column in ("arm", "seed", "split"):
        table.add_column(column)
    for column in ("overall", *CATEGORIES):
        table.add_column(column, justify="right")
    table.add_column("wall", justify="right")
    for arm in arms:
        for split in ("dev", "test"):
            scores = _scores(arm.report, split)
            wall = f"{arm.wall_time_s / 60:.1f} min" if split == "dev" and arm.wall_time_s is not None else ""
            cells = (f"{scores.get(c, 0.0):.3f}" for c in ("overall", *CATEGORIES))
            table.add_row(arm.name, str(arm.seed), split, *cells, wall)
    console.print(table)
    for arm in arms:
        if arm.name != "loop":
            continue
        for r in arm.report["rounds"]:
            console.print(
                f"loop seed {arm.seed} round {r['round']}: dev {r.get('dev_overall') or 0:.3f}, "
                f"admitted_self {r.get('admitted_self', 0)}, train_examples_self {r.get('train_examples_self', 0)}, "
                f"rl_steps {r.get('rl_steps', 0)}, care_schedule {r.get('care_schedule')}"
            )


def summary(arms: list[Arm], paired: PairedResult | None) -> dict[str, Any]:
    """Each arm's test and dev Overall per seed and their means, and the paired test difference ``paired``."""
    out: dict[str, Any] = {}
    for name in ("sft-only", "loop"):
        per_seed = {
            a.seed: {split: _scores(a.report, split) for split in ("dev", "test")} for a in arms if a.name == name
        }
        tests = [scores["test"]["overall"] for scores in per_seed.values()]
        devs = [scores["dev"]["overall"] for scores in per_seed.values()]
        out[name] = {
            "seeds": list(per_seed),
            "test": tests,
            "dev": devs,
            "test_mean": mean(tests),
            "dev_mean": mean(devs),
            "per_seed": {str(seed): scores for seed, scores in per_seed.items()},
        }
    out["paired_test"] = None if paired is None else asdict(paired)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="quick", help="the loop's profile (quick|full)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="draw seeds, both arms on each (default 0)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of the loop arm (default: the profile's)")
    parser.add_argument("--algorithm", choices=("sft", "rl", "mixed"), default=None)
    parser.add_argument("--first-rollouts", type=int, default=None, help="the cold start's demonstration budget")
    parser.add_argument("--rollouts", type=int, default=None, help="the loop's rollouts per later round")
    parser.add_argument("--sft-steps", type=int, default=None, help="the loop's cold-start SFT steps")
    parser.add_argument("--continued-steps", type=int, default=None, help="the loop's SFT steps in later rounds")
    parser.add_argument("--dev-per-category", type=int, default=None, help="dev and test tasks per category")
    parser.add_argument(
        "--resume", action="store_true", help="read back the arms that finished in --out before; run the rest"
    )
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
    console.print(f"same budget: {loop_steps(loop)} optimiser steps per arm; seeds {args.seeds}; out {args.out}")
    arms = [arm for seed in args.seeds for arm in run_seed(seed, loop, args.out, console, args.resume)]
    print_arms(arms, console)
    paired = paired_test(arms)
    result = summary(arms, paired)
    for name in ("sft-only", "loop"):
        figures = result[name]
        tests = ", ".join(f"{t:.3f}" for t in figures["test"])
        console.print(
            f"{name}: test Overall mean {figures['test_mean']:.3f} ({tests}), dev mean {figures['dev_mean']:.3f}"
        )
    if paired is not None:
        console.print(
            f"[bold]test Overall, loop - sft-only: {paired.delta:+.3f} [{paired.low:+.3f}, {paired.high:+.3f}] over "
            f"{paired.tasks} (seed, task) pairs; the loop alone solved {paired.wins}, SFT-only alone {paired.losses}[/]"
        )
    (args.out / "ablation.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
