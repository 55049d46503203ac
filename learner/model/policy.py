"""The planner as a harness policy: ChatML prompt, left-truncated to a fixed token window, greedy or sampled."""

from __future__ import annotations

from collections.abc import Sequence
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness_service.context.messages import ChatMessage, render_messages
from harness_service.policy.base import PolicyOutput

ASSISTANT_PREFIX = "<|im_start|>assistant\n"
END = "<|im_end|>"
WINDOW_FILE = "prompt_window.json"


@dataclass(frozen=True)
class PromptWindow:
    """The newest ``max_prompt_tokens`` of a prompt are kept: a tiny model cannot attend to a 4k-token system text.

    Training examples and rollouts use the same window, so the model is trained on exactly what it sees.
    """

    max_prompt_tokens: int = 128
    max_new_tokens: int = 64

    def save(self, checkpoint: Path) -> None:
        """Stored beside the weights, so any loader serves the model with the window it was trained with."""
        (checkpoint / WINDOW_FILE).write_text(json.dumps(asdict(self)))

    @classmethod
    def load(cls, checkpoint: Path) -> PromptWindow:
        path = checkpoint / WINDOW_FILE
        return cls(**json.loads(path.read_text())) if path.is_file() else cls()

    def prompt_ids(self, tokenizer: Any, messages_text: str) -> list[int]:
        ids = tokenizer.encode(messages_text + ASSISTANT_PREFIX, add_special_tokens=False)
        return ids[-self.max_prompt_tokens :]

    def completion_ids(self, tokenizer: Any, completion: str) -> list[int]:
        return tokenizer.encode(completion + END, add_special_tokens=False)


class PlannerPolicy:
    """A ``Policy`` over an in-process transformers model; ``name`` is the registry version it serves."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str,
        window: PromptWindow | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> None:
        import torch

        self.name = self.model = name
        self.network = model
        self.tokenizer = tokenizer
        self.window = window or PromptWindow()
        self.temperature = temperature
        self._generator = None if seed is None else torch.Generator().manual_seed(seed)

    @classmethod
    def from_dir(cls, path: Path, *, name: str | None = None, **options: Any) -> PlannerPolicy:
        from learner.model.factory import load_checkpoint

        model, tokenizer = load_checkpoint(path)
        options.setdefault("window", PromptWindow.load(path))
        return cls(model, tokenizer, name=name or f"local:{path.name}", **options)

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        import torch

        ids = self.window.prompt_ids(self.tokenizer, render_messages(messages))
        prompt = torch.tensor([ids], device=self.network.device)
        end = self.tokenizer.convert_tokens_to_ids(END)
        self.network.eval()
        with torch.no_grad():
            new = self._decode(prompt, end)
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        return PolicyOutput(text=text, input_tokens=len(ids), output_tokens=len(new))

    def _decode(self, prompt: Any, end: int) -> list[int]:
        """Greedy or temperature sampling with a KV cache; stops at ``<|im_end|>``."""
        import torch

        out: list[int] = []
        past = None
        inputs = prompt
        for _ in range(self.window.max_new_tokens):
            result = self.network(input_ids=inputs, past_key_values=past, use_cache=True)
            past = result.past_key_values
            logits = result.logits[0, -1].float()
            if self.temperature > 0:
                probs = torch.softmax(logits / self.temperature, dim=-1)
                token = int(torch.multinomial(probs.cpu(), 1, generator=self._generator).item())
            else:
                token = int(torch.argmax(logits).item())
            if token == end:
                break
            out.append(token)
            inputs = torch.tensor([[token]], device=prompt.device)
        return out
