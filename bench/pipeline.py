"""The pipeline figure: scripted (reference-solver) episodes through rollout workers, verifier, diagnoser and
curator, each stage its own OS process(es) in its consumer group as the main job runs them (on ``kafka://`` the
consumers are the FastStream apps ``flywheel consume`` runs; elsewhere the port runner), episodes/s end to end
on the embedded bus and on Kafka, against the rollout-only figure (the same workers, no consumer) in this run.

Each configuration first drains a warm-up batch through the whole pipeline (group joins, imports, caches), then
times N requests from their publication until every group has no lag (each stage commits only after its outputs
are durable, so lags read upstream first prove the whole batch went through). Lags are sampled all along and
drawn as lag-over-time PNGs. Then, on the same log, each consumer drains its input in a fresh group in this
process, against a consume-only loop (poll + commit, no decoding) over the same topics, and a decode-only loop
(the same plus decoding every event, as every consumer does before its handler).

``--workers K`` also runs every stage with K processes per consumer group and prints the ratio to one worker.
``--profile`` runs every stage under cProfile and prints each one's top entries.

    .venv/bin/python bench/pipeline.py [--episodes 192] [--workers 2] [--no-kafka] [--profile] [--out DIR]
"""

# ruff: noqa: E402  (HF_HUB_OFFLINE is set before transformers and trl are imported)
from __future__ import annotations

import argparse
import cProfile
import io
import multiprocessing
import os
import pstats
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from draining import consume_only, drain, lag
from rich.console import Console
from rich.table import Table
from rollout_requests import scripted_requests, warmup_tasks

from bus_schemas.blob_ref import BlobRef
from bus_schemas.events.tasks import TaskSpecified
from bus_schemas.topics import TOPIC_ROLLOUTS
from infra.blobs.errors import BlobNotFound
from infra.blobs.filesystem import FileBlobStore

console = Console(width=150)
CONSUMERS = ("verifier", "diagnoser", "curator")  # pipeline order: each reads what the one before wrote
ROLLOUT_GROUP = "flywheel.rollout-worker"
SAMPLE_S = 0.1


@dataclass(frozen=True)
class Member:
    """One process of a stage (picklable, for ``spawn``)."""

    stage: str  # "rollout-worker" or a consumer name
    index: int
    workers: int
    bus: str
    blobs: str
    state_dir: Path
    profile: Path | None


def _serve(member: Member, ready: multiprocessing.Queue) -> None:
    """A group member until SIGTERM: the rollout worker, or the consumer exactly as ``flywheel consume`` builds it."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from infra.bootstrap import Ports, open_blob_store, open_bus
    from infra.cli.consume import build_worker
    from infra.config import load_settings
    from infra.events import ensure_topics

    settings = load_settings(bus=member.bus, blobs=member.blobs)
    ports = Ports(open_bus(settings.bus, settings), open_blob_store(settings.blobs, settings), None)  # type: ignore[arg-type]
    ensure_topics(ports.bus)
    state = member.state_dir / f"{member.stage}-{member.index}"
    stop = threading.Event()
    if member.stage == "rollout-worker":
        from producers.backends.sandbox import SandboxBackend
        from producers.backends.sandbox.catalog import TOOLS
        from producers.pool import EnvironmentPool
        from producers.rollout import RolloutWorker

        # Every tool's JSON schemas are built on first use, once per process: with peers, a worker's share of the
        # warm-up batch may miss a template its timed share has, so build them all before timing.
        for tool in TOOLS.values():
            _ = tool.spec
        pool = EnvironmentPool()
        pool.register("sandbox", SandboxBackend, 1)
        # Alone in its group a worker has no stale assignment to wait out (as bench/rollouts.py); with peers it
        # keeps a short grace and settle window, so a rebalance cannot run a request twice.
        alone = member.workers == 1
        worker = RolloutWorker(
            ports,
            pool,
            name=f"worker-{member.index}",
            state_dir=state,
            claim_grace_s=0.0 if alone else 1.0,
            settle_s=0.0 if alone else 3.0,
        )
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())

        def run() -> None:
            try:
                worker.run(stop)
            finally:
                worker.close()
    else:
        consumer = build_worker(member.stage, settings, ports, state, None)  # sets its own SIGTERM handling
        run = consumer.run
    profiler = cProfile.Profile() if member.profile else None
    ready.put(member.stage)
    try:
        if profiler:
            profiler.runcall(run)
        else:
            run()
    finally:
        if profiler and member.profile:
            profiler.dump_stats(member.profile / f"{member.stage}-{member.index}.prof")
        ports.bus.close()


@dataclass
class Phase:
    """One timed configuration: episodes/s end to end and the lag of every group over time."""

    name: str
    episodes: int
    seconds: float = 0.0
    lags: dict[str, list[tuple[float, int]]] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.episodes / self.seconds if self.seconds else 0.0


def _tasks(n: int, run_id: str) -> tuple[list[TaskSpecified], list[TaskSpecified]]:
    from producers.tasks import build_task_suite

    suite = build_task_suite(run_id)
    return suite, [suite[i * len(suite) // n] for i in range(n)]


def _groups(stages: list[str]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(stage, group, topics) in pipeline order."""
    from consumers.registry import build

    out: list[tuple[str, str, tuple[str, ...]]] = [("rollout-worker", ROLLOUT_GROUP, (TOPIC_ROLLOUTS,))]
    for name in stages:
        spec = build(name)
        out.append((name, spec.group, tuple(spec.topics)))
    return out


