"""The round report is folded from events alone and written as JSON, PNG and HTML."""

from __future__ import annotations

import json

import orjson
import pytest

from bus_schemas.envelope import new_event_id
from bus_schemas.events import CategoryScore
from bus_schemas.examples import build_examples
from infra.report import build_report, write_report
from infra.report.write import learned_from_itself

pytestmark = pytest.mark.unit

EX = build_examples()


def _e(kind: str, round_: int, run_id: str = "run-1", **fields):
    return EX[kind].model_copy(update={"event_id": new_event_id(), "run_id": run_id, "round": round_, **fields})


def _dev(round_: int, tool_use: float) -> object:
    per = {
        c: CategoryScore(success_rate=tool_use if c == "tool_use" else 0.0, tasks=10)
        for c in ("tool_use", "memory", "skills", "sub_agent")
    }
    return _e("DevSetEvaluated", round_, per_category=per, overall=0.5 * tool_use)


def _episode(round_: int, episode: str, success: bool, tokens: int, calls: int) -> list:
    ended = _e(
        "EpisodeEnded",
        round_,
        episode_id=episode,
        input_tokens=tokens,
        output_tokens=0,
        thinking_tokens=0,
        tool_calls=calls,
    )
    verdict = (
        EX["EpisodeVerified"]
        if success
        else EX["EpisodeVerified"].model_copy(
            update={
                "outcome": "failure",
                "criteria": [c.model_copy(update={"passed": False}) for c in EX["EpisodeVerified"].criteria],
            }
        )
    )
    return [
        ended,
        verdict.model_copy(
            update={"event_id": new_event_id(), "run_id": "run-1", "round": round_, "episode_id": episode}
        ),
    ]


