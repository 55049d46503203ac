"""Sandbox throughput on one core: tool calls/s, resets/s and verification time per task, against targets.

Run: ``.venv/bin/python bench/sandbox.py``. Prints figures; asserts nothing.
"""

from __future__ import annotations

import os
import time

from bus_schemas.actions import ToolCall
from producers.backends.base import Evidence
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.catalog import TOOLS
from producers.backends.sandbox.verify import verify
from producers.tasks.runner import run_episode
from producers.tasks.solver import reference_solver
from producers.tasks.suite import build_task_suite

TARGETS = {
    "tool calls/s": 20_000.0,
    "resets/s": 5_000.0,
    "cold resets/s": 5_000.0,
    "verify ms/task": 1.0,
    "verify ms/task (from JSON)": 1.0,
}


def _pin_one_core() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def tool_calls_per_s(backend: SandboxBackend, tasks: list, seconds: float = 2.0) -> float:
    """Every tool's example call in turn (reads, writes and documented errors), one episode per pass over the tools."""
    task = next(t for t in tasks if t.category == "tool_use")
    full = task.model_copy(update={"tools": list(TOOLS)})
    calls = [ToolCall(name=t.name, args=dict(t.example)) for t in TOOLS.values()]
    backend.reset(full)
    ok = sum(backend.step(call).ok for call in calls)
    print(f"(tool-call mix: {len(calls)} calls per episode, {ok} succeed, {len(calls) - ok} return documented errors)")
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        backend.reset(full)
        for call in calls:
            backend.step(call)
        n += len(calls)
    return n / (time.perf_counter() - start)


def resets_per_s(backend: SandboxBackend, tasks: list, seconds: float = 2.0) -> float:
    for task in tasks:
        backend.reset(task)  # warm the per-(task, seed) cache
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for task in tasks:
            backend.reset(task)
        n += len(tasks)
    return n / (time.perf_counter() - start)


def cold_resets_per_s(tasks: list) -> float:
    """Resets of tasks never seen by this backend: the initial state is built (fixtures over the seeded world)."""
    backend = SandboxBackend()
    start = time.perf_counter()
    for task in tasks:
        backend.reset(task)
    return len(tasks) / (time.perf_counter() - start)


def verify_ms_per_task(backend: SandboxBackend, tasks: list) -> float:
    episodes = [(task, run_episode(backend, task, reference_solver)) for task in tasks]
    start = time.perf_counter()
    for task, ep in episodes:
        verify(task, ep.evidence, ep.answer)
    return (time.perf_counter() - start) * 1000 / len(episodes)


def verify_wire_ms_per_task(backend: SandboxBackend, tasks: list) -> float:
    """As the verifier service sees it: evidence decoded from JSON, so no table is shared by identity."""
    episodes = [(task, run_episode(backend, task, reference_solver)) for task in tasks]
    wired = [(task, Evidence.model_validate_json(ep.evidence.model_dump_json()), ep.answer) for task, ep in episodes]
    start = time.perf_counter()
    for task, evidence, answer in wired:
        verify(task, evidence, answer)
    return (time.perf_counter() - start) * 1000 / len(wired)


def main() -> None:
    _pin_one_core()
    tasks = build_task_suite(run_id="bench")
    backend = SandboxBackend()
    figures = {
        "tool calls/s": tool_calls_per_s(backend, tasks),
        "resets/s": resets_per_s(backend, tasks),
        "cold resets/s": cold_resets_per_s(tasks),
        "verify ms/task": verify_ms_per_task(backend, tasks),
        "verify ms/task (from JSON)": verify_wire_ms_per_task(backend, tasks),
    }
    for name, value in figures.items():
        target = TARGETS[name]
        ok = value <= target if name.startswith("verify") else value >= target
        print(
            f"{name:<27} {value:>12,.3f}   target {'<=' if name.startswith('verify') else '>='} {target:,.0f}   "
            f"{'OK' if ok else 'MISS'}"
        )


if __name__ == "__main__":
    main()
