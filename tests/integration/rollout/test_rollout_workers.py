"""Rollout workers on the embedded bus and on real Kafka: complete ordered episodes, load split, crash recovery."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import pytest
from scripted_requests import scripted_request

from bus_schemas.envelope import Event, Producer
from bus_schemas.events.episodes import EpisodeEnded, EpisodeStarted
from bus_schemas.events.rollouts import RolloutRequested
from bus_schemas.events.tasks import TaskSpecified
from infra.bootstrap import open_bus
from infra.events import ensure_topics, from_record, publish
from producers.rollout.ids import episode_id_for
from producers.tasks import build_task_suite

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[3]
SCHEDULER = Producer(service="test-scheduler", version="0")
EMBEDDED_SESSION_TIMEOUT_S = 1.5
KAFKA_SESSION_TIMEOUT_S = 6.0


@pytest.fixture(params=["embedded", "kafka"])
def urls(request, tmp_path) -> tuple[str, str]:
    if request.param == "embedded":
        return (
            f"sqlite:///{tmp_path}/bus.db?session_timeout_s={EMBEDDED_SESSION_TIMEOUT_S}",
            f"file:///{tmp_path}/blobs",
        )
    stack = request.getfixturevalue("real_stack")
    namespace = f"test-{uuid.uuid4().hex[:10]}"
    bus = f"kafka://{stack.host}:{stack.kafka_port}?session_timeout_s={KAFKA_SESSION_TIMEOUT_S}&namespace={namespace}"
    return bus, f"s3://flywheel-blobs?endpoint={stack.host}:{stack.s3_port}"


def _tasks(n: int) -> list[TaskSpecified]:
    suite = build_task_suite("rollout-test")
    by_category: dict[str, list[TaskSpecified]] = defaultdict(list)
    for task in suite:
        by_category[task.category].append(task)
    mixed = [t for group in zip(*by_category.values(), strict=False) for t in group]  # every category, interleaved
    return mixed[:n]


def _request(task: TaskSpecified, group_size: int = 1) -> RolloutRequested:
    return scripted_request(task, run_id="rollout-test", producer=SCHEDULER, round=1, group_size=group_size)


def _submit(bus_url: str, tasks: list[TaskSpecified], requests: list[RolloutRequested]) -> None:
    bus = open_bus(bus_url)
    ensure_topics(bus)
    publish(bus, *tasks)
    publish(bus, *requests)
    bus.close()


def _worker(urls: tuple[str, str], tmp: Path, name: str, delay_s: float, idle_exit_s: float) -> subprocess.Popen:
    args = [*urls, str(tmp / "state"), name, str(delay_s), str(idle_exit_s), str(tmp / f"{name}.json")]
    script = Path(__file__).with_name("worker_proc.py")
    return subprocess.Popen([sys.executable, str(script), *args], cwd=REPO, env={"PYTHONPATH": str(REPO)})


def _episodes(bus_url: str) -> dict[str, list[Event]]:
    bus = open_bus(bus_url)
    by_episode: dict[str, list[Event]] = defaultdict(list)
    for record in bus.replay("episodes"):
        event = from_record(record)
        by_episode[event.episode_id].append(event)  # type: ignore[index]
    bus.close()
    return by_episode


def _assert_complete(events: list[Event]) -> None:
    """One start first, one end last, steps in order, each event caused by the one before it."""
    assert isinstance(events[0], EpisodeStarted) and isinstance(events[-1], EpisodeEnded)
    assert sum(isinstance(e, (EpisodeStarted, EpisodeEnded)) for e in events) == 2
    steps = [e.step for e in events[1:-1]]
    assert steps == sorted(steps)
    assert all(b.causation_id == a.event_id for a, b in pairwise(events))


def test_two_workers_split_n_requests_into_n_complete_ordered_episodes(urls, tmp_path) -> None:
    tasks = _tasks(12)
    requests = [_request(t, group_size=2 if i % 4 == 0 else 1) for i, t in enumerate(tasks)]
    _submit(urls[0], tasks, requests)
    workers = [_worker(urls, tmp_path, f"w{i}", delay_s=0.05, idle_exit_s=12) for i in range(2)]
    assert [w.wait(timeout=240) for w in workers] == [0, 0]

    everything = _episodes(urls[0])
    # The reference delegates some templates to a sub-agent: those child episodes hang off their parent's.
    episodes = {k: v for k, v in everything.items() if v[0].parent_episode_id is None}  # type: ignore[attr-defined]
    children = {k: v for k, v in everything.items() if k not in episodes}
    expected = {episode_id_for(r, m, 0) for r in requests for m in range(r.group_size)}
    assert set(episodes) == expected
    assert {v[0].parent_episode_id for v in children.values()} <= expected  # type: ignore[attr-defined]
    for events in episodes.values():
        _assert_complete(events)
        assert events[-1].reason == "finished"  # type: ignore[attr-defined]
        assert events[0].trust_level == "exact" and events[0].backend == "sandbox"  # type: ignore[attr-defined]
    groups = [{episodes[episode_id_for(r, m, 0)][0].group_id for m in range(2)} for r in requests if r.group_size == 2]
    assert all(len(g) == 1 and None not in g for g in groups)
    handled = [json.loads((tmp_path / f"w{i}.json").read_text())["requests"] for i in range(2)]
    assert sum(handled) >= len(requests) and min(handled) >= 1  # a rebalance may hand a finished request on


def test_a_worker_killed_mid_episode_leaves_one_abandoned_attempt_and_one_complete_rerun(urls, tmp_path) -> None:
    task = _tasks(5)[4]
    request = _request(task)
    _submit(urls[0], [task], [request])
    # 3 s a step: the episode's remaining steps take far longer than one poll below (each opens a client and
    # replays the topic, seconds on a loaded machine); at 0.5 s a step a slow poll saw the episode already ended
    victim = _worker(urls, tmp_path, "victim", delay_s=3.0, idle_exit_s=60)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(_episodes(urls[0]).get(request.episode_id, [])) < 3:
        time.sleep(0.2)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    partial = _episodes(urls[0])[request.episode_id]
    assert len(partial) >= 3 and not any(isinstance(e, EpisodeEnded) for e in partial)

    rescuer = _worker(urls, tmp_path, "rescuer", delay_s=0.0, idle_exit_s=KAFKA_SESSION_TIMEOUT_S + 8)
    assert rescuer.wait(timeout=180) == 0

    episodes = _episodes(urls[0])
    rerun_id = episode_id_for(request, 0, 1)
    assert set(episodes) == {request.episode_id, rerun_id}
    broken, rerun = episodes[request.episode_id], episodes[rerun_id]
    _assert_complete(broken[:-1] + [broken[-1].model_copy(update={"causation_id": broken[-2].event_id})])
    assert broken[-1].reason == "abandoned" and broken[-1].attempt == 0  # type: ignore[attr-defined]
    _assert_complete(rerun)
    assert rerun[-1].reason == "finished" and {e.attempt for e in rerun} == {1}  # type: ignore[attr-defined]
    stats = json.loads((tmp_path / "rescuer.json").read_text())
    assert stats["abandoned"] == 1 and stats["episodes"] == 1
