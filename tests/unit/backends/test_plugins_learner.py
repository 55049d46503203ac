"""The learner's in-process episodes (dev evaluation, cold start) make and judge backends through the registry."""

from __future__ import annotations

import hashlib
from importlib import metadata

import pytest
from plugin_echo import EchoBackend
from test_plugins import task

from bus_schemas.actions import Finish, ToolCall
from bus_schemas.blob_ref import BlobRef
from bus_schemas.events import EpisodeStarted
from harness_service.config import HarnessConfig
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import Harness, RunIds
from harness_service.skills.library import SkillLibrary
from learner.episodes import run_judged_episode
from learner.eval.dev import evaluate_dev
from producers.backends import plugins

pytestmark = pytest.mark.unit

ECHO_BACKEND = metadata.EntryPoint(name="echo", value="plugin_echo:EchoBackend", group=plugins.BACKENDS)
ECHO_JUDGE = metadata.EntryPoint(name="echo", value="plugin_echo:judge_echo", group=plugins.JUDGES)


class Blobs:
    def put(self, data: bytes, media_type: str) -> BlobRef:
        return BlobRef(sha256=hashlib.sha256(data).hexdigest(), size=len(data), media_type=media_type)


def script(answer: str) -> ScriptedPolicy:
    return ScriptedPolicy([ToolCall(name="echo.say", args={"text": "hello"}), Finish(answer=answer)], "reference")


def harness(answer: str) -> Harness:
    return Harness(
        config=HarnessConfig(), policy=script(answer), blobs=Blobs(), events=lambda e: None, skills=SkillLibrary.empty()
    )


def test_an_in_process_episode_is_judged_by_its_backends_own_judge(install_plugins) -> None:
    install_plugins(ECHO_BACKEND, ECHO_JUDGE)
    good = run_judged_episode(harness("hello"), task(), EchoBackend(), RunIds(run_id="t"))
    bad = run_judged_episode(harness("bye"), task(), EchoBackend(), RunIds(run_id="t"))
    assert (good.verdict.outcome, bad.verdict.outcome) == ("success", "failure")
    assert bad.verdict.criteria[0].detail == "echo judge: said ['hello'], answered 'bye'"


def test_an_in_process_episode_of_a_backend_without_a_judge_is_an_error(install_plugins) -> None:
    install_plugins(ECHO_BACKEND)
    judged = run_judged_episode(harness("hello"), task(), EchoBackend(), RunIds(run_id="t"))
    assert judged.verdict.outcome == "error" and judged.verdict.score == 0.0
    assert judged.verdict.criteria[0].detail == "no verifier for backend 'echo'"


def test_the_dev_evaluation_runs_each_task_on_the_backend_it_names(install_plugins) -> None:
    install_plugins(ECHO_BACKEND, ECHO_JUDGE)
    published: list = []
    report = evaluate_dev(
        script("hello"),
        [task()],
        config=HarnessConfig(),
        skills=SkillLibrary.empty(),
        blobs=Blobs(),
        publish=published.extend,
        run_id="t",
        model_name="m",
        model_version="1",
    )
    [episode] = report.episodes
    started = next(e for e in episode.events if isinstance(e, EpisodeStarted))
    assert (started.backend, started.trust_level, episode.verdict.outcome) == ("echo", "simulated", "success")