def _drain_pipeline(bus, groups, started: float, phase: Phase | None, timeout_s: float) -> float:  # noqa: ANN001
    """Wait until every group, read in pipeline order, has no lag; returns when that was first seen."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = time.perf_counter() - started
        lags = [(stage, lag(bus, group, topics)) for stage, group, topics in groups]
        if phase is not None:
            for stage, behind in lags:
                phase.lags.setdefault(stage, []).append((now, behind))
        if all(behind == 0 for _, behind in lags):
            return time.perf_counter() - started
        time.sleep(SAMPLE_S)
    raise TimeoutError(f"the pipeline did not drain in {timeout_s:.0f} s: {lags}")


def run_phase(
    name: str,
    bus_url: str,
    stages: list[str],
    workers: int,
    tasks: list[TaskSpecified],
    warmup: list[TaskSpecified],
    suite: list[TaskSpecified],
    tmp: Path,
    profile: Path | None,
) -> Phase:
    """Start the stages' processes on a fresh log, drain a warm-up batch, then time ``tasks``."""
    from infra.bootstrap import open_bus
    from infra.events import ensure_topics, publish, publish_all

    bus = open_bus(bus_url)
    ensure_topics(bus)
    publish_all(bus, suite)
    blobs = f"file:///{tmp}/blobs"
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Queue()
    procs = []
    for stage in ["rollout-worker", *stages]:
        for i in range(workers):
            member = Member(stage, i, workers, bus_url, blobs, tmp / f"state-{name}", profile)
            procs.append(ctx.Process(target=_serve, args=(member, ready), daemon=True))
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            ready.get(timeout=180)
        groups = _groups(stages)
        publish(bus, *scripted_requests(warmup, f"warm-{name}"))
        _drain_pipeline(bus, groups, time.perf_counter(), None, timeout_s=300)
        time.sleep(1.0 if workers == 1 else 4.0)  # past the workers' settle window after the joins
        phase = Phase(name, len(tasks))
        started = time.perf_counter()
        publish(bus, *scripted_requests(tasks, f"ep-{name}"))
        phase.seconds = _drain_pipeline(bus, groups, started, phase, timeout_s=1800)
        console.print(f"  {name}: {phase.episodes} episodes in {phase.seconds:.1f} s = {phase.rate:.1f} episodes/s")
        return phase
    finally:
        for proc in procs:
            if proc.is_alive() and proc.pid is not None:
                os.kill(proc.pid, signal.SIGTERM)
        for proc in procs:
            proc.join(60)
            if proc.is_alive():
                proc.kill()
                proc.join()
        bus.close()


# -- each consumer alone over the recorded log, vs consume-only (this process, fresh groups) --------------------


def consumer_alone(name: str, bus_url: str, blobs: Path, state: Path, profile: Path | None) -> tuple[int, float]:
    """The consumer as it is built for the main job (same spec, a fresh group). Its blobs are written to a fresh
    directory (reads fall back to the pipeline's): the pipeline run already stored every bundle, and a put of
    stored bytes writes nothing."""
    from consumers.registry import build
    from infra.bootstrap import Ports, open_bus
    from infra.runtime import ConsumerRunner

    bus = open_bus(bus_url)
    spec = replace(build(name), name=f"bench-{name}-{uuid.uuid4().hex[:6]}")
    store = _FreshWrites(blobs.with_name(f"blobs-alone-{uuid.uuid4().hex[:6]}"), blobs)
    runner = ConsumerRunner(spec, Ports(bus, store, None), state_dir=state)  # type: ignore[arg-type]
    profiler = cProfile.Profile() if profile else None
    try:
        if profiler:
            profiler.enable()
        return drain(lambda: runner.step(timeout_s=0.2), bus, spec.group, spec.topics)
    finally:
        if profiler and profile:
            profiler.disable()
            profiler.dump_stats(profile / f"alone-{name}.prof")
        runner.close()
        bus.close()


