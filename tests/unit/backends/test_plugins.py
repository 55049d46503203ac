"""Environments as plugins: discovery from the installed metadata, a plugin added at test time, broken plugins."""

from __future__ import annotations

from importlib import metadata

import pytest
from plugin_echo import EchoBackend
from pydantic import ValidationError

from bus_schemas.actions import ToolCall
from bus_schemas.envelope import Producer
from bus_schemas.events import EpisodeEnded, EpisodeStarted, RolloutRequested
from bus_schemas.events.tasks import (
    AnswerCriterion,
    Budgets,
    InitialConditions,
    StateCriterion,
    TaskSource,
    TaskSpecified,
)
from consumers.verifier.handler import judge
from producers.backends import plugins
from producers.backends.base import Backend, Evidence
from producers.backends.llm_sim.backend import LlmSimBackend
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.verify import verify

pytestmark = pytest.mark.unit

P = Producer(service="tests", version="0")


def entry(group: str, name: str, value: str) -> metadata.EntryPoint:
    return metadata.EntryPoint(name=name, value=value, group=group)


ECHO = [
    entry(plugins.BACKENDS, "echo", "plugin_echo:EchoBackend"),
    entry(plugins.JUDGES, "echo", "plugin_echo:judge_echo"),
    entry(plugins.PREDICATES, "echo.said", "plugin_echo:said"),
]
BROKEN = [
    entry(plugins.BACKENDS, "ext", "plugin_broken:Backend"),
    entry(plugins.JUDGES, "ext", "plugin_broken:judge"),
    entry(plugins.PREDICATES, "ext.state", "plugin_broken:state"),
]


def task(backend: str = "echo", **extra) -> TaskSpecified:
    return TaskSpecified(
        producer=P,
        run_id="run-test",
        task_id="task-echo",
        goal="Say hello, then tell me what you said.",
        apps=["echo"],
        tools=["echo.say"],
        initial_conditions=InitialConditions(seed=7),
        category="tool_use",
        tags=["tool_routing"],
        difficulty=1,
        split="train",
        backend=backend,
        criteria=extra.pop("criteria", [AnswerCriterion(id="a", description="answer", expected=["hello"])]),
        source=TaskSource(kind="human"),
        **extra,
    )


def ended(answer: str | None) -> EpisodeEnded:
    return EpisodeEnded(
        producer=P,
        run_id="run-test",
        task_id="task-echo",
        episode_id="ep-1",
        reason="finished",
        answer=answer,
        steps=1,
        input_tokens=0,
        output_tokens=0,
        tool_calls=1,
        wall_time_s=0.0,
    )


def test_discovery_finds_the_builtins_from_the_installed_metadata() -> None:
    plugins.reset()
    assert {"sandbox", "llm_sim", "device"} <= set(plugins.backend_names())
    assert plugins.backend_factory("sandbox") is SandboxBackend and plugins.backend_factory("llm_sim") is LlmSimBackend
    assert plugins.judge("sandbox") is verify and plugins.judge("llm_sim") is verify
    assert plugins.judge("device") is None  # runs, but nothing judges its evidence yet
    assert callable(plugins.predicate("state.exists")) and plugins.predicate("state.nope") is None
    rows = {row.name: row for row in plugins.installed_backends()}
    assert {n: (rows[n].trust, rows[n].judged, rows[n].error) for n in ("sandbox", "llm_sim", "device")} == {
        "sandbox": ("exact", True, None),
        "llm_sim": ("simulated", True, None),
        "device": ("device", False, None),
    }
    assert rows["sandbox"].provider.startswith("planner-flywheel ")
    assert isinstance(plugins.make_backend("sandbox"), Backend)


def test_a_plugin_installed_at_test_time_is_made_judged_by_its_own_judge_and_valid_on_events(install_plugins) -> None:
    install_plugins(*ECHO)
    assert "echo" in plugins.backend_names()
    backend = plugins.make_backend("echo")
    assert isinstance(backend, EchoBackend) and isinstance(backend, Backend)
    backend.reset(task())
    backend.step(ToolCall(name="echo.say", args={"text": "hello"}))
    evidence = backend.evidence()

    good, bad = judge(ended("hello"), task(), "echo", evidence, P), judge(ended("bye"), task(), "echo", evidence, P)
    assert (good.outcome, good.score) == ("success", 1.0)
    assert bad.outcome == "failure" and bad.criteria[0].detail.startswith("echo judge: said ['hello']")
    # the sandbox backend is not echo's judge: the same evidence under another name is judged another way
    assert judge(ended("hello"), task(), "sandbox", evidence, P).criteria[0].detail != good.criteria[0].detail

    started = EpisodeStarted(
        producer=P, run_id="r", task_id="t", episode_id="e", backend=backend.name, trust_level=backend.trust,
        policy_version="p", harness_version="h", seed=1, budgets=Budgets(),
    )  # fmt: skip
    assert started.backend == "echo"


def test_a_plugin_predicate_judges_state_criteria(install_plugins) -> None:
    install_plugins(*ECHO)
    said = StateCriterion(id="s", description="said hello", predicate="echo.said", params={"text": "hello"})
    evidence = Evidence(backend="echo", initial_state={"said": []}, final_state={"said": ["hello"]})
    assert verify(task(criteria=[said]), evidence).outcome is True
    silent = Evidence(backend="echo", initial_state={"said": []}, final_state={"said": []})
    assert verify(task(criteria=[said]), silent).criteria[0].detail == "said []"


