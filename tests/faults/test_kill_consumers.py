"""kill -9 consumer processes at random points while >= 10k events flow.

Two stages of the loop: the episode stage (verifier, diagnoser, curator over recorded episodes) and the round
stage (reweighter, round controller, task constructor over thousands of rounds and generation requests).
A clean in-process run over an embedded copy of the same log gives the reference projections; the chaos run
(each consumer its own `flywheel consume` process, killed and restarted at random, >= 20 kills), on the
embedded log and on the real Kafka broker (FastStream apps, per-partition fenced transactions), must end with
exactly the same outputs: 0 lost, 0 duplicated.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import TaskGenerationRequested
from bus_schemas.topics import (
    TOPIC_CURATION,
    TOPIC_DIAGNOSES,
    TOPIC_ROLLOUTS,
    TOPIC_SAMPLING,
    TOPIC_TASKS,
    TOPIC_VERDICTS,
)
from consumers.common.recording import record_episode
from consumers.registry import build
from consumers.round_controller.handler import start_round
from infra.blobs.filesystem import FileBlobStore
from infra.bootstrap import Ports, open_bus
from infra.events import ensure_topics, from_record, publish_all
from infra.runtime import ConsumerRunner
from producers.tasks import build_task_suite, reference_solver
from producers.tasks.runner import noop_policy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parents[2]
MIN_KILLS = 21
P = Producer(service="test", version="0")


def _episode_stream(blobs) -> list[Event]:
    """The suite's train and dev tasks, each solved and not (distinct action sequences: no duplicates)."""
    tasks = [t for t in build_task_suite("chaos") if t.split in ("train", "dev")]
    events: list[Event] = [*tasks]
    for i, task in enumerate(tasks):
        for j, policy in enumerate((reference_solver, noop_policy)):
            events += record_episode(task, policy, blobs, episode_id=f"ep-{i}-{j}", run_id="chaos")
    return events


def _round_stream(blobs) -> list[Event]:
    """Four runs' task suites and 1,500 rounds each (one rollout planned per round), then 800 requests for new
    tasks under runs of their own (so the rounds' train pools do not depend on when those tasks arrive)."""
    events: list[Event] = []
    for k in range(4):
        events += build_task_suite(f"chaos-{k}")
        events += [start_round(f"chaos-{k}", r, "p0", "h0", 1, P) for r in range(1500)]
    capabilities = ("tool_use", "memory", "skills", "sub_agent")
    events += [
        TaskGenerationRequested(
            producer=P, run_id=f"chaos-gen-{i % 8}", request_id=f"req-{i}", capability=capabilities[i % 4], count=1
        )
        for i in range(800)
    ]
    return events


@dataclass(frozen=True)
class Stage:
    consumers: tuple[str, ...]  # the clean run's order: each reads what the ones before it wrote
    output_topics: tuple[str, ...]
    stream: Callable[[FileBlobStore], list[Event]]


STAGES = {
    "episodes": Stage(
        ("verifier", "diagnoser", "curator"), (TOPIC_VERDICTS, TOPIC_CURATION, TOPIC_DIAGNOSES), _episode_stream
    ),
    "rounds": Stage(
        ("reweighter", "round_controller", "task_constructor"),
        (TOPIC_SAMPLING, TOPIC_ROLLOUTS, TOPIC_TASKS),
        _round_stream,
    ),
}


def _outputs(bus, stage: Stage) -> dict[str, Counter]:
    """Per producing service, a multiset of output fingerprints.

    Everything but what is fresh per run counts: event_id, occurred_at, causation_id and failure_diagnoses (the
    curator and diagnoser react to verdicts and diagnoses, whose ids differ between the clean and the chaos run;
    :func:`_dangling_links` checks the links themselves).
    """
    out: dict[str, Counter] = {name: Counter() for name in stage.consumers}
    for topic in stage.output_topics:
        for record in bus.replay(topic):
            event = from_record(record)
            if event.producer.service not in stage.consumers:
                continue  # an input of the stage, not an output
            body = orjson.dumps(
                event.model_dump(mode="json", exclude={"event_id", "occurred_at", "causation_id", "failure_diagnoses"}),
                option=orjson.OPT_SORT_KEYS,
            )
            out.setdefault(event.producer.service, Counter())[body] += 1
    return out


def _dangling_links(bus) -> list[str]:
    """Curation decisions whose failure_diagnoses are not exactly the FailureDiagnosed of their episode on this log."""
    diagnosed = {}
    for record in bus.replay(TOPIC_DIAGNOSES):
        event = from_record(record)
        diagnosed.setdefault(event.episode_id, set()).add(event.event_id)
    bad = []
    for record in bus.replay(TOPIC_CURATION):
        event = from_record(record)
        links = set(getattr(event, "failure_diagnoses", []))
        if links and not links <= diagnosed.get(event.episode_id, set()):
            bad.append(event.episode_id)
    return bad


