"""Consumer throughput: events/s of each flywheel consumer over a recorded stream vs a consume-only loop.

Records >= N episode events (scripted sandbox episodes: reference and no-op policies), publishes them,
then on the same bus in the same run measures (1) a consume-only loop (poll + commit, no decoding) and
(2) the verifier, then diagnoser and curator over the verdicts it produced, each as a ConsumerRunner;
on Kafka also (3) each as the FastStream app that ``flywheel consume`` runs there (own group, same log).
Times run from the first record received to the last one committed (group joins are not counted).
The reweighter is timed per plan over every verdict, the task constructor per validated task.

    .venv/bin/python bench/consumer_throughput.py [--events 100000] [--bus kafka://127.0.0.1:19092?namespace=bench-1]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
import uuid
from pathlib import Path

from draining import consume_only, drain
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import TaskGenerationRequested
from bus_schemas.topics import TOPIC_EPISODES, TOPIC_ROUNDS, TOPIC_VERDICTS
from consumers.common.recording import record_episode
from consumers.registry import build
from consumers.round_controller.handler import start_round
from consumers.task_constructor.handler import construct
from infra.bootstrap import Ports, open_blob_store, open_bus
from infra.events import ensure_topics, publish_all
from infra.runtime import ConsumerRunner
from producers.backends.sandbox.backend import SandboxBackend
from producers.tasks import build_task_suite, reference_solver
from producers.tasks.runner import noop_policy

console = Console(width=140)
RUN = "run-bench"


def record(ports: Ports, target: int) -> int:
    """Publish tasks, then episodes until ``target`` episode events are on the log; returns the count."""
    tasks = [t for t in build_task_suite(RUN) if t.split == "train"]
    publish_all(ports.bus, build_task_suite(RUN))
    backend, total, batch, i = SandboxBackend(), 0, [], 0
    with Progress(console=console) as progress:
        bar = progress.add_task("recording episodes", total=target)
        while total < target:
            policy = reference_solver if i % 2 == 0 else noop_policy
            events = record_episode(
                tasks[i % len(tasks)], policy, ports.blobs, episode_id=f"ep-{i}", run_id=RUN, backend=backend
            )
            batch += events
            total += len(events)
            i += 1
            if len(batch) >= 2000 or total >= target:
                publish_all(ports.bus, batch)
                progress.update(bar, advance=len(batch))
                batch = []
    return total


def run_consumer(name: str, ports: Ports, topic: str, state: Path) -> tuple[int, float]:
    spec = build(name)
    runner = ConsumerRunner(spec, ports, state_dir=state)
    result = drain(lambda: runner.step(timeout_s=0.2), ports.bus, spec.group, [topic])
    runner.close()
    return result


def run_faststream(name: str, ports: Ports, topic: str, state: Path, bus_url: str) -> tuple[int, float]:
    """The consumer as its FastStream app, in a fresh group (``bench.NAME``) over the same log."""
    from infra.runtime import ConsumerSpec
    from infra.runtime.kafka_app import FastStreamConsumer, KafkaTarget

    base = build(name)
    spec = ConsumerSpec(
        f"bench-{name}-{uuid.uuid4().hex[:6]}", base.topics, base.handle, base.event_types, base.version, base.on_batch
    )
    app = FastStreamConsumer(spec, ports, KafkaTarget.from_url(bus_url), state_dir=state)
    span: list[float] = []
    counted = [0]
    handle, done = app.batches.handle, app.batches.done

    def timed_handle(records):  # noqa: ANN001, ANN202
        span[:1] = span[:1] or [time.perf_counter()]  # FastStream fetched it already: from the handler's start
        counted[0] += len(records)
        return handle(records)

    def timed_done(result):  # noqa: ANN001, ANN202
        done(result)
        span[1:] = [time.perf_counter()]

    app.batches.handle, app.batches.done = timed_handle, timed_done  # type: ignore[method-assign]

    def stop_when_drained() -> None:
        while not (len(span) == 2 and sum(p.lag for p in ports.bus.lag(spec.group, [topic])) == 0):
            time.sleep(0.5)
        app.app.exit()

    threading.Thread(target=stop_when_drained, daemon=True).start()
    app.run()
    return counted[0], span[1] - span[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000, help="episode events to record (default 100000)")
    parser.add_argument("--bus", default=None, help="bus URL (default: an embedded log in a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bus = open_bus(args.bus or f"sqlite:///{tmp}/bus.db")
        ensure_topics(bus)
        ports = Ports(bus, open_blob_store(f"file:///{tmp}/blobs"), registry=None)  # type: ignore[arg-type]
        recorded = record(ports, args.events)
        table = Table(
            "stream",
            "what",
            "records",
            "seconds",
            "records/s",
            "vs consume-only",
            title=f"{recorded} episode events on {bus.url}",
        )
        for topic, consumers in ((TOPIC_EPISODES, ["verifier"]), (TOPIC_VERDICTS, ["diagnoser", "curator"])):
            nb, base = consume_only(bus, [topic])
            table.add_row(topic, "consume-only (poll+commit)", str(nb), f"{base:.1f}", f"{nb / base:,.0f}", "1.00")
            for name in consumers:
                n, secs = run_consumer(name, ports, topic, Path(tmp) / "state")
                table.add_row(topic, name, str(n), f"{secs:.1f}", f"{n / secs:,.0f}", f"{(n / secs) / (nb / base):.3f}")
                if bus.url.startswith("kafka://"):
                    n, secs = run_faststream(name, ports, topic, Path(tmp) / "state-fs", args.bus)
                    table.add_row(
                        topic,
                        f"{name} (FastStream app)",
                        str(n),
                        f"{secs:.1f}",
                        f"{n / secs:,.0f}",
                        f"{(n / secs) / (nb / base):.3f}",
                    )
        publish_all(bus, [start_round(RUN, 1, "p0", "h0", 64, Producer(service="bench", version="0"))])
        n, secs = run_consumer("reweighter", ports, TOPIC_ROUNDS, Path(tmp) / "state")
        table.add_row(
            TOPIC_ROUNDS, "reweighter (one plan over every verdict)", str(n), f"{secs:.2f}", f"{n / secs:,.1f}", ""
        )
        request = TaskGenerationRequested(
            producer=Producer(service="bench", version="0"),
            run_id=RUN,
            request_id="bench",
            capability="tool_use",
            count=50,
        )
        start = time.perf_counter()
        made: list[Event] = list(construct(request, [], set(), Producer(service="bench", version="0")))
        secs = time.perf_counter() - start
        table.add_row(
            "sampling",
            "task constructor (validated tasks)",
            str(len(made)),
            f"{secs:.2f}",
            f"{len(made) / secs:,.1f}",
            "",
        )
        console.print(table)
        bus.close()


if __name__ == "__main__":
    main()
