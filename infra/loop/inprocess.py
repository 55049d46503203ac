"""Every consumer of the loop and one rollout worker in this process, stepped in turn (the embedded default).

Each consumer is the same ConsumerSpec that ``flywheel consume NAME`` runs, in its own consumer group with
its own dedupe store, so the in-process loop exercises the same handlers, retries and dead-lettering.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness_service.policy.inference import LOCAL, Inference
from infra.bootstrap import Ports
from infra.loop.config import CONSUMER_NAMES, LoopConfig
from infra.loop.workers import PeerRolloutWorkers
from infra.runtime import ConsumerRunner, ConsumerSpec

Progress = Callable[[int, int], None]
CLAIM_GRACE_S = 3.0  # as a ``flywheel consume rollout-worker`` process waits after its group changed
ROLLOUT_BURST = 16  # requests a worker may run per sweep before the consumers downstream get a turn


def reviser_env(config: LoopConfig) -> dict[str, str]:
    """The allow-list as the environment of a spawned ``flywheel consume harness_reviser`` process."""
    return {"FLYWHEEL_REVISER_AUTO_APPROVE": ",".join(config.auto_approve)}


def consumer_specs(
    config: LoopConfig, training_progress: Progress | None = None, pump: Callable[[], int] | None = None
) -> list[ConsumerSpec]:
    from consumers.harness_reviser.config import ReviserConfig
    from consumers.harness_reviser.spec import build as harness_reviser
    from consumers.registry import build
    from consumers.round_controller.handler import RoundConfig
    from consumers.round_controller.spec import build as round_controller
    from consumers.trainer.spec import build as trainer

    specs = []
    for name in CONSUMER_NAMES:
        if name == "round_controller":
            specs.append(round_controller(RoundConfig(**config.round_settings())))
        elif name == "trainer":
            specs.append(trainer(config.trainer_learner(), training_progress, pump))
        elif name == "harness_reviser":
            if config.revise_harness:  # explicit config: the process environment stays as it was
                specs.append(harness_reviser(ReviserConfig(auto_approve=config.auto_approve)))
        else:
            specs.append(build(name))
    return specs


class InProcessConsumers:
    """Every consumer and rollout worker 0 stepped in this process; with ``peers``, more rollout workers of the same
    group run as processes beside it (``LoopConfig.rollout_workers``)."""

    idle_sleep_s = 0.05  # the sweeps are the consumers' polls: a short pause keeps the loop's hand-offs quick

    def __init__(
        self,
        ports: Ports,
        config: LoopConfig,
        state_dir: Path,
        training_progress: Progress | None = None,
        inference: Inference = LOCAL,
        peers: PeerRolloutWorkers | None = None,
    ) -> None:
        from producers.backends import plugins
        from producers.pool import EnvironmentPool
        from producers.rollout import RolloutWorker
        from producers.rollout.versions import VersionResolver

        specs = consumer_specs(config, training_progress, self._pump)
        self.runners = [ConsumerRunner(spec, ports, state_dir=state_dir) for spec in specs]
        self.verifier = next(r for r, s in zip(self.runners, specs, strict=True) if s.name == "verifier")
        pool = EnvironmentPool()
        for name, factory in plugins.offered_factories().items():  # the sandbox, and e.g. an external suite's
            pool.register(name, factory, 1)
        resolver = VersionResolver(ports.registry, ports.bus, state_dir / "checkpoints", inference, check_every_s=0.0)
        self.peers = peers
        self.worker = RolloutWorker(
            ports,
            pool,
            name="rollout-worker-0",
            state_dir=state_dir,
            resolver=resolver,
            claim_grace_s=CLAIM_GRACE_S if peers is not None else 0.0,  # alone, no peer can own what it polled
        )

    def _pump(self) -> int:
        """While the trainer's GRPO waits for its groups (inside its handler), run the rollout worker and the
        verifier: the same services, in their own consumer groups, stepped from within the wait."""
        return self.worker.step(timeout_s=0.0) + self.verifier.step(timeout_s=0.0)

    def step(self) -> int:
        """One sweep: every consumer handles what is waiting, the rollout worker runs up to a burst of requests."""
        handled = sum(runner.step(timeout_s=0.0) for runner in self.runners)
        for _ in range(ROLLOUT_BURST):
            ran = self.worker.step(timeout_s=0.0)
            handled += ran
            if not ran:
                break
        return handled

    def check(self) -> None:
        """A failure in this process raises in :meth:`step`; a peer worker that exited raises here."""
        if self.peers is not None:
            self.peers.check()

    def close(self) -> None:
        for runner in self.runners:
            runner.close()
        self.worker.close()
        if self.peers is not None:
            self.peers.close()
