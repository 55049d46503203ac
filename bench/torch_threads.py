"""torch threads of the tiny planner when several processes compute on one machine: why the test suite runs every
process with ``OMP_NUM_THREADS=1``.

Each row runs one or two processes side by side (a pytest worker, a spawned trainer, a rollout worker...), each
doing the tiny planner's two kinds of work with its own torch thread count: SFT steps (batch x 448 tokens,
forward + backward + AdamW) and greedy decoding with a KV cache (the rollout worker's loop; the policy decodes
with one thread). The baseline is measured in the same run: one process alone with torch's default threads
(one per core); the last column is the machine's SFT steps/s against it (0.5x = half the work done).

    .venv/bin/python bench/torch_threads.py [--steps 8] [--tokens 150] [--batch 16]
"""

# ruff: noqa: E402  (HF_HUB_OFFLINE is set before transformers is imported)
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
from dataclasses import dataclass
from time import perf_counter

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rich.console import Console
from rich.table import Table

PROMPT_TOKENS = 448
CORPUS = [
    f"<tool_call>{{'name': 'clock.set_alarm', 'arguments': {{'time': '{h:02d}:{m:02d}'}}}}"
    for h in range(24)
    for m in range(60)
]


@dataclass(frozen=True)
class Job:
    threads: int
    steps: int
    tokens: int
    batch: int


@dataclass(frozen=True)
class Timing:
    train_step_ms: float
    decode_token_ms: float


def _work(job: Job, start: mp.synchronize.Barrier, out: mp.Queue) -> None:
    import torch

    from learner.model import build_tiny_model, train_tokenizer

    torch.set_num_threads(job.threads)
    tokenizer = train_tokenizer(CORPUS, 1024)
    model = build_tiny_model(tokenizer)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = torch.randint(0, len(tokenizer), (job.batch, PROMPT_TOKENS), generator=torch.Generator().manual_seed(0))
    model(input_ids=batch[:1, :16], labels=batch[:1, :16]).loss.backward()  # first-call setup outside the timing
    optimizer.zero_grad()
    start.wait()
    began = perf_counter()
    for _ in range(job.steps):
        model(input_ids=batch, labels=batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    train = (perf_counter() - began) / job.steps
    model.eval()
    began = perf_counter()
    with torch.no_grad():
        past, inputs = None, batch[:1, : PROMPT_TOKENS - job.tokens]
        for _ in range(job.tokens):
            result = model(input_ids=inputs, past_key_values=past, use_cache=True)
            past, inputs = result.past_key_values, result.logits[:, -1:].argmax(-1)
    decode = (perf_counter() - began) / job.tokens
    out.put(Timing(train * 1000, decode * 1000))


def measure(jobs: list[Job]) -> list[Timing]:
    """Runs ``jobs`` as concurrent processes (started together at a barrier); their timings, in order."""
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(len(jobs))
    queues = [ctx.Queue() for _ in jobs]
    procs = [ctx.Process(target=_work, args=(job, start, q)) for job, q in zip(jobs, queues, strict=True)]
    for p in procs:
        p.start()
    timings = [q.get() for q in queues]
    for p in procs:
        p.join()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8, help="SFT steps per process")
    parser.add_argument("--tokens", type=int, default=150, help="decoded tokens per process")
    parser.add_argument("--batch", type=int, default=16, help="examples per SFT step")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    rows = [[cores], [1], [cores, cores], [1, 1], [cores, 1]]  # threads of each process; the first is the baseline
    console = Console(width=140)
    results: list[list[Timing]] = []
    with console.status("measuring") as status:
        for threads in rows:
            status.update(f"measuring {len(threads)} process(es) with {' + '.join(map(str, threads))} threads")
            results.append(measure([Job(n, args.steps, args.tokens, args.batch) for n in threads]))
    base = results[0][0]
    table = Table(
        title=f"tiny planner on {cores} cores: SFT steps (batch {args.batch} x {PROMPT_TOKENS}) and decoded tokens",
        caption="per process: its own times; machine: SFT steps/s of all its processes together, vs the baseline",
    )
    for column in ("processes", "threads", "SFT step ms", "decode ms/token", "machine SFT steps/s", "vs baseline"):
        table.add_column(column)
    base_rate = 1000 / base.train_step_ms
    for i, (threads, timings) in enumerate(zip(rows, results, strict=True)):
        rate = sum(1000 / t.train_step_ms for t in timings)
        table.add_row(
            f"{len(threads)}{' (baseline)' if i == 0 else ''}",
            " + ".join(map(str, threads)),
            " / ".join(f"{t.train_step_ms:.0f}" for t in timings),
            " / ".join(f"{t.decode_token_ms:.2f}" for t in timings),
            f"{rate:.2f}",
            f"{rate / base_rate:.2f}x",
        )
    console.print(table)


if __name__ == "__main__":
    main()
