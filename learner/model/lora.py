"""LoRA (peft) for a checkpoint a user brings: the adapter's settings, and the plain model every loader reads.

Checkpoints are always saved merged (``plain_model``): rollout workers, ``flywheel serve model`` and the registry
see an ordinary Hugging Face directory whether a version was trained fully or with LoRA.
"""

from __future__ import annotations

import copy
import sys
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field


class LoraSettings(BaseModel):
    """Low-rank adapters on every linear layer (peft's ``all-linear``) unless ``target_modules`` names them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rank: Annotated[int, Field(ge=1)] = 16
    alpha: Annotated[int, Field(ge=1)] = 32
    dropout: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.05
    target_modules: str | tuple[str, ...] = "all-linear"

    def peft_config(self) -> Any:
        from peft import LoraConfig

        targets = self.target_modules if isinstance(self.target_modules, str) else list(self.target_modules)
        return LoraConfig(
            r=self.rank, lora_alpha=self.alpha, lora_dropout=self.dropout, target_modules=targets, task_type="CAUSAL_LM"
        )


def with_lora(model: Any, settings: LoraSettings) -> Any:
    """``model`` with trainable adapters and every base weight frozen (peft's ``get_peft_model``)."""
    from peft import get_peft_model

    return get_peft_model(model, settings.peft_config())


def is_lora(model: Any) -> bool:
    """Whether ``model`` carries peft adapters; without peft imported none can (peft takes seconds to import, and
    every checkpoint save asks)."""
    if "peft" not in sys.modules:
        return False
    from peft import PeftModel

    return isinstance(model, PeftModel)


def plain_model(model: Any, *, keep_adapters: bool = True) -> Any:
    """The model as an ordinary transformers model: a LoRA model's adapters merged into its weights. With
    ``keep_adapters`` (training goes on) the merge happens on a copy; without, in place (cheaper; the adapters
    are gone afterwards)."""
    if not is_lora(model):
        return model
    return (copy.deepcopy(model) if keep_adapters else model).merge_and_unload()


def base_network(model: Any) -> Any:
    """The transformers model under a LoRA wrapper (adapter layers included), or ``model`` itself."""
    return model.get_base_model() if is_lora(model) else model
