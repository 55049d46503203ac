"""The planner as a harness policy: its prompt rendered and cut by its ``PromptWindow``, greedy or sampled."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from harness_service.actions.native import function_tools
from harness_service.context.messages import ChatMessage, render_messages
from harness_service.policy.base import PolicyOutput, SampledTokens
from learner.model.constrained import ActionConstraint, extra_alphabet
from learner.model.copy_bias import CopyBias
from learner.model.window import PromptWindow, slot_ids
from producers.backends.base import ToolSpec

__all__ = ["PlannerPolicy", "PromptWindow", "sample_key"]

CANDIDATES = 4096
"""Top tokens searched, best first, for one that keeps a constrained action valid (the model's own ranking decides
among them): the whole vocabulary of the tiny model. The top 64 held a valid token in only 60% of the replies of a
cold start's dev episodes (2026-12-03): a schema's next required key is often far down the model's ranking."""


def sample_key(messages_text: str, output: str) -> str:
    """Names one model turn (its rendered context and its output text) in a ``sampled`` record."""
    return hashlib.sha256(f"{messages_text}\x00{output}".encode()).hexdigest()


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
        sampled: MutableMapping[str, list[int]] | None = None,
        inference_threads: int = 1,
    ) -> None:
        """``sampled``, when given, records each turn's generated token ids (``<|im_end|>`` included when it was
        sampled) under ``sample_key``: RL trains on exactly these ids rather than a re-tokenization of the text.
        ``inference_threads``: torch threads while decoding. One token of a small model is too little work to
        share: on a busy 2-core machine two threads made decoding ~10x slower than one (measured)."""
        import torch

        self.name = self.model = name
        self.network = model
        self.tokenizer = tokenizer
        self.window = window or PromptWindow()
        self.temperature = temperature
        self.inference_threads = inference_threads
        self.sampled = sampled
        self._generator = None if seed is None else torch.Generator().manual_seed(seed)
        self._copy_bias = CopyBias(tokenizer, self.window.copy_bias) if self.window.copy_bias > 0 else None
        self._pieces: tuple[list[str], str] | None = None

    @classmethod
    def from_dir(cls, path: Path, *, name: str | None = None, device: str = "cpu", **options: Any) -> PlannerPolicy:
        from learner.model.factory import load_checkpoint

        model, tokenizer = load_checkpoint(path, device)
        options.setdefault("window", PromptWindow.load(path))
        return cls(model, tokenizer, name=name or f"local:{path.name}", **options)

    def with_sampling(self, temperature: float, seed: int | None) -> PlannerPolicy:
        """The same network sampled at ``temperature`` with its own seeded generator (one RL group member)."""
        return PlannerPolicy(
            self.network,
            self.tokenizer,
            name=self.name,
            window=self.window,
            temperature=temperature,
            seed=seed,
            sampled=self.sampled,
            inference_threads=self.inference_threads,
        )

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        return self._generate(messages, None, ())

    def generate_with_tools(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> PolicyOutput:
        """``generate``; the window's ``native_tools`` renders the step's tools as function schemas in the chat
        template's own tool format (as a server would from a request's ``tools``). With ``constrained_actions``, the
        action is held to the step's tools and the action schema (``learner.model.constrained``), greedy or sampled.
        A constrained sample's recorded log-prob is the model's own for the token it took (the constrained
        distribution's would need every token of the vocabulary checked at every step)."""
        functions = function_tools(tools) if self.window.native_tools else []
        if not self.window.constrained_actions:
            return self._generate(messages, None, functions)
        return self._generate(messages, ActionConstraint(tools, self._vocabulary()[1]), functions)

    def _vocabulary(self) -> tuple[list[str], str]:
        """Each token's text, and the characters beyond printable ASCII they hold (built once)."""
        if self._pieces is None:
            pieces = [self.tokenizer.decode([i]) for i in range(len(self.tokenizer))]
            self._pieces = (pieces, extra_alphabet(pieces))
        return self._pieces

    def _generate(
        self,
        messages: Sequence[ChatMessage],
        constraint: ActionConstraint | None,
        functions: Sequence[Mapping[str, Any]],
    ) -> PolicyOutput:
        import torch

        rendered = render_messages(messages)
        ids = self.window.prompt_ids(self.tokenizer, rendered, functions)
        end = self.window.end_id(self.tokenizer)
        self.network.eval()
        threads = torch.get_num_threads()
        torch.set_num_threads(self.inference_threads)
        try:
            with torch.no_grad():
                generated, logprobs = self._decode(ids, end, constraint, rendered)
        finally:
            torch.set_num_threads(threads)
        new = generated[:-1] if generated and generated[-1] == end else generated
        text = self.window.output_text(self.tokenizer, rendered, new)
        if self.sampled is not None:
            self.sampled[sample_key(rendered, text)] = generated
        behaviour = SampledTokens(tuple(ids), tuple(generated), tuple(logprobs), self.temperature)
        return PolicyOutput(text=text, input_tokens=len(ids), output_tokens=len(new), sampled=behaviour)

    def _decode(
        self,
        prompt_ids: list[int],
        end: int,
        constraint: ActionConstraint | None,
        rendered: str,
    ) -> tuple[list[int], list[float]]:
        """Greedy or temperature sampling with a KV cache; stops after ``<|im_end|>`` (kept) or the token budget.

        With the window's ``copy_bias``, tokens that continue a passage of the prompt inside a tool call's string
        argument get that logit bonus first (``learner.model.copy_bias``). A ``constraint`` reads each token as the
        text the harness will get (``_pieces``: a value slot as the value it names in ``rendered``).
        Also returns each sampled token's log-prob under the sampling distribution (softmax of the biased logits /
        temperature; plain softmax when greedy): the behaviour log-probs of RL's importance ratio."""
        import torch

        out: list[int] = []
        logprobs: list[float] = []
        past = None
        inputs = torch.tensor([prompt_ids], device=self.network.device)
        copy = None
        pieces: list[str | None] = []
        slots = self.window.value_slots
        if self._copy_bias is not None:
            marked = sorted(set(prompt_ids) & set(slot_ids(self.tokenizer))) if slots else ()
            copy = self._copy_bias.prompt(prompt_ids, marked)
        for _ in range(self.window.max_new_tokens):
            result = self.network(input_ids=inputs, past_key_values=past, use_cache=True)
            past = result.past_key_values
            logits = result.logits[0, -1].float()
            if copy is not None:
                so_far = self.tokenizer.decode(out, skip_special_tokens=not slots)  # a written slot shows as its token
                if favoured := copy.favoured(so_far):
                    logits[favoured] += copy.bias.bonus
            scaled = torch.log_softmax(logits / self.temperature if self.temperature > 0 else logits, dim=-1)
            if constraint is not None and not constraint.closed:
                pieces = pieces or self._pieces_of(rendered)
                token = self._constrained(self._candidates(scaled), end, constraint, pieces)
            elif constraint is not None:
                token = end
            elif self.temperature > 0:
                token = int(torch.multinomial(scaled.exp().cpu(), 1, generator=self._generator).item())
            else:
                token = int(torch.argmax(logits).item())
            out.append(token)
            logprobs.append(float(scaled[token]))
            if token == end:
                break
            inputs = torch.tensor([[token]], device=self.network.device)
        return out, logprobs

    def _pieces_of(self, rendered: str) -> list[str | None]:
        """Each token's text as the harness gets it in the conversation ``rendered``: with value slots, a slot token
        is the value it names there (None where it names none: it writes nothing, and a constraint never takes it)."""
        pieces: list[str | None] = list(self._vocabulary()[0])
        for token_id, value in self.window.slot_values(self.tokenizer, rendered).items():
            pieces[token_id] = value
        return pieces

    def _candidates(self, scaled: Any) -> Iterator[int]:
        """The next token's candidates in the order decoding would take them: greedy, the top ``CANDIDATES`` by
        score; sampled, draws without replacement from the distribution ``scaled`` (log-probs)."""
        import torch

        if self.temperature <= 0:
            yield from torch.topk(scaled, min(CANDIDATES, scaled.shape[-1])).indices.tolist()
            return
        weights = scaled.exp().cpu()
        for _ in range(min(CANDIDATES, weights.shape[-1])):
            if float(weights.sum()) <= 0.0:
                return
            candidate = int(torch.multinomial(weights, 1, generator=self._generator).item())
            yield candidate
            weights[candidate] = 0.0

    @staticmethod
    def _constrained(
        candidates: Iterator[int], end: int, constraint: ActionConstraint, pieces: Sequence[str | None]
    ) -> int:
        """The first candidate that keeps the reply valid (the end of the turn never inside the action); the first
        candidate, the model's own choice, when none does, which ends the constraint for this reply."""
        first: int | None = None
        for candidate in candidates:
            first = candidate if first is None else first
            if candidate == end:
                if not constraint.inside:
                    return end
                continue
            piece = pieces[candidate]
            if piece is not None and constraint.allows(piece):
                constraint.accept(piece)
                return candidate
        token = end if first is None else first
        constraint.accept(pieces[token] or "")
        return token
