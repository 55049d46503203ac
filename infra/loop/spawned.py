"""Every consumer of the loop as its own OS process (``flywheel consume NAME``), as operators run them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from infra.loop.config import CONSUMER_NAMES, LoopConfig
from infra.loop.died import raise_if_exited
from infra.loop.inprocess import reviser_env


def consume_command(name: str, state_dir: Path, flags: list[str], config: LoopConfig) -> list[str]:
    """The ``flywheel consume NAME`` command line of one consumer; the rollout workers' with ``--workers N``."""
    command = [sys.executable, "-m", "infra.cli.main", "consume", name, f"--state-dir={state_dir}", *flags]
    return command + ([f"--workers={config.rollout_workers}"] if name == "rollout-worker" else [])


class SpawnedConsumers:
    idle_sleep_s = 0.5
    """The processes do the work; this one only watches the log. On Kafka one look costs ~11 ms of CPU (client and
    broker, a ListOffsets per topic): every 50 ms it was a fifth of a core for a live view, twice a second is ~2%."""

    def __init__(
        self, config: LoopConfig, urls: dict[str, str], state_dir: Path, log_dir: Path, inference: str = "local:"
    ) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        learner_config = state_dir / "learner.json"
        learner_config.parent.mkdir(parents=True, exist_ok=True)
        learner_config.write_text(config.trainer_learner().model_dump_json())
        env = {
            **os.environ,
            **config.round_env(),
            **reviser_env(config),
            "FLYWHEEL_LEARNER_CONFIG": str(learner_config),
            "HF_HUB_OFFLINE": "1",
            "FLYWHEEL_INFERENCE": inference,  # read by the rollout worker only (its --inference)
        }
        names = [n for n in CONSUMER_NAMES if n != "harness_reviser" or config.revise_harness] + ["rollout-worker"]
        flags = [f"--{k}={v}" for k, v in urls.items()]
        self.logs = {name: log_dir / f"{name}.log" for name in names}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        for name in names:
            command = consume_command(name, state_dir, flags, config)
            with self.logs[name].open("wb") as log:
                self.procs[name] = subprocess.Popen(
                    command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
                )

    def step(self) -> int:
        return 0  # the processes do the work; the driver only watches the log

    def check(self) -> None:
        for name, proc in self.procs.items():
            raise_if_exited(name, proc.poll(), self.logs[name])

    def close(self, timeout_s: float = 30.0) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
