"""Cost estimates from a configurable price table (USD per million tokens)."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field


class Price(BaseModel):
    """USD per million input and output tokens; thinking tokens are billed as output."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_mtok: float = Field(ge=0.0)
    output_per_mtok: float = Field(ge=0.0)


class PriceTable(BaseModel):
    """Prices by model name; a model not in the table has no estimate (``None``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prices: Mapping[str, Price] = Field(default_factory=dict)

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        price = self.prices.get(model)
        if price is None:
            return None
        return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1_000_000
