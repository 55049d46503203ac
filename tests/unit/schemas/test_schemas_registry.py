"""Registry consistency and the package boundary: nothing can be added half-way without a test failing."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import bus_schemas
from bus_schemas import CURRENT_VERSIONS, EVENT_TYPES, Event
from bus_schemas.upcasters import UPCASTERS, upcaster

pytestmark = pytest.mark.unit

PACKAGE_DIR = Path(bus_schemas.__file__).parent
ALLOWED_THIRD_PARTY = {"pydantic", "orjson", "uuid_utils", "annotated_types", "typing_extensions"}


def _concrete_subclasses(cls: type[Event]) -> set[type[Event]]:
    found: set[type[Event]] = set()
    for sub in cls.__subclasses__():
        if not sub.__name__.startswith("_") and sub.__module__.startswith("bus_schemas."):
            found.add(sub)
        found |= _concrete_subclasses(sub)
    return found


def test_every_event_class_is_registered_under_its_own_name() -> None:
    assert _concrete_subclasses(Event) == set(EVENT_TYPES.values())
    for name, cls in EVENT_TYPES.items():
        assert cls.model_fields["event_type"].default == name
        assert name.endswith(("ed", "Taken", "Built")), f"{name} is not in the past tense"


def test_every_old_version_has_an_upcaster_chain_and_none_dangles() -> None:
    for name, current in CURRENT_VERSIONS.items():
        assert all((name, version) in UPCASTERS for version in range(1, current)), name
    assert all(version < CURRENT_VERSIONS[name] for name, version in UPCASTERS)
    assert CURRENT_VERSIONS["EpisodeEnded"] == 2


def test_registering_an_upcaster_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="already registered"):
        upcaster("EpisodeEnded", 1)(lambda raw: raw)


def test_bus_schemas_imports_only_stdlib_pydantic_orjson_and_uuid_utils() -> None:
    allowed = set(sys.stdlib_module_names) | ALLOWED_THIRD_PARTY | {"bus_schemas"}
    for path in PACKAGE_DIR.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{path.name} imports {roots - allowed}"