def test_rounds_fold_dev_scores_costs_curation_and_failures(tmp_path):
    events = [
        _dev(0, 0.0),
        _dev(1, 0.6),
        *_episode(0, "e1", False, 900, 9),
        *_episode(1, "e2", True, 400, 4),
        *_episode(1, "e3", True, 600, 6),
        *_episode(1, "e4", False, 50, 1),
        _e("TrajectoryAdmitted", 1),
        _e("TrajectoryAdmitted", 1),
        _e("TrajectoryRejected", 1),
        _e("TrajectoryQuarantined", 0),
        _e("FailureDiagnosed", 0, attribution="tool_routing"),
        _e("FailureDiagnosed", 1, attribution="recovery"),
        _e("FailureDiagnosed", 1, attribution="recovery"),
        _e("ModelVersionRegistered", 1, model_version="2"),
        _e("DevSetEvaluated", 5, run_id="another-run"),
    ]
    report = build_report("run-1", events, stage_seconds={1: {"training": 12.5}})
    zero, one = report.rounds
    assert [r.round for r in report.rounds] == [0, 1]
    assert (zero.dev_overall, one.dev_overall) == (0.0, 0.3)
    assert one.dev_per_category["tool_use"] == 0.6
    assert (one.episodes, one.solved) == (3, 2)
    assert one.tokens_per_solved == 500 and one.tool_calls_per_solved == 5
    assert zero.tokens_per_solved is None
    assert (one.admitted, one.rejected, one.quarantined, zero.quarantined) == (2, 1, 0, 1)
    assert one.failures == {"recovery": 2} and zero.failures == {"tool_routing": 1}
    assert one.models_registered[0]["model"].endswith("/2")
    assert one.stage_seconds == {"training": 12.5}

    html_path = write_report(report, tmp_path / "runs" / "run-1")
    out = html_path.parent
    assert json.loads((out / "report.json").read_text())["rounds"][1]["dev_overall"] == 0.3
    for png in ("dev.png", "cost.png", "curation.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png in html_path.read_text()


def test_what_a_round_learned_from_itself_and_the_final_test_figure_are_reported(tmp_path):
    def admitted(policy: str, template: str):
        base = EX["TrajectoryAdmitted"]
        source = base.provenance.task_source.model_copy(update={"template_id": template})
        provenance = base.provenance.model_copy(update={"policy_version": policy, "task_source": source})
        return _e("TrajectoryAdmitted", 1, provenance=provenance)

    trained = _e("TrainingRunCompleted", 1, metrics={"train_examples": 900.0, "train_examples_self": 40.0})
    per = {c: CategoryScore(success_rate=0.5, tasks=4) for c in ("tool_use", "memory", "skills", "sub_agent")}
    test = _e("DevSetEvaluated", 1, split="test", per_category=per, overall=0.5, model_version="2")
    events = [
        _dev(1, 0.6),
        admitted("planner/1", "tu.set_alarm"),
        admitted("planner/1", "mem.wake_alarm"),
        admitted("planner/1", "mem.wake_alarm"),
        admitted("scripted:reference", "sa.warmest_city"),
        trained,
        test,
    ]
    report = build_report("run-1", events)
    [row] = report.rounds
    assert (row.admitted, row.admitted_self, row.train_examples, row.train_examples_self) == (4, 3, 900, 40)
    # by template, the reference solver's episode left out, in template order
    assert list(row.admitted_self_templates.items()) == [("mem.wake_alarm", 2), ("tu.set_alarm", 1)]
    assert row.dev_overall == 0.3 and row.test_overall == 0.5  # the test evaluation does not replace dev
    assert row.test_per_category["memory"] == 0.5 and row.test_model_version.endswith("/2")
    page = write_report(report, tmp_path / "run-1").read_text()
    assert "<th>round 1 own admitted</th>" in page
    assert "<tr><td>mem.wake_alarm</td><td></td><td>2</td></tr>" in page
    assert "sa.warmest_city" not in page
    row.dev_per_template = {"tu.set_alarm": {"difficulty": 1, "tasks": 2, "solved": 0}}
    assert learned_from_itself(row) == "mem.wake_alarm 2, tu.set_alarm 1 (dev 0/2)"


def test_each_round_lists_its_revisions_with_their_basis_and_paired_ab(tmp_path):
    from consumers.dev_evaluator.handler import AB_DECIDER

    diagnoses = [_e("FailureDiagnosed", 1, attribution=a) for a in ("invalid_output", "invalid_output", "recovery")]

    def proposed(revision: str, kinds: list[str], motivated: list) -> object:
        return _e(
            "HarnessRevisionProposed",
            1,
            revision_id=revision,
            patch_kinds=kinds,
            motivated_by=[d.event_id for d in motivated],
        )

    def ab(revision: str, decision: str, delta: float) -> object:
        metrics = {
            "parent_overall": 0.25,
            "revision_overall": 0.25 + delta,
            "paired_delta": delta,
            "paired_low": delta - 0.1,
            "paired_high": min(delta + 0.1, 0.2),
            "paired_tasks": 64.0,
            "wins": 1.0,
            "losses": 3.0 if delta < 0 else 0.0,
        }
        return _e(
            "HarnessRevisionDecided", 1, revision_id=revision, decision=decision, decided_by=AB_DECIDER, metrics=metrics
        )

    events = [
        *diagnoses,
        proposed("rev-harm", ["set_tool_selection"], diagnoses[:2]),
        _e("HarnessRevisionDecided", 1, revision_id="rev-harm", decided_by="auto:set_tool_selection"),
        ab("rev-harm", "rejected", -0.125),
        proposed("rev-note", ["set_tool_note"], diagnoses),
        ab("rev-note", "accepted", 0.0),
        proposed("rev-wait", ["add_instruction"], diagnoses[2:]),
    ]
    [row] = build_report("run-1", events).rounds
    harm, note, wait = row.revisions
    assert (harm["revision_id"], harm["patch_kinds"], harm["basis"]) == (
        "rev-harm",
        ["set_tool_selection"],
        {"invalid_output": 2},
    )
    assert (harm["dev_parent"], harm["dev_revision"], harm["paired_delta"], harm["promoted"]) == (
        0.25,
        0.125,
        -0.125,
        False,
    )
    assert harm["paired_interval"] == pytest.approx([-0.225, -0.025]) and (harm["won"], harm["lost"]) == (1, 3)
    assert note["promoted"] and note["paired_delta"] == 0.0 and note["basis"] == {"invalid_output": 2, "recovery": 1}
    assert not wait["promoted"] and wait["paired_delta"] is None and wait["decision"] == "pending"

    assert harm["patch"] is None  # without a blob reader
    patch = {"kind": "set_tool_selection", "tool_top_k": 0}
    blobs = {events[3].patch.sha256: orjson.dumps(patch)}
    read = build_report("run-1", events, read_patch=lambda ref: blobs[ref.sha256]).rounds[0].revisions
    assert read[0]["patch"] == patch
    html_path = write_report(build_report("run-1", events, read_patch=lambda ref: blobs[ref.sha256]), tmp_path)
    written = json.loads((tmp_path / "report.json").read_text())["rounds"][0]["revisions"]
    keys = {"revision_id", "patch_kinds", "basis", "dev_parent", "dev_revision", "paired_delta", "promoted"}
    assert [r["revision_id"] for r in written] == ["rev-harm", "rev-note", "rev-wait"] and keys <= set(written[0])
    page = html_path.read_text()
    assert "Harness revisions" in page and "rev-harm" in page and "-0.125 [-0.225, -0.025]" in page
    assert "not promoted" in page and "set_tool_note" in page and "&quot;tool_top_k&quot;: 0" in page


def test_each_rounds_model_is_compared_with_the_previous_rounds_on_the_same_dev_tasks(tmp_path):
    """Round 1's model solves two dev tasks round 0's did not and loses one: the paired delta counts only those,
    with an interval; test-split tasks, harness evaluations and external suites stay out of it."""
    from consumers.dev_evaluator.handler import group_id

    def task(task_id: str, category: str, split: str = "dev", kind: str = "template") -> object:
        source = EX["TaskSpecified"].source.model_copy(update={"kind": kind, "template_id": f"{category}.tpl"})
        return _e("TaskSpecified", 0, task_id=task_id, category=category, split=split, source=source, difficulty=2)

    def asked(round_: int, policy: str, task_id: str, won: bool, kind: str = "model") -> list:
        episode = f"ep-{round_}-{policy}-{kind}-{task_id}"
        request = _e(
            "RolloutRequested",
            round_,
            task_id=task_id,
            episode_id=episode,
            policy_version=policy,
            group_id=group_id(kind, policy, "tiny-planner/1"),  # type: ignore[arg-type]
        )
        return [request, _episode(round_, episode, won, 10, 1)[1]]

    def evaluated(round_: int, version: str) -> object:
        return _dev(round_, 0.5).model_copy(update={"model_version": version})  # type: ignore[attr-defined]

    dev = {"t1": "tool_use", "t2": "tool_use", "m1": "memory", "m2": "memory"}
    before = {"t1": True, "t2": False, "m1": False, "m2": True}
    after = {"t1": True, "t2": True, "m1": True, "m2": False}
    events = [
        *(task(t, c) for t, c in dev.items()),
        task("x1", "tool_use", split="test"),
        task("ext", "tool_use", kind="external"),
        evaluated(0, "1"),
        evaluated(1, "2"),
        *(e for t, won in before.items() for e in asked(0, "planner/1", t, won)),
        *(e for t, won in after.items() for e in asked(1, "planner/2", t, won)),
        *asked(0, "planner/1", "x1", False),  # the test split: not dev
        *asked(1, "planner/2", "x1", True),
        *asked(0, "planner/1", "ext", False),  # an external suite: not in Overall
        *asked(1, "planner/2", "ext", True),
        *(e for t in dev for e in asked(1, "planner/2", t, True, kind="harness")),  # a revision's evaluation
    ]
    zero, one = build_report("run-1", events).rounds
    assert zero.dev_vs_previous is None
    paired = one.dev_vs_previous
    assert paired is not None and (paired["versus"], paired["tasks"], paired["won"], paired["lost"]) == (
        "planner/1",
        4,
        2,
        1,
    )
    assert paired["delta"] == pytest.approx(0.5 * (1.0 - 0.5) + 0.2 * (0.5 - 0.5))  # Overall weights; memory 1-1
    low, high = paired["interval"]
    assert low <= paired["delta"] <= high and low < high
    # Per template, the same episodes: round 0 solved t1 and m2, round 1 t1, t2 and m1 (test, external and the
    # revision's evaluation stay out)
    assert zero.dev_per_template == {
        "memory.tpl": {"difficulty": 2, "tasks": 2, "solved": 1},
        "tool_use.tpl": {"difficulty": 2, "tasks": 2, "solved": 1},
    }
    assert one.dev_per_template == {
        "memory.tpl": {"difficulty": 2, "tasks": 2, "solved": 1},
        "tool_use.tpl": {"difficulty": 2, "tasks": 2, "solved": 2},
    }
    html_path = write_report(build_report("run-1", events), tmp_path / "runs" / "run-1")
    page = html_path.read_text()
    assert f"{paired['delta']:+.3f} [{low:+.3f}, {high:+.3f}] 2/1" in page
    assert "<tr><td>tool_use.tpl</td><td>2</td><td>1/2</td><td>2/2</td></tr>" in page
    assert json.loads((html_path.parent / "report.json").read_text())["rounds"][1]["dev_vs_previous"]["won"] == 2
