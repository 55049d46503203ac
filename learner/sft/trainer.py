"""Runs trl's SFTTrainer on pre-tokenized examples (loss on completion tokens only) and saves the checkpoint."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from learner.dataset.build import Example
from learner.dataset.tokenize import LOSS_WEIGHT, tokenize_examples
from learner.model.factory import save_checkpoint
from learner.model.lora import LoraSettings, base_network, plain_model
from learner.model.policy import PromptWindow
from learner.sft.config import SftSettings
from learner.sft.merge import ParentMerge
from learner.sft.schedule import ScheduleSpan

log = logging.getLogger("flywheel.learner.sft")

StepCallback = Callable[[int, int], None]
"""Called with (step, total steps) after each optimizer step, e.g. to drive a progress bar."""


@dataclass(frozen=True)
class SftResult:
    """Where the checkpoint went and what the run measured."""

    checkpoint: Path
    steps: int
    train_loss: float
    tokens: int
    wall_time_s: float
    history: tuple[tuple[int, dict[str, float]], ...] = field(default=())
    """(optimizer step, {loss, learning_rate, grad_norm, tokens_per_s, tokens_seen}) at every logging step."""

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.wall_time_s if self.wall_time_s > 0 else 0.0

    def metrics(self) -> dict[str, float]:
        return {
            "train_loss": self.train_loss,
            "train_steps": float(self.steps),
            "train_tokens": float(self.tokens),
            "tokens_per_s": self.tokens_per_s,
            "wall_time_s": self.wall_time_s,
        }


def _progress_callback(on_step: StepCallback) -> Any:
    from transformers import TrainerCallback

    class _Progress(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            on_step(state.global_step, state.max_steps)

    return _Progress()


def _log_callback() -> Any:
    """Each logging step's values as a log record (what transformers' PrinterCallback would print() raw)."""
    from transformers import TrainerCallback

    class _Log(TrainerCallback):
        def on_log(
            self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any
        ) -> None:
            if logs:
                shown = " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in logs.items())
                log.info("step %d/%d: %s", state.global_step, state.max_steps, shown)

    return _Log()


HISTORY_KEYS = {
    "loss": "loss",
    "learning_rate": "learning_rate",
    "grad_norm": "grad_norm",
    "train_tokens_per_second": "tokens_per_s",  # non-padding tokens per second since the run began
    "num_input_tokens_seen": "tokens_seen",
}
"""What each logging step records (the trainer's name -> ours)."""


def loss_history(log_history: Sequence[dict[str, Any]]) -> tuple[tuple[int, dict[str, float]], ...]:
    """The per-logging-step entries of a trainer's ``state.log_history`` (the final summary entry is left out)."""
    return tuple(
        (
            int(entry["step"]),
            {ours: float(entry[k]) for k, ours in HISTORY_KEYS.items() if isinstance(entry.get(k), (int, float))},
        )
        for entry in log_history
        if "loss" in entry and "step" in entry
    )


def _deadline_callback(seconds: float) -> Any:
    from transformers import TrainerCallback

    class _Deadline(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.until = perf_counter() + seconds

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if perf_counter() >= self.until:
                control.should_training_stop = True

    return _Deadline()


def _trainer_class(fused_lm_head: bool) -> Any:
    """trl's SFTTrainer, or a subclass that takes the model's own loss over full logits.

    trl computes the loss with a chunked (tiled, Python-looped) LM head plus per-step entropy and token
    accuracy; with a 1k-token vocabulary on CPU that was ~20% of every step, and the logits it avoids are small.
    """
    from transformers import Trainer
    from trl import SFTTrainer

    if fused_lm_head:
        return SFTTrainer

    class ModelLossSFTTrainer(SFTTrainer):
        _unweighted = False
        """Set once the value weights were dropped (and said so in the log) for a model without ``.lm_head``."""

        def _set_signature_columns_if_needed(self) -> None:
            super()._set_signature_columns_if_needed()
            columns: list[str] = list(self._signature_columns or [])
            if LOSS_WEIGHT not in columns:
                self._signature_columns = [*columns, LOSS_WEIGHT]  # type: ignore[assignment]  # trl types it None

        def compute_loss(
            self, model: Any, inputs: Any, return_outputs: bool = False, num_items_in_batch: Any = None
        ) -> Any:
            network = base_network(model)  # a LoRA model's adapters are layers inside it
            if return_outputs or not hasattr(network, "model") or not hasattr(network, "lm_head"):
                if inputs.pop(LOSS_WEIGHT, None) is not None and not (return_outputs or self._unweighted):
                    self._unweighted = True
                    log.warning("%s has no .model/.lm_head: trained on its own unweighted loss", type(network))
                return Trainer.compute_loss(self, model, inputs, return_outputs, num_items_in_batch)
            return completion_loss(network, inputs, num_items_in_batch)

    return ModelLossSFTTrainer


def _spanned(trainer_class: Any, span: ScheduleSpan) -> Any:
    """``trainer_class`` whose LR follows ``span`` of a longer schedule instead of its own cosine."""

    class SpannedTrainer(trainer_class):
        def create_scheduler(self, num_training_steps: int, optimizer: Any = None) -> Any:
            if getattr(self, "lr_scheduler", None) is None:
                self.lr_scheduler = span.scheduler(optimizer or self.optimizer)
            return self.lr_scheduler

    return SpannedTrainer


def schedule_span(settings: SftSettings) -> ScheduleSpan | None:
    """The span of a longer schedule ``settings`` train (``schedule_total``), or None for the run's own."""
    if settings.schedule_total is None:
        return None
    if settings.max_steps <= 0:
        raise ValueError("schedule_total needs max_steps: the span's length")
    fraction = settings.warmup_steps if settings.warmup_steps < 1 else settings.warmup_steps / settings.schedule_total
    return ScheduleSpan(settings.schedule_start, settings.max_steps, settings.schedule_total, fraction, fraction)


def completion_loss(model: Any, inputs: dict[str, Any], num_items_in_batch: Any = None) -> Any:
    """Next-token cross-entropy on the labelled (completion) positions only, with the LM head applied to those
    positions alone: the prompt's hidden states never become logits. The same loss as the model's own over full
    logits (a test checks it), at a fraction of the LM head's cost when most tokens are prompt.
    With a ``loss_weight`` column (``SftSettings.value_weight``): the weighted mean over those positions."""
    import torch

    labels = inputs["labels"][:, 1:]
    keep = labels != -100
    if hasattr(model, "completion_logits"):  # a copy head mixes the LM head with copies (``learner.model.copy_head``)
        logits = model.completion_logits(inputs, keep)
    else:
        body = {k: v for k, v in inputs.items() if k in ("input_ids", "attention_mask", "position_ids")}
        hidden = model.model(**body).last_hidden_state[:, :-1]
        logits = model.lm_head(hidden[keep]).float()
    if LOSS_WEIGHT in inputs:
        weights = inputs[LOSS_WEIGHT][:, 1:][keep].to(logits.dtype)
        losses = torch.nn.functional.cross_entropy(logits, labels[keep], reduction="none")
        return (losses * weights).sum() / weights.sum().clamp(min=1e-6)
    loss = torch.nn.functional.cross_entropy(logits, labels[keep], reduction="sum")
    count = num_items_in_batch if num_items_in_batch is not None else keep.sum()
    return loss / torch.as_tensor(count, device=loss.device).clamp(min=1)


def _weight_collator(pad_token_id: int) -> Any:
    """trl's collator that also pads the ``loss_weight`` column (with 0, as the labels are padded with -100)."""
    import torch
    from torch.nn.utils.rnn import pad_sequence
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    class _WeightCollator(DataCollatorForLanguageModeling):
        def torch_call(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
            output = super().torch_call(examples)
            weights = [torch.tensor(e[LOSS_WEIGHT], dtype=torch.float32) for e in examples]
            output[LOSS_WEIGHT] = pad_sequence(weights, batch_first=True, padding_value=0.0)
            return output

    return _WeightCollator(pad_token_id=pad_token_id)


def sft_arguments(settings: SftSettings, output_dir: Path) -> Any:
    """trl's SFTConfig with bf16 and gradient checkpointing set explicitly (trl enables both by default).

    Batches are drawn at random. Tried 2026-12-06: ``train_sampling_strategy="group_by_length"`` (batches of
    similar length, less padding) on the main job's seed-0 round-0 dataset, 1,200 steps: 367 s instead of 555 s,
    but the batches of one length are the same kind of step (first steps with first steps), and the model learned
    far less: final loss 0.28 vs 0.15, 52 vs 121 of 349 teacher-forced dev reference steps exact, dev 0.013 vs
    0.050, test 0.000 vs 0.038."""
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(output_dir),
        num_train_epochs=settings.epochs,
        max_steps=settings.max_steps,
        per_device_train_batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=settings.warmup_steps,
        weight_decay=settings.weight_decay,
        seed=settings.seed,
        data_seed=settings.seed,
        bf16=settings.bf16,
        gradient_checkpointing=settings.gradient_checkpointing,
        completion_only_loss=True,
        packing=settings.packing,
        max_length=None,
        logging_steps=settings.logging_steps,
        include_num_input_tokens_seen="non_padding",  # tokens seen and tokens/s at every logging step
        save_strategy="no",
        report_to="none",
        dataloader_num_workers=settings.dataloader_workers,
        disable_tqdm=True,
    )


def train_sft(
    model: Any,
    tokenizer: Any,
    examples: Sequence[Example],
    output_dir: Path,
    *,
    settings: SftSettings | None = None,
    window: PromptWindow | None = None,
    on_step: StepCallback | None = None,
    time_budget_s: float | None = None,
    lora: LoraSettings | None = None,
    merge: ParentMerge | None = None,
) -> SftResult:
    """Fine-tune ``model`` in place on ``examples`` and save model + tokenizer to ``output_dir``.

    ``time_budget_s`` stops after the step that crosses it (the LR schedule still assumes the full run).
    ``lora``: train low-rank adapters only (trl's ``peft_config``), merged into ``model`` before it is saved.
    ``merge``: the trained weights are interpolated with the parent's (``learner.sft.merge``) before saving.
    """
    if not examples:
        raise ValueError("no training examples: the dataset is empty (nothing admitted or nothing re-rendered)")
    settings = settings or SftSettings()
    window = window or PromptWindow()
    if settings.value_weight != 1.0 and settings.fused_lm_head:
        raise ValueError("value_weight needs the model's own loss: set fused_lm_head off")
    data = tokenize_examples(tokenizer, window, examples, value_weight=settings.value_weight)
    tokens = sum(len(ids) for ids in data["input_ids"])
    trainer_class = _trainer_class(settings.fused_lm_head)
    span = schedule_span(settings)
    if span is not None:
        trainer_class = _spanned(trainer_class, span)
    with tempfile.TemporaryDirectory(prefix="sft-") as scratch:
        trainer = trainer_class(
            model=model,
            args=sft_arguments(settings, Path(scratch)),
            train_dataset=data,
            data_collator=_weight_collator(tokenizer.pad_token_id) if settings.value_weight != 1.0 else None,
            processing_class=tokenizer,
            peft_config=None if lora is None else lora.peft_config(),
            callbacks=[
                *([_progress_callback(on_step)] if on_step else []),
                *([_deadline_callback(time_budget_s)] if time_budget_s is not None else []),
            ]
            or None,
        )
        from transformers import PrinterCallback

        trainer.remove_callback(PrinterCallback)  # it print()s each log dict; they go to the log and MLflow instead
        trainer.add_callback(_log_callback())
        started = perf_counter()
        output = trainer.train()
        history = loss_history(trainer.state.log_history)
        wall = perf_counter() - started
    epochs = output.metrics.get("epoch", settings.epochs)
    trained = plain_model(trainer.model, keep_adapters=False)
    if merge is not None:
        merge.apply(trained)
        log.info("merged with the parent: %.2f of each weight is the parent's", merge.weight)
    save_checkpoint(trained, tokenizer, output_dir)
    window.save(output_dir)
    return SftResult(output_dir, output.global_step, float(output.training_loss), int(tokens * epochs), wall, history)
