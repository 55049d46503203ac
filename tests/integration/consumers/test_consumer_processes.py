"""The consumers as OS processes on the embedded log and on Kafka: exactly-once effects under redelivery and crashes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bus_schemas.envelope import Event
from bus_schemas.events import DeadLettered, EpisodeVerified
from bus_schemas.topics import TOPIC_DEAD_LETTERS, TOPIC_EPISODES, TOPIC_VERDICTS
from consumers.common.recording import record_episode
from infra.bus.records import OutgoingRecord
from infra.events import from_record, publish_all
from producers.tasks import build_task_suite, reference_solver
from producers.tasks.runner import noop_policy

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[3]
WORKER = Path(__file__).with_name("worker.py")


def _tasks(n: int):
    return [t for t in build_task_suite("run-test") if t.split == "train"][:n]


def _episodes(ports, tasks, tag: str) -> list[Event]:
    events: list[Event] = []
    for i, task in enumerate(tasks):
        policy = reference_solver if i % 2 == 0 else noop_policy
        events += record_episode(task, policy, ports.blobs, episode_id=f"ep-{tag}-{i}")
    return events


def _read(ports, topic: str) -> list[Event]:
    return [from_record(r) for r in ports.bus.replay(topic)]


def _worker(
    urls, state_dir: Path, mode: str = "run", name: str = "verifier", idle: float | None = None
) -> subprocess.CompletedProcess:
    """Run a consumer process until idle; Kafka needs longer (group join, the dead member's session timeout)."""
    kafka = urls["bus"].startswith("kafka")
    idle = idle or (12 if kafka else 4)
    args = [sys.executable, str(WORKER), name, urls["bus"], urls["blobs"], urls["registry"], str(state_dir), mode]
    done = subprocess.run(
        args, cwd=REPO, capture_output=True, text=True, timeout=240, env={**os.environ, "IDLE_EXIT_S": str(idle)}
    )
    assert f"worker {'FastStreamConsumer' if kafka else '_RunnerWorker'}" in done.stdout, (
        done.stdout + done.stderr[-2000:]
    )
    return done


def _verdicts(ports) -> dict[str, list[EpisodeVerified]]:
    out: dict[str, list[EpisodeVerified]] = {}
    for e in _read(ports, TOPIC_VERDICTS):
        assert isinstance(e, EpisodeVerified)
        out.setdefault(e.episode_id, []).append(e)
    return out


def test_the_same_event_twice_gives_one_verdict(ports, urls, tmp_path):
    tasks = _tasks(2)
    publish_all(ports.bus, [*tasks, *_episodes(ports, tasks, "dup")])
    ended = [r for r in ports.bus.replay(TOPIC_EPISODES) if b"EpisodeEnded" in r.value]
    ports.bus.publish_many([OutgoingRecord(TOPIC_EPISODES, r.value, r.key) for r in ended])  # redelivered copies
    done = _worker(urls, tmp_path / "state")
    assert done.returncode == 0, done.stderr[-2000:]
    verdicts = _verdicts(ports)
    assert sorted(verdicts) == ["ep-dup-0", "ep-dup-1"]
    assert all(len(v) == 1 for v in verdicts.values())
    assert [verdicts["ep-dup-0"][0].outcome, verdicts["ep-dup-1"][0].outcome] == ["success", "failure"]


def test_a_process_killed_before_commit_is_redelivered_without_duplicates(ports, urls, tmp_path):
    tasks = _tasks(4)
    publish_all(ports.bus, [*tasks, *_episodes(ports, tasks, "crash")])
    crashed = _worker(urls, tmp_path / "state", mode="crash")
    assert crashed.returncode == -9 and "dying before commit" in crashed.stdout, crashed.stderr[-2000:]
    assert _verdicts(ports) == {}
    again = _worker(urls, tmp_path / "state", idle=15 if urls["bus"].startswith("kafka") else 5)
    assert again.returncode == 0, again.stderr[-2000:]
    verdicts = _verdicts(ports)
    assert sorted(verdicts) == [f"ep-crash-{i}" for i in range(4)]
    assert all(len(v) == 1 for v in verdicts.values())


def test_poison_goes_to_dead_letters_with_its_error_and_the_consumer_goes_on(ports, urls, tmp_path):
    tasks = _tasks(1)
    orphan = _tasks(2)[1]  # its TaskSpecified is never published: the verifier cannot judge it
    events = _episodes(ports, tasks, "ok") + record_episode(orphan, noop_policy, ports.blobs, episode_id="ep-orphan")
    publish_all(ports.bus, tasks)
    ports.bus.publish(OutgoingRecord(TOPIC_EPISODES, b"{not json", b"ep-garbage"))
    publish_all(ports.bus, events)
    done = _worker(urls, tmp_path / "state")
    assert done.returncode == 0, done.stderr[-2000:]
    letters = [e for e in _read(ports, TOPIC_DEAD_LETTERS) if isinstance(e, DeadLettered)]
    by_type = {d.error_type: d for d in letters}
    assert sorted(by_type) == ["MalformedEvent", "MissingInput"] and len(letters) == 2, letters
    assert orphan.task_id in by_type["MissingInput"].error
    assert by_type["MissingInput"].attempts == 3
    assert ports.blobs.get(by_type["MissingInput"].payload).startswith(b"{")
    assert sorted(_verdicts(ports)) == ["ep-ok-0"]


def test_two_worker_processes_share_the_partitions(ports, urls, tmp_path):
    tasks = _tasks(24)
    publish_all(ports.bus, tasks)
    code = (
        "from infra.cli.consume import consume; "
        "consume('verifier', workers=2, list_=False, "
        f"state_dir=__import__('pathlib').Path({str(tmp_path / 'state')!r}), "
        f"idle_exit={25.0 if urls['bus'].startswith('kafka') else 8.0}, bus={urls['bus']!r}, blobs={urls['blobs']!r}, "
        f"registry={urls['registry']!r})"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    started = "consuming episodes as group flywheel.verifier" + (
        " (FastStream)" if urls["bus"].startswith("kafka") else ""
    )
    while sum(started in line for line in lines) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(10 if urls["bus"].startswith("kafka") else 3)  # both joined and the group rebalanced
    publish_all(ports.bus, _episodes(ports, tasks, "pair"))
    proc.wait(timeout=240)
    reader.join(timeout=10)
    err = "".join(lines)
    assert proc.returncode == 0, err[-3000:]
    handled = [int(n) for n in re.findall(r"stopped: RunStats\(handled=(\d+)", err)]
    # 24 episodes: each one's EpisodeStarted (remembered by the verifier) and EpisodeEnded (judged)
    assert len(handled) == 2 and all(n > 0 for n in handled) and sum(handled) == 48, err[-3000:]
    verdicts = _verdicts(ports)
    assert len(verdicts) == 24 and all(len(v) == 1 for v in verdicts.values())


def test_drained_groups_have_no_lag_even_past_transaction_markers(ports, urls, tmp_path):
    """The curator reads verdicts the verifier wrote in transactions: its lag must still reach 0 when drained."""
    tasks = _tasks(3)
    publish_all(ports.bus, [*tasks, *_episodes(ports, tasks, "lag")])
    for name in ("verifier", "curator"):
        done = _worker(urls, tmp_path / "state", name=name)
        assert done.returncode == 0, done.stderr[-2000:]
    assert len(_verdicts(ports)) == 3
    for name, topics in (("verifier", [TOPIC_EPISODES]), ("curator", ["verdicts", "curation"])):
        lags = ports.bus.lag(f"flywheel.{name}", topics)
        assert sum(lag.lag for lag in lags) == 0, lags


def test_two_curator_replicas_admit_one_copy_of_each_duplicate_pair(ports, urls, tmp_path):
    """Wave two repeats wave one's episodes action for action; with the pairs spread over two replicas'
    partitions, each replica must see the other's admissions, so every copy in wave two is a duplicate."""
    from bus_schemas.events import TrajectoryAdmitted, TrajectoryRejected
    from consumers.registry import build
    from infra.runtime import ConsumerRunner

    kafka = urls["bus"].startswith("kafka")
    tasks = _tasks(12)
    publish_all(ports.bus, tasks)
    code = (
        "from infra.cli.consume import consume; "
        "consume('curator', workers=2, list_=False, "
        f"state_dir=__import__('pathlib').Path({str(tmp_path / 'state')!r}), "
        f"idle_exit={40.0 if kafka else 10.0}, bus={urls['bus']!r}, blobs={urls['blobs']!r}, "
        f"registry={urls['registry']!r})"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while sum("consuming verdicts" in line for line in lines) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(10 if kafka else 2)  # both joined and the group rebalanced
    topics = list(build("curator").topics)
    for tag in ("one", "two"):
        publish_all(
            ports.bus,
            [
                e
                for i, t in enumerate(tasks)
                for e in record_episode(t, reference_solver, ports.blobs, episode_id=f"ep-{tag}-{i}")
            ],
        )
        verifier = ConsumerRunner(build("verifier"), ports, state_dir=tmp_path / "verifier")
        verifier.run(idle_exit_s=6 if kafka else 2)
        verifier.close()
        deadline = time.monotonic() + 90
        while sum(lag.lag for lag in ports.bus.lag("flywheel.curator", topics)) and time.monotonic() < deadline:
            time.sleep(0.5)
    proc.wait(timeout=240)
    reader.join(timeout=10)
    err = "".join(lines)
    assert proc.returncode == 0, err[-3000:]
    handled = [int(n) for n in re.findall(r"stopped: RunStats\(handled=(\d+)", err)]
    assert len(handled) == 2 and all(n > 0 for n in handled), err[-3000:]

    decisions = [e for e in _read(ports, "curation") if isinstance(e, (TrajectoryAdmitted, TrajectoryRejected))]
    admitted = [e for e in decisions if isinstance(e, TrajectoryAdmitted)]
    assert admitted and all(e.episode_id.startswith("ep-one-") for e in admitted), [e.episode_id for e in admitted]
    assert len({e.trajectory.sha256 for e in admitted}) == len(admitted)  # one admission per bundle
    duplicates = {
        e.episode_id for e in decisions if isinstance(e, TrajectoryRejected) and "duplicate of" in e.reasons[0]
    }
    assert duplicates == {e.episode_id.replace("ep-one-", "ep-two-") for e in admitted}, (
        sorted(e.episode_id for e in decisions),
        err[-6000:],
    )
