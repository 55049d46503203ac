"""A ``flywheel run`` as one MLflow parent run: its tags (run id, adapter URLs without secrets, git commit) and
config at the start, then per-round metrics (``step`` = round) and the report files at the end. The rounds'
training and dev-evaluation runs nest under it (``learner.tracking``), in the model's experiment."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from infra.config import mask_credentials
from infra.loop.config import LoopConfig
from infra.registry.port import Registry
from infra.report.model import RoundRow, RunReport
from learner.tracking import PARENT_ROLE, ROLE_TAG, RUN_TAG

REPO = Path(__file__).resolve().parents[2]
GIT_COMMIT_TAG = "mlflow.source.git.commit"  # MLflow's own tag: the UI shows it as the run's source version
REPORT_FILES = ("report.html", "report.json", "dev.png", "cost.png", "curation.png", "run.json", "test_episodes.json")
REPORT_ARTIFACTS = "report"


def git_commit(repo: Path = REPO) -> str:
    """The checked-out commit of the code that runs (``unknown`` outside a git checkout)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def start_parent_run(registry: Registry, config: LoopConfig, run_id: str, urls: dict[str, str]) -> str:
    """The run's parent run in the model's experiment, tagged so the consumers' runs find it."""
    learner = config.learner
    params: dict[str, object] = {
        **config.round_settings(),
        "rounds": config.rounds,
        "first_round_rollouts": config.first_round_rollouts,
        "rollouts_per_round": config.rollouts_per_round,
        "loop_algorithm": config.algorithm,
        "revise_harness": config.revise_harness,
        "auto_approve": ",".join(config.auto_approve),
        "sft_steps": learner.sft.max_steps,
        "continued_sft_steps": learner.continued_sft.max_steps,
        "dev_per_category": learner.dev_per_category,
        "cold_start_seeds": learner.cold_start_seeds,
        "harness": learner.harness.name,
    }
    tags = {
        RUN_TAG: run_id,
        ROLE_TAG: PARENT_ROLE,
        GIT_COMMIT_TAG: git_commit(),
        **{name: mask_credentials(url) for name, url in urls.items()},
    }
    parent = registry.start_run(learner.model_name, run_name=f"flywheel-{run_id}", params=params, tags=tags)
    registry.log_dict(parent, config.model_dump(mode="json"), "config.json")
    return parent


def round_metrics(row: RoundRow) -> dict[str, float]:
    """What a tracker charts per round: dev Overall and categories, the paired change from the previous round's
    model with its interval, curation, cost per solved task, self share."""
    values: dict[str, float | int | None] = {
        "dev_overall": row.dev_overall,
        **{f"dev_{k}": v for k, v in row.dev_per_category.items()},
        "revision_dev_overall": row.revision_dev_overall,
        **(
            {
                "dev_delta_vs_previous": row.dev_vs_previous["delta"],
                "dev_delta_vs_previous_low": row.dev_vs_previous["interval"][0],
                "dev_delta_vs_previous_high": row.dev_vs_previous["interval"][1],
            }
            if row.dev_vs_previous
            else {}
        ),
        "episodes": row.episodes,
        "solved": row.solved,
        "retry_episodes": row.retry_episodes,
        "retry_solved": row.retry_solved,
        "admitted": row.admitted,
        "admitted_self": row.admitted_self,
        "rejected": row.rejected,
        "quarantined": row.quarantined,
        "tokens_per_solved": row.tokens_per_solved,
        "tool_calls_per_solved": row.tool_calls_per_solved,
        "train_examples": row.train_examples,
        "train_examples_self": row.train_examples_self,
        "self_generated_share": (
            row.train_examples_self / row.train_examples
            if row.train_examples and row.train_examples_self is not None
            else None
        ),
        "test_overall": row.test_overall,
        "rl_steps": row.rl_steps,
        "wall_time_s": row.wall_time_s,
    }
    return {k: float(v) for k, v in values.items() if v is not None}


class ParentRun:
    """The parent run of one flywheel run: per-round metrics logged as rounds complete (a tracker watches them
    grow), each (round, metric) value once, then the report files at the end."""

    def __init__(self, registry: Registry, run_id: str) -> None:
        self.registry, self.run_id = registry, run_id
        self.logged: dict[tuple[int, str], float] = {}
        self.rounds_seen: set[int] = set()
        """Rounds the loop has seen complete (their metrics were logged, or tried)."""

    def log_rounds(self, rows: list[RoundRow]) -> int:
        """Log the metrics of ``rows`` not yet logged with the same value; returns how many values went out."""
        history = []
        for row in rows:
            fresh = {k: v for k, v in round_metrics(row).items() if self.logged.get((row.round, k)) != v}
            if fresh:
                history.append((row.round, fresh))
        if history:
            self.registry.log_metric_history(self.run_id, history)
            self.logged.update({(step, k): v for step, values in history for k, v in values.items()})
        return sum(len(values) for _, values in history)

    def finish(self, report: RunReport, out_dir: Path) -> None:
        """The final per-round figures (the test split's among them), the report files, the run marked finished."""
        self.log_rounds(report.rounds)
        with tempfile.TemporaryDirectory(prefix="flywheel-report-") as tmp:
            for name in REPORT_FILES:
                if (out_dir / name).is_file():
                    shutil.copy2(out_dir / name, Path(tmp) / name)
            self.registry.log_artifacts(self.run_id, Path(tmp), REPORT_ARTIFACTS)
        self.registry.end_run(self.run_id)


def finish_parent_run(registry: Registry, parent: str, report: RunReport, out_dir: Path) -> None:
    """Per-round metrics at ``step`` = round, the report files as artifacts, the run marked finished."""
    ParentRun(registry, parent).finish(report, out_dir)
