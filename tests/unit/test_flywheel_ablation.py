"""``bench/flywheel_ablation.py``'s verdict over several seeds: each arm's mean, and the paired test difference over
every (seed, test task) pair."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from bus_schemas.events.training import overall_score

pytestmark = pytest.mark.unit

BENCH = Path(__file__).resolve().parents[2] / "bench" / "flywheel_ablation.py"


@pytest.fixture(scope="module")
def ablation():
    spec = importlib.util.spec_from_file_location("flywheel_ablation", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass resolves annotations through its module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


TASKS = [("tu.a/t0", "tool_use"), ("tu.a/t1", "tool_use"), ("mem.b/t0", "memory"), ("sk.c/t0", "skills")]
TASKS += [("sa.d/t0", "sub_agent")]


def _arm(ablation, name: str, seed: int, solved: set[str], dev: float):  # noqa: ANN001
    episodes = [{"task_id": t, "category": c, "outcome": "success" if t in solved else "failure"} for t, c in TASKS]
    rates = {}
    for category in ("tool_use", "memory", "skills", "sub_agent"):
        mine = [e["outcome"] == "success" for e in episodes if e["category"] == category]
        rates[category] = sum(mine) / len(mine)
    rounds = [
        {"round": 0, "dev_overall": dev / 2},
        {"round": 1, "dev_overall": dev, "test_overall": overall_score(rates)},
    ]
    return ablation.Arm(name, seed, {"rounds": rounds}, {"episodes": episodes}, 60.0)


def test_the_paired_test_difference_pairs_each_seeds_tasks_and_the_means_average_the_seeds(ablation):
    arms = [
        _arm(ablation, "sft-only", 0, {"tu.a/t0", "mem.b/t0"}, 0.2),
        _arm(ablation, "loop", 0, {"tu.a/t0", "tu.a/t1"}, 0.3),
        _arm(ablation, "sft-only", 1, {"tu.a/t0"}, 0.1),
        _arm(ablation, "loop", 1, {"tu.a/t0", "sk.c/t0", "sa.d/t0"}, 0.4),
    ]
    paired = ablation.paired_test(arms)
    assert paired is not None and paired.tasks == 2 * len(TASKS)  # the same task on two seeds: two pairs
    assert (paired.wins, paired.losses) == (3, 1)  # tu.a/t1, sk.c/t0, sa.d/t0 won; mem.b/t0 lost
    # over the pooled pairs: tool_use 2/4 -> 3/4, memory 1/2 -> 0/2, skills 0/2 -> 1/2, sub_agent 0/2 -> 1/2
    before = overall_score({"tool_use": 0.5, "memory": 0.5, "skills": 0.0, "sub_agent": 0.0})
    after = overall_score({"tool_use": 0.75, "memory": 0.0, "skills": 0.5, "sub_agent": 0.5})
    assert paired.delta == pytest.approx(after - before)
    assert paired.low <= paired.delta <= paired.high and paired.low < paired.high
    result = ablation.summary(arms, paired)
    tests = [a.report["rounds"][-1]["test_overall"] for a in arms]
    assert result["sft-only"]["test"] == [tests[0], tests[2]] and result["loop"]["test"] == [tests[1], tests[3]]
    assert result["loop"]["test_mean"] == pytest.approx((tests[1] + tests[3]) / 2)
    assert result["sft-only"]["dev_mean"] == pytest.approx(0.15)  # each arm's best dev round, averaged
    assert result["paired_test"]["delta"] == pytest.approx(paired.delta)


def test_resume_reads_finished_arms_back_and_runs_an_interrupted_one_from_scratch(ablation, tmp_path, monkeypatch):
    import json

    from rich.console import Console

    from infra.loop.config import LoopConfig

    finished = _arm(ablation, "sft-only", 3, {"tu.a/t0"}, 0.2)
    (tmp_path / "sft-only-s3").mkdir()
    (tmp_path / "sft-only-s3" / "report.json").write_text(json.dumps(finished.report))
    (tmp_path / "sft-only-s3" / "test_episodes.json").write_text(json.dumps(finished.test))
    (tmp_path / "sft-only-s3" / ablation.ARM_FILE).write_text(json.dumps({"wall_time_s": 61.0}))
    (tmp_path / "loop-s3").mkdir()
    (tmp_path / "loop-s3" / "bus.db").write_text("half a run")  # interrupted: no report.json
    ran = []

    def run_arm(name, config, root, console):  # noqa: ANN001, ANN202
        assert not (root / name / "bus.db").exists()  # the interrupted arm's state is gone
        ran.append((name, config.seed, config.rounds))
        (root / name).mkdir()
        (root / name / "report.json").write_text(json.dumps(_arm(ablation, "loop", 3, set(), 0.1).report))
        return type("Result", (), {"wall_time_s": 99.0})()

    monkeypatch.setattr(ablation, "run_arm", run_arm)
    arms = ablation.run_seed(3, LoopConfig(), tmp_path, Console(quiet=True), resume=True)
    assert ran == [("loop-s3", 3, LoopConfig().rounds)]
    assert [(a.name, a.seed, a.wall_time_s) for a in arms] == [("sft-only", 3, 61.0), ("loop", 3, 99.0)]
    assert arms[0].test == finished.test and arms[1].test == {"episodes": []}
    assert json.loads((tmp_path / "loop-s3" / ablation.ARM_FILE).read_text()) == {"wall_time_s": 99.0}