class _FreshWrites(FileBlobStore):
    """A blob directory that reads what it lacks from another one: a consumer's writes all land, its reads of the
    pipeline's blobs still work."""

    def __init__(self, root: Path, fallback: Path) -> None:
        super().__init__(root)
        self.fallback = FileBlobStore(fallback)

    def get(self, address: str | BlobRef) -> bytes:
        try:
            return super().get(address)
        except BlobNotFound:
            return self.fallback.get(address)

    def open(self, address: str | BlobRef) -> Iterator[bytes]:
        try:
            return super().open(address)  # opens the file before returning: a missing blob raises here
        except BlobNotFound:
            return self.fallback.open(address)

    def stat(self, address: str | BlobRef) -> BlobRef:
        try:
            return super().stat(address)
        except BlobNotFound:
            return self.fallback.stat(address)

    def exists(self, address: str | BlobRef) -> bool:
        return super().exists(address) or self.fallback.exists(address)


def per_consumer(bus_url: str, tmp: Path, profile: Path | None) -> list[tuple[str, int, float, float]]:
    """(consumer, records, records/s, ratio to consume-only over the same topics, its best of three runs: a few
    hundred records are a couple of polls, so one run is noise). Downstream consumers first:
    a drain of the verifier publishes its verdicts again, which the diagnoser and curator would then read.
    Between the two, decode-only: consume-only plus ``from_record`` of every record (envelope, schema version,
    upcast, pydantic validation), which every consumer pays before its handler sees an event."""
    from consumers.registry import build
    from infra.bootstrap import open_bus
    from infra.events import from_record

    def best(runs: Iterator[tuple[int, float]]) -> tuple[int, float]:
        return max(runs, key=lambda r: r[0] / r[1] if r[1] else 0.0)

    rows = []
    bus = open_bus(bus_url)
    try:
        for name in reversed(CONSUMERS):
            topics = tuple(build(name).topics)
            n0, s0 = best(consume_only(bus, topics) for _ in range(3))
            nd, sd = best(consume_only(bus, topics, decode=from_record) for _ in range(3))
            try:
                n, s = consumer_alone(name, bus_url, tmp / "blobs", tmp / "state-alone", profile)
            except Exception as exc:  # noqa: BLE001 - one failed row (e.g. a fenced Kafka commit) must not lose the others
                console.print(f"[red]{name} alone failed: {type(exc).__name__}: {exc}[/]")
                n, s = 0, 0.0
            base, decoded, rate = n0 / s0 if s0 else 0.0, nd / sd if sd else 0.0, n / s if s else 0.0
            rows.append((f"consume-only ({', '.join(topics)})", n0, base, 1.0))
            rows.append(("decode-only (the same)", nd, decoded, decoded / base if base else 0.0))
            rows.append((name, n, rate, rate / base if base else 0.0))
    finally:
        bus.close()
    return rows


