"""The main job end to end on the real stack (Kafka + SeaweedFS + MLflow), every consumer its own process, with
``--algorithm mixed``: round 0 SFT on the reference episodes, round 1 continued SFT on what was admitted, then GRPO
whose groups go through the rollout-worker and verifier processes. One run, shared by the tests here: it covers the
plain SFT path too (rounds 0 and 1 train with SFT), and it runs with secrets in the environment, so the same run
shows that none of them reaches the console, a log file, an event or MLflow. ``--algorithm rl`` is this run without
the continued-SFT steps (see test_loop_embedded.py)."""

from __future__ import annotations

import re
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from loop_support import check_run, real_stack_ports, run_spawned_on_real_stack
from rl_support import check_rl, small_mixed_loop

from infra.bootstrap import open_bus
from infra.config import StackSettings
from infra.loop.config import CONSUMER_NAMES

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(1200)]

CONSUMERS = (*CONSUMER_NAMES, "rollout-worker")


@dataclass
class Run:
    run_id: str
    out: Path
    proc: subprocess.CompletedProcess[str]
    secrets: list[str]

    @property
    def logs(self) -> Path:
        return self.out / "logs"


@pytest.fixture(scope="module")
def run(real_stack: StackSettings, tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp_path = tmp_path_factory.mktemp("mixed")
    run_id = f"e2e-mixed-stack-{uuid.uuid4().hex[:10]}"
    env = {
        "FLYWHEEL_S3_ACCESS_KEY": real_stack.s3_access_key,
        "FLYWHEEL_S3_SECRET_KEY": real_stack.s3_secret_key.get_secret_value(),
        "FLYWHEEL_HARNESS_TOKEN": "harness-token-" + uuid.uuid4().hex,
    }
    proc = run_spawned_on_real_stack(real_stack, run_id, small_mixed_loop(tmp_path), tmp_path, env=env)
    return Run(run_id, tmp_path / "runs" / run_id, proc, [env["FLYWHEEL_S3_SECRET_KEY"], env["FLYWHEEL_HARNESS_TOKEN"]])


def test_every_consumer_runs_as_its_own_process_with_its_own_logs(run: Run) -> None:
    assert "dev Overall per round:" in run.proc.stdout and "GRPO steps" in run.proc.stdout
    # the run's own log (library output); each consumer: its console (<name>.log) and every record, libraries'
    # too, per process (<name>.all.log, or <name>-<k>.all.log for each of a consumer's worker processes)
    names = {p.name for p in run.logs.glob("*.log")}
    assert sorted(n for n in names if not n.endswith(".all.log")) == sorted(
        ["flywheel.log", *(f"{n}.log" for n in CONSUMERS)]
    )
    every_record = {n.removesuffix(".all.log") for n in names if n.endswith(".all.log")}
    assert {re.sub(r"-\d+$", "", n) for n in every_record} == set(CONSUMERS), sorted(every_record)


def test_two_rounds_trained_evaluated_registered_and_replayed_with_grpo_in_round_one(
    run: Run, real_stack: StackSettings
) -> None:
    ports = real_stack_ports(real_stack, run.run_id)
    try:
        check_run(ports, run.run_id, run.out)
        check_rl(ports, run.run_id, run.out)
    finally:
        ports.close()


def test_no_secret_reaches_the_console_a_log_file_an_event_or_mlflow(run: Run, real_stack: StackSettings) -> None:
    console = run.proc.stdout + run.proc.stderr
    assert all(secret not in console for secret in run.secrets)
    logs = sorted(run.logs.glob("*.log"))
    assert len(logs) > len(CONSUMERS)
    for path in logs:
        text = path.read_text(errors="replace")
        assert all(secret not in text for secret in run.secrets), f"a secret is in {path.name}"
    bus = open_bus(f"kafka://{real_stack.host}:{real_stack.kafka_port}?namespace={run.run_id}")
    events = 0
    try:
        for topic in bus.topics():
            for record in bus.replay(topic):
                events += 1
                assert all(s.encode() not in record.value for s in run.secrets), f"a secret is in an event on {topic}"
    finally:
        bus.close()
    assert events > 0

    from mlflow.tracking import MlflowClient

    client = MlflowClient(real_stack.mlflow_url)
    runs = [
        r
        for e in client.search_experiments()
        for r in client.search_runs([e.experiment_id], f"tags.flywheel_run_id = '{run.run_id}'", max_results=200)
    ]
    assert runs  # the parent run, the rounds' training and dev-evaluation runs
    for logged in runs:
        values = " ".join([*logged.data.params.values(), *logged.data.tags.values()])
        assert all(secret not in values for secret in run.secrets), logged.info.run_id
