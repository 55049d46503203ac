"""A consumer's own model (the diagnoser's assist, the reviser's writer): a model ref turned into a policy by the
inference port, exactly as the rollout workers turn the policy versions they are asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_service.policy.base import Policy
from harness_service.policy.inference import Inference


def model_policy(ref: str, registry: Any, bus: Any, cache_dir: Path, inference: Inference | None = None) -> Policy:
    """The policy of ``ref`` (``models:/name@alias``, ``name/N`` or ``local:/path``), served by ``inference``
    (default: the process's inference port, ``FLYWHEEL_INFERENCE``)."""
    from infra.config import load_settings
    from producers.rollout.versions import VersionResolver

    port = inference if inference is not None else load_settings().inference_port()
    return VersionResolver(registry, bus, cache_dir, port).policy(ref)(None)  # type: ignore[arg-type]  # no task