def plot_lags(phases: list[Phase], path: Path) -> None:
    """Lag over time of every group, one panel per configuration (the approach of infra/report/write.py)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: E402 - the backend must be chosen first

    shown = [p for p in phases if p.lags]
    fig, axes = plt.subplots(1, len(shown), figsize=(5.5 * len(shown), 4), squeeze=False, sharey=True)
    for ax, phase in zip(axes[0], shown, strict=False):
        for stage, series in phase.lags.items():
            ax.plot([t for t, _ in series], [lag for _, lag in series], label=stage)
        ax.set_title(f"{phase.name}: {phase.rate:.1f} episodes/s")
        ax.set_xlabel("seconds since the requests were published")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("lag (records)")
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def print_profiles(profile: Path, top: int) -> None:
    for path in sorted(profile.glob("*.prof")):
        out = io.StringIO()
        stats = pstats.Stats(str(path), stream=out)
        stats.sort_stats("tottime").print_stats(top)
        lines = [line for line in out.getvalue().splitlines() if line.strip()]
        start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
        total = next((line for line in lines if "function calls" in line), "")
        console.print(f"[bold]{path.stem}[/] {total.strip()}")
        console.print("\n".join(lines[start : start + top + 1]), markup=False, highlight=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=192, help="timed episodes per configuration")
    parser.add_argument(
        "--warmup", type=int, default=32, help="episodes drained through the pipeline before timing (one per template)"
    )
    parser.add_argument("--workers", type=int, default=1, help="also run every stage with this many processes")
    parser.add_argument("--kafka", default="127.0.0.1:19092", help="bootstrap server of the local stack")
    parser.add_argument("--no-kafka", action="store_true", help="only the embedded bus")
    parser.add_argument("--no-embedded", action="store_true", help="only Kafka")
    parser.add_argument("--skip-rollout-only", action="store_true", help="no rollout-only baseline (profiling runs)")
    parser.add_argument("--profile", action="store_true", help="cProfile every stage and print its top entries")
    parser.add_argument("--top", type=int, default=14, help="profile entries shown per stage")
    parser.add_argument("--out", type=Path, default=None, help="where the PNG (and profiles) go (default: a temp dir)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    out.mkdir(parents=True, exist_ok=True)
    profile = out / "profiles" if args.profile else None
    if profile:
        profile.mkdir(exist_ok=True)
    suite, tasks = _tasks(args.episodes, "bench")
    warmup = warmup_tasks(suite, tasks, args.warmup)
    buses = {} if args.no_embedded else {"embedded": lambda tmp: f"sqlite:///{tmp}/bus.db"}
    if not args.no_kafka:
        buses["Kafka"] = lambda tmp: f"kafka://{args.kafka}?session_timeout_s=6&namespace=bench-{uuid.uuid4().hex[:8]}"
    counts = sorted({1, args.workers})
    phases: dict[tuple[str, str, int], Phase] = {}
    alone: dict[str, list[tuple[str, int, float, float]]] = {}
    for bus_name, url_of in buses.items():
        for workers in counts:
            for kind, stages in (("rollout-only", []), ("pipeline", list(CONSUMERS)))[args.skip_rollout_only :]:
                tmp = Path(tempfile.mkdtemp(prefix=f"pipe-{kind}-", dir=out))
                name = f"{bus_name} {kind} x{workers}"
                prof = profile / name.replace(" ", "-") if profile and kind == "pipeline" else None
                if prof:
                    prof.mkdir(exist_ok=True)
                url = url_of(tmp)
                phases[bus_name, kind, workers] = run_phase(name, url, stages, workers, tasks, warmup, suite, tmp, prof)
                if kind == "pipeline" and workers == 1:
                    alone[bus_name] = per_consumer(url, tmp, prof)

    table = Table(
        title=f"pipeline: {args.episodes} reference-solver episodes per configuration (after {args.warmup} warm-up)"
    )
    for column in (
        "bus",
        "workers/stage",
        "rollout-only ep/s",
        "end to end ep/s",
        "end to end / rollout-only",
        "vs embedded (same workers)",
        "vs 1 worker",
    ):
        table.add_column(column, justify="left" if column == "bus" else "right")
    for (bus_name, kind, workers), phase in phases.items():
        if kind != "pipeline":
            continue
        rollout = phases.get((bus_name, "rollout-only", workers), Phase("none", 0, 1.0))
        embedded = phases.get(("embedded", "pipeline", workers))
        one = phases[bus_name, "pipeline", 1]
        versus = f"{phase.rate / rollout.rate:.2f}x" if rollout.rate else "-"
        table.add_row(
            bus_name,
            str(workers),
            f"{rollout.rate:.1f}",
            f"{phase.rate:.1f}",
            versus,
            f"{phase.rate / embedded.rate:.2f}x" if embedded else "-",
            f"{phase.rate / one.rate:.2f}x",
        )
    console.print(table)
    for bus_name, rows in alone.items():
        t = Table(
            title=f"each consumer alone over the pipeline's log ({bus_name}, port runner, fresh group) vs consume-only"
        )
        for column in ("what", "records", "records/s", "vs consume-only"):
            t.add_column(column, justify="left" if column == "what" else "right")
        for what, n, rate, ratio in rows:
            t.add_row(what, str(n), f"{rate:,.0f}", f"{ratio:.3f}")
        console.print(t)
    png = out / "pipeline-lag.png"
    plot_lags([p for (_, kind, _), p in phases.items() if kind == "pipeline"], png)
    console.print(f"lag over time: {png}")
    console.print(
        "targets (2 cores): >= 200 episodes/s end to end embedded; Kafka within 30% of embedded; "
        "each consumer >= 0.2x consume-only"
    )
    if profile:
        print_profiles_tree(profile, args.top)


def print_profiles_tree(profile: Path, top: int) -> None:
    for folder in sorted(p for p in profile.iterdir() if p.is_dir()):
        console.rule(folder.name)
        print_profiles(folder, top)


if __name__ == "__main__":
    main()
