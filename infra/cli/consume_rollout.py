"""``flywheel consume rollout-worker --workers N``: rollout workers as N OS processes of group
``flywheel.rollout-worker``."""

from __future__ import annotations

import logging
import multiprocessing
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from infra.cli.run import BlobsOpt, BusOpt, InferenceOpt, RegistryOpt
from infra.cli.signals import stop_on_signals

console = Console(stderr=True)


@dataclass(frozen=True)
class WorkerOptions:
    """Everything one worker process needs (picklable, for ``spawn``)."""

    overrides: dict[str, str | None]
    state_dir: Path
    idle_exit_s: float | None = None
    sandbox_cap: int = 1
    lease_timeout_s: float = 900.0
    stale_after_s: float = 30.0
    sim_model: str | None = None
    toolsets: Path | None = None
    device: str | None = None
    adb: str = "127.0.0.1:5037"
    user_model: str | None = None


CONFIGURED = ("llm_sim", "device")
"""Built-in backends that need this worker's options (a simulator model, a device serial) to be built."""


def _pool(options: WorkerOptions, ports, resolver):
    """The backends this worker offers: every installed backend plugin that is built without arguments (the
    sandbox, and e.g. ``bfcl``: a new environment needs no edit here), up to ``sandbox_cap`` instances each;
    LLM-sim with a simulator model; a device by serial. A plugin that fails to load is logged and left out."""
    from producers.backends import plugins
    from producers.pool import EnvironmentPool

    pool = EnvironmentPool(lease_timeout_s=options.lease_timeout_s)
    for name, factory in plugins.offered_factories(CONFIGURED).items():
        pool.register(name, factory, options.sandbox_cap)
    if options.sim_model:
        from producers.backends.llm_sim import TOOLSETS_DIR, load_toolsets

        toolsets = load_toolsets(TOOLSETS_DIR, *([options.toolsets] if options.toolsets else []))
        simulator = resolver.policy(options.sim_model)(None)
        llm_sim = plugins.backend_factory("llm_sim")
        pool.register("llm_sim", lambda: llm_sim(toolsets, simulator), 1)
    if options.device:
        from producers.backends.device import connect_device

        device = plugins.backend_factory("device")
        host, _, port = options.adb.partition(":")
        connect_device(options.device, host, int(port or 5037))  # "no device" fails the start, not an episode
        pool.register("device", lambda: device(connect_device(options.device, host, int(port or 5037)), ports.blobs), 1)
    return pool


def run_rollout_worker(name: str, options: WorkerOptions) -> None:
    """One group member: open the ports, serve requests until stopped (or idle), close cleanly."""
    from infra.cli.quiet import quiet_consumer

    quiet_consumer(name, options.state_dir)
    with stop_on_signals() as stop:  # finish the current request, then exit
        _serve_rollouts(name, options, stop)


def _serve_rollouts(name: str, options: WorkerOptions, stop: threading.Event) -> None:
    from infra.bootstrap import Ports, open_blob_store, open_bus
    from infra.cli.consume import LazyRegistry
    from infra.config import load_settings
    from infra.events import ensure_topics
    from producers.rollout import RolloutWorker
    from producers.rollout.versions import VersionResolver

    settings = load_settings(**options.overrides)
    ports = Ports(open_bus(settings.bus, settings), open_blob_store(settings.blobs, settings), LazyRegistry(settings))
    ensure_topics(ports.bus)
    resolver = VersionResolver(ports.registry, ports.bus, options.state_dir / "checkpoints", settings.inference_port())
    pool = _pool(options, ports, resolver)
    users = None
    if options.user_model:  # a model plays the users of tasks with a persona; scripted replies otherwise
        from harness_service.user import user_for

        user_model = resolver.policy(options.user_model)
        users = lambda task: user_for(task, user_model(task))  # noqa: E731
    worker = RolloutWorker(
        ports,
        pool,
        users=users,
        name=name,
        state_dir=options.state_dir,
        resolver=resolver,
        stale_after_s=options.stale_after_s,
        outage_retry_s=settings.outage_retry_s,
    )
    try:
        stats = worker.run(stop, idle_exit_s=options.idle_exit_s)
        logging.getLogger("flywheel.rollout").info("stopped: %s", stats)
    finally:
        worker.close()
        pool.close()
        ports.close()


def rollout_worker(
    workers: Annotated[
        int, typer.Option(min=1, max=64, help="OS processes in the group; they split the rollouts partitions.")
    ] = 1,
    state_dir: Annotated[Path, typer.Option(help="Pool snapshots and the checkpoint cache.")] = Path(".flywheel/state"),
    idle_exit: Annotated[
        float | None, typer.Option(help="Exit after this many seconds without requests (default: run until stopped).")
    ] = None,
    sandbox_cap: Annotated[
        int, typer.Option(min=1, help="Instances per worker process of the sandbox and every other plugin backend.")
    ] = 1,
    lease_timeout: Annotated[
        float, typer.Option(help="Seconds before a leased backend instance is reclaimed.")
    ] = 900.0,
    stale_after: Annotated[
        float,
        typer.Option(help="An unfinished attempt silent this long is a dead worker's and is closed as abandoned."),
    ] = 30.0,
    sim_model: Annotated[
        str | None,
        typer.Option(
            help="Policy ref of the LLM-sim simulator (local:/ckpt or models:/name@alias); enables backend llm_sim."
        ),
    ] = None,
    toolsets: Annotated[
        Path | None, typer.Option(help="Extra folder of declared tool sets (*.json|*.yaml) for llm_sim.")
    ] = None,
    user_model: Annotated[
        str | None,
        typer.Option(
            help="Policy ref of the model that plays the user of tasks with a persona (local:/ckpt or "
            "models:/name@alias); without it, tasks' scripted replies answer clarifying questions."
        ),
    ] = None,
    device: Annotated[str | None, typer.Option(help="ADB serial of a device; enables backend device.")] = None,
    adb: Annotated[str, typer.Option(help="host:port of the adb server.")] = "127.0.0.1:5037",
    bus: BusOpt = None,
    blobs: BlobsOpt = None,
    registry: RegistryOpt = None,
    inference: InferenceOpt = None,
) -> None:
    """Run rollout workers: consume RolloutRequested, run each (group of) episode(s) through the harness in the
    requested backend, publish the episode events, commit. A request a crashed worker left half-done is re-run
    under a new attempt, and the broken attempt is closed with EpisodeEnded(reason=abandoned)."""
    options = WorkerOptions(
        overrides={"bus": bus, "blobs": blobs, "registry": registry, "inference": inference},
        state_dir=state_dir,
        idle_exit_s=idle_exit,
        sandbox_cap=sandbox_cap,
        lease_timeout_s=lease_timeout,
        stale_after_s=stale_after,
        sim_model=sim_model,
        toolsets=toolsets,
        device=device,
        adb=adb,
        user_model=user_model,
    )
    if workers == 1:
        run_rollout_worker("rollout-worker-0", options)
        return
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=run_rollout_worker, args=(f"rollout-worker-{i}", options), name=f"rollout-worker-{i}")
        for i in range(workers)
    ]
    for proc in procs:
        proc.start()
    console.print(f"[bold]rollout-worker[/]: {workers} workers, pids {', '.join(str(p.pid) for p in procs)}")
    with stop_on_signals() as stop:
        while any(p.is_alive() for p in procs):
            if stop.wait(0.5):
                for proc in procs:
                    if proc.is_alive():
                        proc.terminate()
                for proc in procs:
                    proc.join()
    if any(p.exitcode not in (0, -signal.SIGTERM) for p in procs):
        raise typer.Exit(code=1)
