"""A continued run's result merged with the model it started from: ``(1 - w) * trained + w * parent``, weight by
weight (WiSE-FT's interpolation between a fine-tuned model and its starting point). The loop's later rounds train
each model on little new data over many epochs of the old; the merge keeps what the parent solved that the
continued run forgot, and keeps most of what it learned (measured in ``infra.loop.config.loop_learner``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ParentMerge:
    """The parent's floating-point weights (a snapshot taken before training) and the share ``weight`` of them the
    merged model keeps (0 < weight < 1)."""

    state: dict[str, Any]
    weight: float

    def __post_init__(self) -> None:
        if not 0.0 < self.weight < 1.0:
            raise ValueError(f"parent merge weight must be in (0, 1), got {self.weight}")

    @classmethod
    def of(cls, model: Any, weight: float) -> ParentMerge:
        """Snapshot ``model``'s weights now, before a continued run changes them."""
        return cls({k: v.detach().clone() for k, v in model.state_dict().items() if v.is_floating_point()}, weight)

    def apply(self, model: Any) -> None:
        """Move every floating-point weight of ``model`` (an ordinary transformers model: LoRA adapters merged) to
        the interpolation, in place. The parent must have the same architecture: a missing or reshaped weight is an
        error, not a partial merge."""
        import torch

        trained = {k: v for k, v in model.state_dict().items() if v.is_floating_point()}
        if trained.keys() != self.state.keys():
            raise ValueError(
                f"parent and trained model differ in weights: {sorted(trained.keys() ^ self.state.keys())[:5]}"
            )
        moved: set[int] = set()  # tied weights (an LM head sharing the embedding) are one tensor: move it once
        with torch.no_grad():
            for name, value in trained.items():
                parent = self.state[name]
                if parent.shape != value.shape:
                    raise ValueError(f"weight {name}: parent {tuple(parent.shape)} vs trained {tuple(value.shape)}")
                if value.data_ptr() in moved:
                    continue
                moved.add(value.data_ptr())
                value.lerp_(parent.to(device=value.device, dtype=value.dtype), self.weight)
