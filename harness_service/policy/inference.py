"""The inference port: which engine turns a model version into a policy, chosen by URL like the bus, blobs and registry.

local:[?device=cpu|cuda|cuda:N]   transformers in process (the default); the device is cuda when torch sees one, or cpu
openai+http://host:port/v1[?model=NAME&safe_names=1&native_tools=0&max_tokens=N]
openai+https://host/v1[?...]      any OpenAI-compatible server (``vllm serve``, ``transformers serve``, a hosted API).
                                  The model name sent is the requested policy version (``planner/3``; a checkpoint
                                  directory's path) unless ``?model=`` names one; ``safe_names=1`` sends tool names as
                                  ``^[a-zA-Z0-9_-]{1,64}$`` (``actions.native``); ``native_tools=0`` omits ``tools``.
                                  ``max_tokens`` caps each completion (default 1024): a learner checkpoint's
                                  window decodes at most ``max_new_tokens`` (64) in process, so a paired comparison
                                  with ``local:`` sends that (``flywheel serve model`` serves such checkpoints).
                                  The API key comes from FLYWHEEL_INFERENCE_API_KEY or OPENAI_API_KEY.
                                  ``flywheel serve model NAME@ALIAS`` (``infra.serving``) serves registry versions
                                  under exactly these names and announces each (``ModelServed``).
vllm:                             the vLLM offline engine in process (GPU, extra ``gpu``)

Scripted policies (``scripted:reference``) run in process whatever the port; every policy built here is named by the
version it serves, so episodes record the same ``policy_version`` whichever engine produced them.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

if TYPE_CHECKING:
    from harness_service.policy.base import Policy
    from harness_service.policy.openai_http import OpenAICompatiblePolicy

SCHEMES = ("local:", "openai+http://", "openai+https://", "vllm:")
DEFAULT_INFERENCE = "local:"

Engine = Literal["local", "openai", "vllm"]


class UnsupportedInference(ValueError):
    """An inference URL whose scheme no engine handles, or whose parameters are invalid."""


class InferenceUnavailable(RuntimeError):
    """The chosen engine cannot run on this machine (vLLM not installed, no GPU); the worker stops at start."""


class _LocalParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    device: Annotated[str, Field(pattern=r"^(cpu|cuda(:\d+)?|mps)$")] | None = None


class _OpenAIParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: Annotated[str, Field(min_length=1)] | None = None
    safe_names: bool = False
    native_tools: bool = True
    max_tokens: Annotated[int, Field(ge=1)] | None = None


class _VLLMParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Inference:
    """A parsed inference URL (see the module docstring); ``api_key`` is attached from settings, never the URL."""

    engine: Engine
    url: str = DEFAULT_INFERENCE
    base_url: str | None = None
    device: str | None = None
    served_model: str | None = None
    safe_names: bool = False
    native_tools: bool = True
    max_tokens: int | None = None
    api_key: SecretStr | None = None

    @property
    def serves_remotely(self) -> bool:
        """A server holds the weights: nothing is downloaded from the registry."""
        return self.engine == "openai"

    def resolved_device(self) -> str:
        """The ``local:`` device: the URL's, else cuda when torch sees a GPU, else cpu."""
        if self.device is not None:
            return self.device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def check_available(self) -> None:
        """Fail now, with the fix, when the engine cannot run here (only ``vllm:`` has requirements to check)."""
        if self.engine != "vllm":
            return
        if importlib.util.find_spec("vllm") is None:
            raise InferenceUnavailable(
                "inference vllm: needs the vllm package (install the 'gpu' extra on a CUDA machine); "
                "use --inference local: or openai+http://host:port/v1 instead"
            )
        import torch

        if not torch.cuda.is_available():
            raise InferenceUnavailable(
                "inference vllm: needs a CUDA GPU and torch sees none; use --inference local: on this machine"
            )

    def served_policy(self, served_as: str, label: str) -> OpenAICompatiblePolicy:
        """A client of the server for the version ``label``; the model sent is ``?model=`` or ``served_as``."""
        from harness_service.policy.openai_http import OpenAICompatiblePolicy, OpenAIPolicyConfig

        assert self.base_url is not None, "only openai+http(s) URLs serve remotely"
        config = OpenAIPolicyConfig(
            base_url=self.base_url,
            model=self.served_model or served_as,
            api_key=self.api_key,
            native_tools=self.native_tools,
            safe_function_names=self.safe_names,
            **({"max_tokens": self.max_tokens} if self.max_tokens is not None else {}),
        )
        return OpenAICompatiblePolicy(config, name=label)

    def checkpoint_policy(self, folder: Path, label: str) -> Policy:
        """A policy over a checkpoint directory on this machine (``local:`` or ``vllm:``)."""
        if self.engine == "vllm":
            self.check_available()
            from harness_service.policy.vllm_offline import VLLMPolicy

            return VLLMPolicy(str(folder), name=label)
        if (folder / "prompt_window.json").exists():  # the learner's checkpoints: trained on a prompt window
            from learner.model.policy import PlannerPolicy

            return PlannerPolicy.from_dir(folder, name=label, device=self.resolved_device())
        from harness_service.policy.transformers_local import TransformersPolicy

        return TransformersPolicy.from_dir(folder, name=label, device=self.resolved_device())


LOCAL = Inference("local")


def _params(model: type[BaseModel], query: str, url: str) -> BaseModel:
    try:
        return model.model_validate(dict(parse_qsl(query, keep_blank_values=True)))
    except ValidationError as exc:
        problems = "; ".join(
            f"?{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_input=False, include_url=False)
        )
        known = ", ".join(sorted(model.model_fields)) or "none"
        raise UnsupportedInference(
            f"inference URL {url!r} has invalid parameters ({problems}); known: {known}"
        ) from None


def parse_inference(url: str, api_key: SecretStr | None = None) -> Inference:
    """The engine and its options from ``url``; :class:`UnsupportedInference` names the supported schemes."""
    if url.startswith(("openai+http://", "openai+https://")):
        parts = urlsplit(url.removeprefix("openai+"))
        if not parts.hostname:
            raise UnsupportedInference(f"inference URL {url!r} has no host; e.g. openai+http://127.0.0.1:8000/v1")
        params = _params(_OpenAIParams, parts.query, url)
        assert isinstance(params, _OpenAIParams)
        return Inference(
            "openai",
            url,
            base_url=urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")),
            served_model=params.model,
            safe_names=params.safe_names,
            native_tools=params.native_tools,
            max_tokens=params.max_tokens,
            api_key=api_key,
        )
    for scheme, engine in (("local:", "local"), ("vllm:", "vllm")):
        if url.startswith(scheme):
            path, _, query = url.removeprefix(scheme).partition("?")
            if path:
                raise UnsupportedInference(
                    f"inference URL {url!r}: {scheme} takes no path (the policy version names the checkpoint); "
                    f"write {scheme}" + (f"?{query}" if query else "")
                )
            params = _params(_LocalParams if engine == "local" else _VLLMParams, query, url)
            device = params.device if isinstance(params, _LocalParams) else None
            return Inference("local" if engine == "local" else "vllm", url, device=device)
    raise UnsupportedInference(f"unsupported inference URL {url!r}; supported: {', '.join(s + '...' for s in SCHEMES)}")
