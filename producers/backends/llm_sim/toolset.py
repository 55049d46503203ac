"""Declared tool sets (name, argument schema, result schema, description) as JSON or YAML files users add to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError as JsonSchemaError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from producers.backends.base import ToolSpec

TOOLSETS_DIR = Path(__file__).with_name("toolsets")


class DeclaredTool(BaseModel):
    """A tool the policy can call and the simulator answers; both schemas must be valid JSON Schemas."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$")
    description: str = Field(min_length=1)
    parameters: dict[str, Any]
    result_schema: dict[str, Any]
    writes: bool = False

    @field_validator("parameters", "result_schema")
    @classmethod
    def _is_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        try:
            Draft202012Validator.check_schema(schema)
        except JsonSchemaError as exc:
            raise ValueError(f"not a valid JSON Schema: {exc.message}") from exc
        return schema

    def spec(self) -> ToolSpec:
        return ToolSpec(
            name=self.name,
            description=self.description,
            parameters=self.parameters,
            result_schema=self.result_schema,
            writes=self.writes,
        )


class Toolset(BaseModel):
    """One file: a named set of declared tools, e.g. ``travel``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    description: str = ""
    tools: list[DeclaredTool] = Field(min_length=1)

    def tool(self, name: str) -> DeclaredTool | None:
        return next((t for t in self.tools if t.name == name), None)


class ToolsetError(ValueError):
    """A tool-set file that cannot be read or does not declare valid tools; names the file."""


def load_toolset(path: Path) -> Toolset:
    try:
        raw = path.read_bytes()
        data = yaml.safe_load(raw) if path.suffix in {".yaml", ".yml"} else orjson.loads(raw)
        toolset = Toolset.model_validate(data)
    except (OSError, yaml.YAMLError, orjson.JSONDecodeError, ValidationError) as exc:
        raise ToolsetError(f"{path}: {exc}") from exc
    names = [t.name for t in toolset.tools]
    if len(set(names)) != len(names):
        raise ToolsetError(f"{path}: a tool name is declared twice")
    return toolset


def load_toolsets(*folders: Path) -> dict[str, Toolset]:
    """Every ``*.json``/``*.yaml``/``*.yml`` under the folders (the bundled one by default); later folders win."""
    found: dict[str, Toolset] = {}
    for folder in folders or (TOOLSETS_DIR,):
        for path in sorted(p for p in folder.glob("*") if p.suffix in {".json", ".yaml", ".yml"}):
            toolset = load_toolset(path)
            found[toolset.name] = toolset
    return found
