"""One learning-rate schedule over several SFT runs: each run trains a span of a warmup + cosine schedule that is
longer than the run, so the loop's rounds together train one schedule instead of restarting it every round
(``LearnerConfig.schedule_rounds``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ScheduleSpan:
    """Steps ``start`` .. ``start + steps`` of a schedule of ``total`` steps: linear warmup over the first
    ``warmup`` fraction of ``total``, then cosine decay to 0 at ``total`` (transformers' ``cosine``, of which a span
    from 0 to ``total`` is the same schedule). A span that starts later begins with a fresh optimizer, so its LR also
    ramps up over its own first ``rewarmup`` fraction of ``steps``: Adam's first updates are as large as the LR
    whatever the gradient, and the span's LR is the schedule's at ``start``, not at 0."""

    start: int
    steps: int
    total: int
    warmup: float = 0.05
    rewarmup: float = 0.05

    def __post_init__(self) -> None:
        if self.start < 0 or self.steps < 1 or self.start + self.steps > self.total:
            raise ValueError(f"span {self.start}..{self.start + self.steps} is not within a schedule of {self.total}")

    def factor(self, step: int) -> float:
        """The LR multiplier at this run's optimizer step ``step`` (0-based)."""
        at = self.start + step
        warm = math.ceil(self.total * self.warmup)
        if at < warm:
            value = at / max(1, warm)
        else:
            value = max(0.0, 0.5 * (1.0 + math.cos(math.pi * (at - warm) / max(1, self.total - warm))))
        ramp = math.ceil(self.steps * self.rewarmup) if self.start > 0 else 0
        return value * min(1.0, (step + 1) / ramp) if ramp else value

    def scheduler(self, optimizer: Any) -> Any:
        from torch.optim.lr_scheduler import LambdaLR

        return LambdaLR(optimizer, self.factor)
