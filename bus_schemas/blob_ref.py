"""BlobRef: how an event points at a large payload held in the content-addressed blob store."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")

Sha256Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class BlobRef(BaseModel):
    """A content address: the blob's sha256 (lower-case hex), its size in bytes and its media type."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    sha256: Sha256Hex
    size: Annotated[int, Field(ge=0)]
    media_type: Annotated[str, StringConstraints(min_length=1, max_length=255)] = "application/octet-stream"