def test_a_broken_plugin_gives_an_error_naming_it_and_the_others_still_load(install_plugins) -> None:
    install_plugins(*ECHO, *BROKEN)
    with pytest.raises(plugins.PluginError, match=r"plugin 'ext' failed to load .*plugin_broken:Backend.*ImportError"):
        plugins.make_backend("ext")
    rows = {row.name: row for row in plugins.installed_backends()}
    assert rows["ext"].trust is None and "No module named 'bfcl_eval'" in (rows["ext"].error or "")
    assert (rows["sandbox"].error, rows["echo"].error, rows["echo"].trust) == (None, None, "simulated")
    assert isinstance(plugins.make_backend("sandbox"), SandboxBackend)

    verdict = judge(ended("x"), task("ext"), "ext", Evidence(backend="ext", initial_state={}, final_state={}), P)
    assert verdict.outcome == "error" and "plugin 'ext' failed to load" in verdict.criteria[0].detail

    broken = StateCriterion(id="b", description="broken", predicate="ext.state")
    said = StateCriterion(id="s", description="said", predicate="echo.said", params={"text": "hi"})
    evidence = Evidence(backend="echo", initial_state={"said": []}, final_state={"said": ["hi"]})
    result = verify(task(criteria=[broken, said]), evidence)
    assert [(r.id, r.passed) for r in result.criteria] == [("b", False), ("s", True)]
    assert "plugin 'ext.state' failed to load" in result.criteria[0].detail


def test_a_backend_must_declare_its_registered_name_and_a_known_trust(install_plugins) -> None:
    install_plugins(
        entry(plugins.BACKENDS, "echo", "plugin_echo:Misnamed"),
        entry(plugins.BACKENDS, "untrusted", "plugin_echo:Untrusted"),
    )
    with pytest.raises(plugins.PluginError, match="declares name 'not-echo'"):
        plugins.backend_factory("echo")
    with pytest.raises(plugins.PluginError, match="declares trust 'blind faith'"):
        plugins.backend_factory("untrusted")
    with pytest.raises(plugins.PluginError, match=r"no backend 'nope' is installed \(installed: .*sandbox"):
        plugins.backend_factory("nope")


def test_a_name_two_distributions_claim_is_an_error_for_that_name_only(install_plugins) -> None:
    install_plugins(entry(plugins.BACKENDS, "sandbox", "plugin_echo:EchoBackend"), *ECHO)
    with pytest.raises(plugins.PluginError, match="plugin 'sandbox' is registered twice"):
        plugins.backend_factory("sandbox")
    assert plugins.backend_factory("echo") is EchoBackend


def test_an_external_task_states_only_what_its_environment_has_and_its_own_judge_decides(install_plugins) -> None:
    install_plugins(*ECHO)
    external = TaskSpecified(
        producer=P, run_id="run-test", task_id="task-echo", goal="Say hello, then tell me what you said.",
        category="tool_use", split="dev", backend="echo", source=TaskSource(kind="external"),
        backend_params={"domain": "retail", "user_script": ["hi"]}, observation_chars=30_000,
    )  # fmt: skip
    assert (external.apps, external.tools, external.criteria, external.difficulty) == ([], [], [], 1)
    assert external.initial_conditions == InitialConditions(seed=0)
    backend = plugins.make_backend("echo")
    backend.reset(external)
    backend.step(ToolCall(name="echo.say", args={"text": "hello"}))
    verdict = judge(ended("hello"), external, "echo", backend.evidence(), P)
    assert (verdict.outcome, [c.criterion_id for c in verdict.criteria]) == ("success", ["echo"])
    # the built-in judge judges by criteria only: none is an error, never a success for doing nothing
    unjudged = judge(
        ended("hello"), external.model_copy(update={"backend": "sandbox"}), "sandbox", backend.evidence(), P
    )
    assert unjudged.outcome == "error" and "has no criteria" in unjudged.criteria[0].detail


def test_an_unknown_backend_name_gets_the_no_verifier_verdict() -> None:
    evidence = Evidence(backend="nowhere", initial_state={}, final_state={})
    verdict = judge(ended("hello"), task("nowhere"), "nowhere", evidence, P)
    assert verdict.outcome == "error" and verdict.score == 0.0
    assert verdict.criteria[0].detail == "no verifier for backend 'nowhere'"


@pytest.mark.parametrize("name", ["sandbox", "llm_sim", "device", "echo", "bfcl.multi-turn"])
def test_backend_names_are_open_on_events(name: str) -> None:
    assert task(name).backend == name


@pytest.mark.parametrize("name", ["", "Sandbox", "9lives", "has space", "x" * 65])
def test_a_malformed_backend_name_is_rejected_on_events(name: str) -> None:
    with pytest.raises(ValidationError, match="backend"):
        task(name)
    with pytest.raises(ValidationError, match="backend"):
        RolloutRequested(
            producer=P, run_id="r", task_id="t", episode_id="e", backend=name, policy_version="p",
            harness_version="h", seed=1, budgets=Budgets(),
        )  # fmt: skip


def test_the_rollout_worker_offers_every_installed_backend_without_edits(install_plugins, tmp_path) -> None:
    """A plugin backend (here ``echo``, installed at test time, and ``bfcl`` from this project's metadata) is
    offered by ``flywheel consume rollout-worker``'s pool; a broken one is left out, the others stay."""
    from infra.cli.consume_rollout import WorkerOptions, _pool

    install_plugins(*ECHO, *BROKEN)
    options = WorkerOptions({}, tmp_path, sandbox_cap=2, lease_timeout_s=60.0, stale_after_s=60.0)
    pool = _pool(options, None, None)
    kinds = set(pool.kinds())
    assert {"sandbox", "echo", "bfcl"} <= kinds and not kinds & {"ext", "llm_sim", "device"}
