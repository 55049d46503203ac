"""The reviser's knobs, from ``FLYWHEEL_REVISER_*`` environment variables (or ``flywheel consume`` flags)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from harness_service.revisions import ChangeKind


class ReviserConfig(BaseSettings):
    """``auto_approve``: change kinds published without a human
    (``FLYWHEEL_REVISER_AUTO_APPROVE=add_instruction,set_budgets``); empty = every proposal waits for
    ``flywheel review``. ``min_cluster``: diagnoses of one category in a round before a template fires. ``policy``:
    a model ref that writes instruction text and tool notes (None = templates only)."""

    model_config = SettingsConfigDict(env_prefix="FLYWHEEL_REVISER_", extra="ignore", frozen=True)

    auto_approve: Annotated[tuple[ChangeKind, ...], NoDecode] = ()
    min_cluster: Annotated[int, Field(ge=1)] = 3
    policy: str | None = None

    @field_validator("auto_approve", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value
