"""Rollout throughput through ``transformers serve`` vs in process, on the same registered checkpoint, in one run.

A tiny planner (untrained, so its episodes are short runs of invalid outputs until the harness's invalid-action budget
ends them: the figure is inference + harness cost, not success) is registered in the embedded registry. The same
requests (tasks, seeds, ``planner@production``) run through the rollout worker twice: ``--inference local:`` (the
learner's ``PlannerPolicy`` in the worker process, one torch thread) and ``openai+http`` against ``flywheel serve
model``'s ``transformers serve`` (its own process; one torch thread unless ``--serve-threads``), both greedy with the
same token budget and a window wide enough to keep every prompt whole, so both decode the same tokens. Prints
episodes/s, steps/s and the ratio. No stack needed.

    .venv/bin/python bench/serve_rollouts.py [--episodes 8] [--hidden 128] [--max-new-tokens 16] [--serve-threads 1]
        [--engine transformers|vllm] [--device cpu|cuda]   (vllm on a GPU: bench/gpu_check.sh)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rollout_requests import SCHEDULER

from bus_schemas.events import Budgets
from bus_schemas.events.rollouts import RolloutRequested
from bus_schemas.events.tasks import TaskSpecified
from harness_service.policy.inference import Inference, parse_inference
from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics, publish
from infra.serving.engines import ENGINES
from infra.serving.server import ModelServer, ServeOptions, ServeTarget
from learner.model import PromptWindow, TinyModelConfig, build_tiny_model, save_checkpoint, train_tokenizer
from learner.registry import PRODUCTION, Lineage, register_checkpoint
from producers.backends.sandbox import SandboxBackend
from producers.pool import EnvironmentPool
from producers.rollout import RolloutWorker
from producers.rollout.versions import VersionResolver
from producers.tasks import build_task_suite

console = Console()
POLICY = "planner@production"


def register(ports: Ports, folder: Path, hidden: int, max_new_tokens: int) -> str:
    """A tiny planner (tokenizer trained on the suite's goals) registered as ``planner@production``."""
    goals = [task.goal for task in build_task_suite("bench")[:200]]
    tokenizer = train_tokenizer(goals, vocab_size=2048)
    model = build_tiny_model(tokenizer, TinyModelConfig(hidden_size=hidden))
    checkpoint = save_checkpoint(model, tokenizer, folder)
    PromptWindow(max_prompt_tokens=100_000, max_new_tokens=max_new_tokens).save(checkpoint)
    manifest = ports.blobs.put(b"{}", "application/json")
    lineage = Lineage("planner", "sft", "sha256:" + "ab" * 32, manifest, {"episodes/0": 1}, "default", None)
    version, events = register_checkpoint(ports.registry, ports.blobs, checkpoint, lineage, run_id="bench")
    publish(ports.bus, *events)
    ports.registry.set_alias("planner", PRODUCTION, version.version)
    return version.version


def requests(tasks: list[TaskSpecified], tag: str) -> list[RolloutRequested]:
    return [
        RolloutRequested(
            producer=SCHEDULER,
            run_id="bench",
            task_id=task.task_id,
            episode_id=f"{tag}-{i}",
            policy_version=POLICY,
            harness_version="default",
            backend="sandbox",
            seed=0,
            budgets=task.budgets or Budgets(),
        )
        for i, task in enumerate(tasks)
    ]


def bench_worker(
    ports: Ports, inference: Inference, tasks: list[TaskSpecified], root: Path, tag: str
) -> tuple[float, int, int]:
    """(seconds, episodes, steps) of one worker running one request per task with ``inference``."""
    resolver = VersionResolver(ports.registry, ports.bus, root / f"cache-{tag}", inference)
    resolver.policy(POLICY)  # loads (local) or names (served) the version: not part of the figure
    pool = EnvironmentPool()
    pool.register("sandbox", SandboxBackend, 1)
    worker = RolloutWorker(ports, pool, state_dir=root / f"state-{tag}", resolver=resolver, claim_grace_s=0.0)
    worker.step(timeout_s=5)  # joins the group
    batch = requests(tasks, tag)
    publish(ports.bus, *batch)
    started = time.perf_counter()
    while worker.stats.requests < len(batch):
        worker.step()
    elapsed = time.perf_counter() - started
    worker.close()
    return elapsed, worker.stats.episodes, worker.stats.steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=128, help="hidden size of the tiny planner")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--port", type=int, default=18431)
    parser.add_argument(
        "--serve-threads", type=int, default=1, help="torch threads of transformers serve (0: torch's default)"
    )
    parser.add_argument("--engine", choices=ENGINES, default="transformers", help="the server flywheel serve starts")
    parser.add_argument("--device", default="cpu", help="cpu or cuda: the server's and the in-process policy's")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        root = Path(tmp)
        bus = open_bus(f"sqlite:///{root}/bus.db")
        ensure_topics(bus)
        ports = Ports(bus, open_blob_store(f"file:///{root}/blobs"), open_registry(f"sqlite:///{root}/mlflow.db"))
        suite = build_task_suite("bench")
        tasks = [suite[i * len(suite) // args.episodes] for i in range(args.episodes)]
        publish(bus, *tasks)
        version = register(ports, root / "checkpoint", args.hidden, args.max_new_tokens)
        threads = args.serve_threads or None
        options = ServeOptions(args.engine, "127.0.0.1", args.port, root / "served", args.device, threads=threads)
        server = ModelServer(ports.registry, ServeTarget.parse(POLICY), options, lambda e: publish(bus, e))
        try:
            server.sync()
            served_url = f"openai+http://127.0.0.1:{args.port}/v1?max_tokens={args.max_new_tokens}"
            rows = {
                f"in process (local:, {args.device})": bench_worker(
                    ports, parse_inference(f"local:?device={args.device}"), tasks, root, "local"
                ),
                f"{args.engine} serve (openai+http)": bench_worker(
                    ports, parse_inference(served_url), tasks, root, "served"
                ),
            }
        finally:
            server.close()
            bus.close()

    served_threads = args.serve_threads or "default"
    title = (
        f"planner/{version} (hidden {args.hidden}), {args.episodes} episodes, greedy, serve threads {served_threads}"
    )
    table = Table(title=title)
    for column in ("path", "episodes", "steps", "seconds", "episodes/s", "steps/s"):
        table.add_column(column, justify="right" if column != "path" else "left")
    for name, (seconds, episodes, steps) in rows.items():
        table.add_row(
            name, str(episodes), str(steps), f"{seconds:.1f}", f"{episodes / seconds:.2f}", f"{steps / seconds:.2f}"
        )
    console.print(table)
    (local_s, local_n, _), (served_s, served_n, _) = rows.values()
    ratio = (served_n / served_s) / (local_n / local_s)
    console.print(f"served / in-process episodes/s: {ratio:.2f}x")


if __name__ == "__main__":
    main()
