"""In-process generation with a local transformers checkpoint (the CPU default); nothing is downloaded."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness_service.context.messages import ASSISTANT_START, ChatMessage, render_messages
from harness_service.policy.base import PolicyOutput
from harness_service.policy.thinking import thinking_part


class TransformersPolicy:
    """Prompts with the harness's own ChatML rendering, so rollouts and training see byte-identical text."""

    def __init__(
        self, model: Any, tokenizer: Any, *, name: str, max_new_tokens: int = 256, temperature: float = 0.0
    ) -> None:
        self.name = self.model = name
        self._model = model.eval()
        self._tokenizer = tokenizer
        self._max_new_tokens = max_new_tokens
        self._temperature = temperature

    @classmethod
    def from_dir(
        cls, path: Path, *, name: str | None = None, device: str = "cpu", **options: Any
    ) -> TransformersPolicy:
        """Load a checkpoint directory (model + tokenizer) with ``local_files_only``."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        # transformers annotates .to() through a decorator that mypy reads as taking the model first
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).to(device)  # type: ignore[arg-type]
        return cls(model, tokenizer, name=name or f"local:{path.name}", **options)

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        import torch

        prompt = render_messages(messages) + ASSISTANT_START
        ids = self._tokenizer(prompt, return_tensors="pt", add_special_tokens=False).input_ids.to(self._model.device)
        sampling = (
            {"do_sample": True, "temperature": self._temperature} if self._temperature > 0 else {"do_sample": False}
        )
        end = self._tokenizer.convert_tokens_to_ids("<|im_end|>")
        with torch.no_grad():
            out = self._model.generate(
                ids,
                max_new_tokens=self._max_new_tokens,
                eos_token_id=end,
                pad_token_id=self._tokenizer.pad_token_id if self._tokenizer.pad_token_id is not None else end,
                **sampling,
            )
        new = out[0, ids.shape[1] :]
        text = self._tokenizer.decode(new, skip_special_tokens=True)
        thinking = thinking_part(text)
        return PolicyOutput(
            text=text,
            input_tokens=int(ids.shape[1]),
            output_tokens=int(new.shape[0]),
            thinking_tokens=len(self._tokenizer.encode(thinking, add_special_tokens=False)) if thinking else 0,
        )
