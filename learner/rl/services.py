"""The services RL's rollouts go through, in this process: a rollout worker and the verifier, stepped by a pump.

For tools and benches that run GRPO without a running loop (``flywheel run`` steps its own; on Kafka they are
separate processes and no pump is needed). They are the real consumers, in their own consumer groups.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness_service.policy.inference import LOCAL, Inference
from infra.bootstrap import Ports


class LocalServices:
    """``pump()`` steps the worker and the verifier once; ``close()`` leaves their groups."""

    def __init__(self, ports: Ports, state_dir: Path, inference: Inference = LOCAL) -> None:
        from consumers.registry import build
        from infra.runtime import ConsumerRunner
        from producers.backends import plugins
        from producers.pool import EnvironmentPool
        from producers.rollout import RolloutWorker
        from producers.rollout.versions import VersionResolver

        envs = EnvironmentPool()
        envs.register("sandbox", plugins.backend_factory("sandbox"), 1)
        resolver = VersionResolver(ports.registry, ports.bus, state_dir / "checkpoints", inference, check_every_s=0.0)
        self.worker = RolloutWorker(
            ports, envs, name="rl-worker", state_dir=state_dir, resolver=resolver, claim_grace_s=0.0
        )
        self.verifier = ConsumerRunner(build("verifier"), ports, state_dir=state_dir)

    @property
    def pump(self) -> Callable[[], int]:
        return lambda: self.worker.step(timeout_s=0.0) + self.verifier.step(timeout_s=0.0)

    def close(self) -> None:
        self.worker.close()
        self.verifier.close()
