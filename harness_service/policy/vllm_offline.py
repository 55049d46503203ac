"""The vLLM offline engine as a policy (GPU only, extra ``gpu``); ``bench/vllm_check.py`` exercises it on a GPU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness_service.context.messages import ChatMessage
from harness_service.policy.base import PolicyOutput
from harness_service.policy.thinking import thinking_part


class VLLMPolicy:
    """Chat generation with ``vllm.LLM``; token counts come from the engine's own token ids."""

    def __init__(
        self,
        model_path: str,
        *,
        name: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        **engine: Any,
    ) -> None:
        try:
            from vllm import LLM, SamplingParams
        except ImportError as exc:
            raise ImportError("VLLMPolicy needs vLLM and a GPU: install the 'gpu' extra") from exc
        self.model = model_path
        self.name = name or f"vllm:{model_path}"
        self._llm = LLM(model=model_path, **engine)
        self._params = SamplingParams(temperature=temperature, max_tokens=max_tokens)
        self._tokenizer = self._llm.get_tokenizer()

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        request = [m.model_dump() for m in messages]
        result = self._llm.chat(request, self._params, use_tqdm=False)[0]
        completion = result.outputs[0]
        thinking = thinking_part(completion.text)
        return PolicyOutput(
            text=completion.text,
            input_tokens=len(result.prompt_token_ids or []),
            output_tokens=len(completion.token_ids),
            thinking_tokens=len(self._tokenizer.encode(thinking, add_special_tokens=False)) if thinking else 0,
        )