def _spawn(name: str, bus_url: str, blobs_url: str, state: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "infra.cli.main",
            "consume",
            name,
            "--bus",
            bus_url,
            "--blobs",
            blobs_url,
            "--registry",
            f"sqlite:///{state}/mlflow.db",
            "--state-dir",
            str(state / name),
        ],
        cwd=REPO,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _stop_all(procs: Iterable[subprocess.Popen]) -> None:
    """SIGTERM every consumer, then SIGKILL what has not exited a minute later: none outlives the test."""
    procs = list(procs)
    for proc in procs:
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(params=["embedded", "kafka"])
def chaos_bus_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the chaos run happens: an embedded log file, or a fresh namespace on the real broker."""
    if request.param == "embedded":
        return f"sqlite:///{tmp_path}/chaos.db?session_timeout_s=2"
    stack = request.getfixturevalue("real_stack")
    return f"kafka://{stack.host}:{stack.kafka_port}?session_timeout_s=6&namespace=chaos-{uuid.uuid4().hex[:10]}"


def test_random_kills_lose_and_duplicate_nothing(tmp_path: Path, chaos_bus_url: str) -> None:
    """The episode stage on both buses (the round stage: test_kill_round_consumers.py, so xdist can run the two
    files on different workers)."""
    run_chaos(tmp_path, chaos_bus_url, "episodes")


def run_chaos(tmp_path: Path, chaos_bus_url: str, stage_name: str) -> None:
    stage = STAGES[stage_name]
    consumers = stage.consumers
    blobs_dir = tmp_path / "blobs"
    blobs = FileBlobStore(blobs_dir)
    stream = stage.stream(blobs)
    clean_db = tmp_path / "clean.db"
    for url in (f"sqlite:///{clean_db}", chaos_bus_url):
        bus = open_bus(url)
        ensure_topics(bus)
        for i in range(0, len(stream), 2000):
            publish_all(bus, stream[i : i + 2000])
        bus.close()
    assert len(stream) >= 10_000

    # the reference: each consumer in process, to completion, over the clean copy
    clean = open_bus(f"sqlite:///{clean_db}")
    for name in consumers:
        runner = ConsumerRunner(build(name), Ports(clean, blobs, None), state_dir=tmp_path / "clean-state")
        runner.run(idle_exit_s=3.0)
        runner.close()
    expected = _outputs(clean, stage)
    clean.close()

    # the chaos run: separate processes, killed at random and restarted
    rng = random.Random(7)
    bus_url = chaos_bus_url
    blobs_url = f"file:///{blobs_dir}"
    state, log = tmp_path / "chaos-state", tmp_path / "consumers.log"
    state.mkdir()
    procs = {name: _spawn(name, bus_url, blobs_url, state, log) for name in consumers}
    kills = 0
    try:
        while kills < MIN_KILLS:
            time.sleep(rng.uniform(1.5, 4.0))
            name = rng.choice(consumers)
            os.killpg(procs[name].pid, signal.SIGKILL)
            procs[name].wait()
            kills += 1
            procs[name] = _spawn(name, bus_url, blobs_url, state, log)
        deadline = time.monotonic() + 600
        check = open_bus(bus_url)
        while time.monotonic() < deadline:
            lag = sum(p.lag for n in consumers for p in check.lag(f"flywheel.{n}", list(build(n).topics)))
            if lag == 0:
                break
            time.sleep(2)
        check.close()
    finally:
        _stop_all(procs.values())

    final = open_bus(bus_url)
    got = _outputs(final, stage)
    dangling = _dangling_links(final)
    final.close()
    processed = sum(sum(c.values()) for c in got.values())
    lost = sum(((expected[n] - got[n]) for n in consumers), Counter())
    duplicated = sum(((got[n] - expected[n]) for n in consumers), Counter())
    print(
        f"\nkill -9 of the {stage_name} stage on {bus_url.split(':')[0]}: kills survived={kills} "
        f"input events={len(stream)} outputs={processed} "
        f"lost={sum(lost.values())} duplicated={sum(duplicated.values())}"
    )
    assert kills >= 20
    assert all(expected[n].total() > 500 for n in consumers), {n: expected[n].total() for n in consumers}
    assert not lost, f"lost outputs: {list(lost)[:3]}"
    assert not duplicated, f"duplicated outputs: {list(duplicated)[:3]}"
    assert not dangling, f"decisions linking diagnoses of another episode: {dangling[:3]}"
