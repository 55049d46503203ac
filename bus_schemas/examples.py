"""One realistic, deterministic example of every event: the source of the golden files, and handy in tests.

Regenerate the golden files after an intended wire change with ``python -m bus_schemas.examples --write``
and review the diff: it is exactly the wire change.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bus_schemas.actions import StateChange, ToolCall, ToolError
from bus_schemas.blob_ref import BlobRef
from bus_schemas.codec import encode
from bus_schemas.envelope import Event, Producer
from bus_schemas.events import (
    ActionRejected,
    ActionTaken,
    AnswerCriterion,
    Budgets,
    CallAnyCriterion,
    CallStep,
    CategoryScore,
    ContextBuilt,
    CriterionResult,
    DeadLettered,
    DevSetEvaluated,
    EpisodeEnded,
    EpisodeStarted,
    EpisodeVerified,
    FailureDiagnosed,
    HarnessRevisionDecided,
    HarnessRevisionProposed,
    HarnessRevisionSkipped,
    HarnessVersionPublished,
    InitialConditions,
    MemoryFact,
    ModelServed,
    ModelVersionRegistered,
    NoCollateralCriterion,
    ObservationReturned,
    Provenance,
    ReviewDecided,
    ReviewRequested,
    RewardScheduleSelected,
    RolloutRequested,
    RoundCompleted,
    RoundStarted,
    SamplingPlanUpdated,
    StateCriterion,
    TaskGenerationRequested,
    TaskRetired,
    TaskSource,
    TaskSpecified,
    TrainingRequested,
    TrainingRunCompleted,
    TrainingRunStarted,
    TrajectoryAdmitted,
    TrajectoryQuarantined,
    TrajectoryRejected,
)

GOLDEN_DIR = Path(__file__).parent / "golden"

_AT = datetime(2026, 1, 15, 10, 0, 0, tzinfo=UTC)
_RUN = "run-0001"
_TASK = "calendar-invite-0042"
_EPISODE = "ep-0001"


def _blob(digit: str, size: int, media_type: str = "application/json") -> BlobRef:
    return BlobRef(sha256=digit * 64, size=size, media_type=media_type)


def _envelope(n: int, service: str, **correlation: Any) -> dict[str, Any]:
    """Fixed ids and time, so the examples (and golden bytes) never change by themselves."""
    return {
        "event_id": f"0194a1b2-c3d4-7e5f-8a9b-{n:012x}",
        "occurred_at": _AT,
        "producer": Producer(service=service, version="0.1.0"),
        "run_id": _RUN,
        "round": 1,
        **correlation,
    }


def _episode(n: int, service: str = "rollout-worker") -> dict[str, Any]:
    return _envelope(n, service, task_id=_TASK, episode_id=_EPISODE, attempt=0, causation_id=_event_id(n - 1))


def _event_id(n: int) -> str:
    return f"0194a1b2-c3d4-7e5f-8a9b-{n:012x}"


_PROVENANCE = Provenance(
    task_source=TaskSource(kind="template", template_id="calendar.invite", instance_key="k42"),
    backend="sandbox",
    policy_version="planner:3",
    harness_version="harness:2",
)
_BUDGETS = Budgets(max_steps=20, max_tokens=32_000, max_tool_calls=15, max_wall_s=120.0)
_CURATION: dict[str, Any] = {
    "reasons": ["verified success"],
    "category": "tool_use",
    "tags": ["tool_routing"],
    "provenance": _PROVENANCE,
}


def build_examples() -> dict[str, Event]:
    """Event type -> a valid example of it."""
    events: list[Event] = [
        TaskSpecified(
            **_envelope(1, "task-constructor", task_id=_TASK),
            goal="Invite Bob to Friday's design review and tell me the room.",
            apps=["calendar", "contacts"],
            tools=["calendar.search", "calendar.update", "contacts.search"],
            initial_conditions=InitialConditions(
                seed=42,
                fixtures={"calendar": {"events": [{"title": "Design review", "day": "friday", "room": "B2"}]}},
                memories=[MemoryFact(content="Bob means Bob Lee from design", tags=["contacts"])],
            ),
            category="tool_use",
            tags=["tool_routing", "argument_grounding", "verified_completion"],
            difficulty=2,
            split="train",
            backend="sandbox",
            criteria=[
                StateCriterion(
                    id="invited",
                    description="Bob Lee is an attendee of the design review",
                    predicate="calendar.attendee_of",
                    params={"event_title": "Design review", "contact": "Bob Lee"},
                ),
                AnswerCriterion(id="room", description="The answer names the room", expected=["B2"], match="contains"),
                CallAnyCriterion(
                    id="looked-up-room",
                    description="The room was looked up, not guessed",
                    options=[
                        CallStep(tool="calendar.search", where={"title__norm": "Design review"}),
                        CallStep(tool="calendar.get", where={"id": "ev_1"}),
                    ],
                ),
                NoCollateralCriterion(
                    id="nothing-else", description="Only that event changed", allowed_paths=["/calendar/events"]
                ),
            ],
            source=TaskSource(kind="template", template_id="calendar.invite", instance_key="k42"),
            skills=["calendar-basics"],
            budgets=_BUDGETS,
        ),
        TaskRetired(**_envelope(2, "task-constructor", task_id=_TASK), reason="fixture leaks the answer"),
        RolloutRequested(
            **_envelope(3, "round-controller", task_id=_TASK, episode_id=_EPISODE, attempt=0),
            policy_version="planner:3",
            harness_version="harness:2",
            backend="sandbox",
            seed=7,
            budgets=_BUDGETS,
            group_id="grp-0001",
            group_size=4,
            temperature=1.0,
        ),
        EpisodeStarted(
            **_episode(4),
            backend="sandbox",
            trust_level="exact",
            policy_version="planner:3",
            harness_version="harness:2",
            seed=7,
            budgets=_BUDGETS,
            group_id="grp-0001",
        ),
        ContextBuilt(
            **_episode(5),
            step=0,
            context=_blob("a", 18_342, "text/plain"),
            token_count=4_210,
            skills_offered=["calendar-basics"],
            memories_recalled=1,
        ),
        ActionTaken(
            **_episode(6),
            step=0,
            action=ToolCall(name="calendar.search", args={"title": "Design review", "day": "friday"}),
            raw_output=_blob("b", 512, "text/plain"),
            input_tokens=4_210,
            output_tokens=38,
            thinking_tokens=120,
            sampled=_blob("f", 2_048, "application/vnd.flywheel.sampled-tokens+json"),
        ),
        ActionRejected(
            **_episode(40),
            step=1,
            raw_output=_blob("e", 64, "text/plain; charset=utf-8"),
            error=ToolError(code="parse_error", message="no <action> block found in the output"),
            input_tokens=4_380,
            output_tokens=22,
        ),
        ObservationReturned(
            **_episode(7),
            step=0,
            result={"events": [{"id": "ev-9", "title": "Design review", "room": "B2"}]},
            changes=[StateChange(path="/calendar/events/ev-9/attendees", op="changed", before=[], after=["Bob Lee"])],
            flags=["read_only"],
        ),
        EpisodeEnded(
            **_episode(8),
            reason="finished",
            steps=3,
            input_tokens=12_840,
            output_tokens=140,
            thinking_tokens=360,
            tool_calls=2,
            wall_time_s=4.25,
            cost_estimate_usd=0.0031,
            answer="Invited Bob Lee; the review is in room B2.",
            final_state=_blob("c", 2_048),
        ),
        EpisodeVerified(
            **_episode(9, "verifier"),
            outcome="success",
            score=1.0,
            criteria=[
                CriterionResult(criterion_id="invited", passed=True, evidence=[_blob("c", 2_048)]),
                CriterionResult(criterion_id="room", passed=True, detail="answer contains 'B2'"),
                CriterionResult(criterion_id="nothing-else", passed=True),
            ],
            verifier_version="verifier:1",
        ),
        TrajectoryAdmitted(
            **_episode(10, "curator"), **_CURATION, curator_version="curator:1", trajectory=_blob("d", 40_960)
        ),
        TrajectoryRejected(
            **_episode(11, "curator"),
            **{**_CURATION, "reasons": ["verifier failed: criterion 'room'"]},
            curator_version="curator:1",
        ),
        TrajectoryQuarantined(
            **_episode(12, "curator"),
            **{**_CURATION, "reasons": ["simulated backend, verifier low confidence"]},
            curator_version="curator:1",
        ),
        ReviewRequested(**_episode(13, "curator"), reasons=["simulated backend"], evidence=[_blob("d", 40_960)]),
        ReviewDecided(
            **_episode(14, "review-ui"),
            decision="correct",
            reviewer="alice",
            note="last step should confirm before sending",
            corrected_trajectory=_blob("e", 41_002),
        ),
        FailureDiagnosed(
            **_episode(15, "diagnoser"),
            attribution="argument_grounding",
            secondary=["recovery"],
            step=1,
            explanation="Invited 'Bob Smith' although memory says Bob means Bob Lee.",
            evidence=[_blob("b", 512, "text/plain")],
            confidence=0.8,
            diagnoser_version="diagnoser:1",
        ),
        SamplingPlanUpdated(
            **_envelope(16, "reweighter"),
            plan_id="plan-0002",
            category_weights={"tool_use": 0.4, "memory": 0.3, "skills": 0.2, "sub_agent": 0.1},
            tag_weights={"argument_grounding": 2.0},
            task_weights={_TASK: 1.5},
            rationale="argument grounding failures doubled in round 1",
            reweighter_version="reweighter:1",
        ),
        TaskGenerationRequested(
            **_envelope(17, "reweighter"),
            request_id="gen-0001",
            capability="memory",
            tags=["state_tracking"],
            count=50,
            difficulty=2,
            seed_task_ids=[_TASK],
            rationale="memory success is 0.31",
        ),
        TrainingRequested(
            **_envelope(28, "round-controller", round=2),
            model_name="planner",
            algorithm="rl",
            base_model_version="3",
            admitted_trajectories=640,
            source_offsets={"curation/0": 1_200},
        ),
        TrainingRunStarted(
            **_envelope(18, "learner"),
            model_name="planner",
            training_run_id="train-0004",
            algorithm="rl",
            base_model_version="3",
            dataset=_blob("f", 1_024),
            source_offsets={"curation/0": 1_200, "verdicts/0": 3_400},
            config={"lr": 1e-6, "group_size": 8},
        ),
        TrainingRunCompleted(
            **_envelope(19, "learner"),
            model_name="planner",
            training_run_id="train-0004",
            status="succeeded",
            checkpoint=_blob("1", 98_304_000, "application/x-safetensors"),
            metrics={"loss": 0.42, "reward_mean": 0.61},
            steps=200,
            wall_time_s=1_830.5,
        ),
        ModelVersionRegistered(
            **_envelope(20, "learner"),
            model_name="planner",
            model_version="4",
            checkpoint=_blob("1", 98_304_000, "application/x-safetensors"),
            training_run_id="train-0004",
            parent_version="3",
            registry_uri="models:/planner/4",
        ),
        ModelServed(
            **_envelope(60, "model-server"),
            model_name="planner",
            model_version="4",
            alias="production",
            engine="transformers",
            endpoint="http://127.0.0.1:8000/v1",
            served_model_name="planner/4",
            checkpoint_sha256="1" * 64,
            registry_uri="models:/planner/4",
            previous_version="3",
        ),
        DevSetEvaluated(
            **_envelope(21, "evaluator"),
            model_name="planner",
            model_version="4",
            harness_version="harness:2",
            per_category={
                "tool_use": CategoryScore(success_rate=0.5, tasks=100),
                "memory": CategoryScore(success_rate=0.25, tasks=40),
                "skills": CategoryScore(success_rate=0.75, tasks=40),
                "sub_agent": CategoryScore(success_rate=0.5, tasks=20),
            },
            overall=0.5,
            tokens_per_task=13_100.0,
            tool_calls_per_task=3.5,
            cost_per_1k_tasks_usd=3.1,
            external={"bfcl": CategoryScore(success_rate=0.25, tasks=16)},
        ),
        RewardScheduleSelected(
            **_envelope(41, "learner"),
            model_name="planner",
            schedule="cost_aware",
            previous="outcome_only",
            chooser="rules",
            inputs={"train_success": 0.72, "dev_overall": 0.5, "competence/tool_use": 0.8},
            reason="train success 0.72 >= 0.6: add competence-gated cost terms",
        ),
        HarnessRevisionProposed(
            **_envelope(22, "harness-reviser"),
            harness_name="default",
            revision_id="rev-0003",
            base_version="2",
            patch=_blob("2", 740),
            patch_kinds=["add_instruction"],
            summary="Tell the policy to resolve names through memory before contacts.search.",
            targets=["argument_grounding"],
            motivated_by=[_event_id(15)],
        ),
        HarnessRevisionDecided(
            **_envelope(23, "harness-reviewer"),
            harness_name="default",
            revision_id="rev-0003",
            decision="accepted",
            decided_by="auto-ab",
            reason="dev overall +0.04",
            metrics={"dev_overall_delta": 0.04},
        ),
        HarnessRevisionSkipped(
            **_envelope(41, "harness-reviser"),
            harness_name="default",
            base_version="3",
            reason="no failure category with >= 2 diagnoses this round",
        ),
        HarnessVersionPublished(
            **_envelope(24, "harness-service"),
            harness_name="default",
            harness_version="3",
            config=_blob("3", 5_120),
            revision_id="rev-0003",
        ),
        RoundStarted(
            **_envelope(25, "round-controller"),
            policy_version="planner:3",
            harness_version="harness:2",
            planned_rollouts=256,
            sampling_plan_id="plan-0002",
        ),
        RoundCompleted(
            **_envelope(26, "round-controller"),
            episodes=256,
            success_rate=0.47,
            model_version_out="planner:4",
            harness_version_out="harness:3",
            dev_overall=0.5,
            wall_time_s=5_400.0,
        ),
        DeadLettered(
            **_envelope(27, "verifier", causation_id=None),
            original_topic="episodes",
            original_partition=3,
            original_offset=88_123,
            original_key=_EPISODE,
            original_event_type="EpisodeEnded",
            consumer_group="verifier",
            error_type="UnsupportedSchemaVersion",
            error="EpisodeEnded schema_version 9 is not supported",
            attempts=3,
            payload=_blob("4", 812),
        ),
    ]
    return {event.event_type: event for event in events}


def golden_path(event_type: str, version: int | None = None) -> Path:
    """``golden/<EventType>.json`` for the current version, ``golden/<EventType>.v<N>.json`` for an old one."""
    suffix = f".v{version}" if version is not None else ""
    return GOLDEN_DIR / f"{event_type}{suffix}.json"


def write_golden() -> list[Path]:
    """(Re)write the current-version golden files from ``build_examples``; old-version files are never touched."""
    paths = []
    for event_type, event in build_examples().items():
        path = golden_path(event_type)
        path.write_bytes(encode(event) + b"\n")
        paths.append(path)
    return paths


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m bus_schemas.examples --write")
    for written in write_golden():
        print(written)
