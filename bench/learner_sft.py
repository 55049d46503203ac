"""Learner throughput: SFT tokens/s through trl's SFTTrainer vs a plain torch loop on the same model and data,
and one RL step's time split into rollout, scoring and update.

All SFT paths start from the same random init, see the same pre-tokenized examples in batches of the same
size and take the same number of AdamW steps, in one process, twice each in ABC CBA order so that a
change in machine load over the run cancels out (target: trl >= 0.85x the plain loop). The
last row is trl's own loss path (``fused_lm_head=True``: chunked LM head, entropy and accuracy per step).

    .venv/bin/python bench/learner_sft.py [--steps 120] [--rl-steps 2]
"""

# ruff: noqa: E402  (HF_HUB_OFFLINE is set before transformers and trl are imported)
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from time import perf_counter

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from rich.console import Console
from rich.table import Table

from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics
from learner.config import LearnerConfig
from learner.dataset.tokenize import tokenize_examples
from learner.jobs import (
    current_dataset,
    planner_tokenizer,
    rl_harness_version,
    seed_reference_episodes,
    train_tasks,
    window,
)
from learner.model import build_tiny_model
from learner.rl.loop import RlState, run_steps
from learner.rl.services import LocalServices
from learner.sft import SftSettings, train_sft


def plain_loop(model, data, steps: int, batch: int, lr: float, pad_id: int) -> tuple[int, float]:  # noqa: ANN001
    """The baseline: right-padded batches, masked next-token loss, clipped AdamW with cosine decay, no Trainer."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    rows = list(zip(data["input_ids"], data["completion_mask"], strict=True))
    generator = torch.Generator().manual_seed(0)
    order = torch.randperm(len(rows), generator=generator).tolist()
    model.train()
    tokens, started = 0, perf_counter()
    for step in range(steps):
        picked = [rows[order[(step * batch + k) % len(rows)]] for k in range(batch)]
        width = max(len(ids) for ids, _ in picked)
        ids = torch.full((batch, width), pad_id)
        labels = torch.full((batch, width), -100)
        attention = torch.zeros((batch, width), dtype=torch.long)
        for i, (row, mask) in enumerate(picked):
            ids[i, : len(row)] = torch.tensor(row)
            attention[i, : len(row)] = 1
            labels[i, : len(row)] = torch.tensor([t if m else -100 for t, m in zip(row, mask, strict=True)])
            tokens += len(row)
        loss = model(input_ids=ids, attention_mask=attention, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # as the Trainer does (max_grad_norm=1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
    return tokens, perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--rl-steps", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    console = Console()
    config = LearnerConfig(cold_start_seeds=8)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ports = Ports(
            open_bus(f"sqlite:///{root}/bus.db"),
            open_blob_store(f"file:///{root}/blobs"),
            open_registry(f"sqlite:///{root}/mlflow.db"),
        )
        ensure_topics(ports.bus)
        seed_reference_episodes(ports, config, run_id="bench")
        data = current_dataset(ports, config)
        tokenizer = planner_tokenizer(config, data.examples)
        settings = SftSettings(max_steps=args.steps, batch_size=args.batch, logging_steps=args.steps)

        tokenized = tokenize_examples(tokenizer, window(config), data.examples)
        plain_loop(build_tiny_model(tokenizer, config.tiny), tokenized, 10, args.batch, 1e-3, tokenizer.pad_token_id)
        fused_settings = settings.model_copy(update={"fused_lm_head": True})
        runs: dict[str, list[tuple[int, float]]] = {"plain": [], "trl": [], "fused": []}

        def run(path: str) -> None:
            model = build_tiny_model(tokenizer, config.tiny)  # the same init for every path
            if path == "plain":
                runs[path].append(
                    plain_loop(model, tokenized, args.steps, args.batch, settings.learning_rate, tokenizer.pad_token_id)
                )
                return
            chosen = settings if path == "trl" else fused_settings
            result = train_sft(model, tokenizer, data.examples, root / path, settings=chosen, window=window(config))
            runs[path].append((result.tokens, result.wall_time_s))

        for path in ("plain", "trl", "fused", "fused", "trl", "plain"):  # ABC CBA: load drift cancels out
            run(path)
        rates = {p: sum(t for t, _ in r) / sum(s for _, s in r) for p, r in runs.items()}
        table = Table(
            title=(
                f"SFT, {args.steps} steps x {args.batch} examples per run, each path run twice "
                f"(ABC CBA order), {len(data.examples)} distinct examples"
            )
        )
        for column in ("path", "tokens", "seconds", "tokens/s", "vs plain"):
            table.add_column(column)
        labels = {
            "plain": "plain torch loop",
            "trl": "trl SFTTrainer (ours: model loss)",
            "fused": "trl SFTTrainer, trl's chunked LM head + metrics",
        }
        for path, label in labels.items():
            tokens, seconds = sum(t for t, _ in runs[path]), sum(s for _, s in runs[path])
            target = " (target >= 0.85x)" if path == "trl" else ""
            table.add_row(
                label,
                str(tokens),
                f"{seconds:.1f}",
                f"{rates[path]:,.0f}",
                f"{rates[path] / rates['plain']:.2f}x{target}",
            )
        console.print(table)
        model = build_tiny_model(tokenizer, config.tiny)
        train_sft(model, tokenizer, data.examples, root / "rl-start", settings=settings, window=window(config))

        state = RlState(model, tokenizer, checkpoints=root / "rl", window=window(config))
        pool = train_tasks(config, "bench")
        rl = Table(title=f"RL steps through the bus: {config.rl.tasks_per_step} tasks x G={config.rl.group_size}")
        for column in ("step", "rollout s", "scoring s", "update s", "episodes", "samples", "success", "staleness"):
            rl.add_column(column)
        services = LocalServices(ports, root / "services")
        try:
            reports, _ = run_steps(
                state,
                ports,
                pool,
                steps=args.rl_steps,
                settings=config.rl,
                run_id="bench",
                harness_version=rl_harness_version(ports, config, "bench", 0),
                pump=services.pump,
            )
        finally:
            services.close()
        for i, r in enumerate(reports):
            rl.add_row(
                str(i),
                f"{r.rollout_s:.2f}",
                f"{r.scoring_s:.2f}",
                f"{r.update_s:.2f}",
                str(r.episodes),
                str(r.samples),
                f"{r.success_rate:.2f}",
                f"{r.staleness:.0f}",
            )
        console.print(rl)
        ports.close()


if __name__ == "__main__":
    main()
