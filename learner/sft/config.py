"""Every knob of an SFT run; defaults fit a tiny model on two CPU cores in about a minute."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class SftSettings(BaseModel):
    """Small by default; a GPU run raises ``batch_size`` and sets ``bf16``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    epochs: Annotated[float, Field(gt=0)] = 3.0
    max_steps: int = -1
    """Stops after this many optimizer steps when > 0 (overrides ``epochs``)."""
    batch_size: Annotated[int, Field(ge=1)] = 16
    learning_rate: Annotated[float, Field(gt=0)] = 2e-3
    warmup_steps: Annotated[float, Field(ge=0)] = 0.05
    """A fraction of the run when < 1 (transformers 5 dropped ``warmup_ratio``); with ``schedule_total``, a fraction
    of the whole schedule, and of the run again for the ramp of a span that starts later (``ScheduleSpan``)."""
    schedule_total: Annotated[int, Field(ge=1)] | None = None
    """The length of the LR schedule this run trains a span of (``learner.sft.schedule``), with ``max_steps`` > 0;
    None: the run's own schedule (warmup + cosine over ``max_steps``)."""
    schedule_start: Annotated[int, Field(ge=0)] = 0
    """With ``schedule_total``: the schedule's step this run starts at."""
    weight_decay: Annotated[float, Field(ge=0)] = 0.0
    """Tried 2026-12-06 against the tiny model memorising the train pools' values: 0.1 on the main job's seed-0
    round-0 dataset (value-weighted, 1,200 steps): exact teacher-forced dev steps 127 -> 120 of 349, wrong values
    130 -> 136, dev 0.081 -> 0.050, test 0.038 both (the 0.0 checkpoint evaluated in the same session)."""
    seed: int = 0
    bf16: bool = False
    """Off on CPU: trl would otherwise turn it on. Tried on a 2-core AVX-512 BF16 CPU with ``use_cpu`` (2026-12-06,
    60 steps of the tiny model): the same losses to the last digit and the same step time, so it had no effect."""
    gradient_checkpointing: bool = False
    """Off for tiny models: recomputation costs more than it saves."""
    packing: bool = False
    fused_lm_head: bool = False
    """trl's chunked LM head and its entropy/accuracy metrics: for large vocabularies (a Qwen checkpoint on a GPU).
    Off, the model's own loss over full logits is used, which is faster for the tiny CPU model."""
    value_weight: Annotated[float, Field(gt=0)] = 1.0
    """Loss weight of the tokens of a tool call's argument values (``learner.dataset.value_weights``) relative to
    the rest of the output; the loss is the weighted mean. Needs the model's own loss (``fused_lm_head`` off); a model
    without ``.model`` and ``.lm_head`` trains on its own unweighted loss, and the log says so."""
    logging_steps: Annotated[int, Field(ge=1)] = 10
    dataloader_workers: Annotated[int, Field(ge=0)] = 0
