"""Hypothesis strategies for every event, derived from the pydantic field types and their constraints."""

from __future__ import annotations

import dataclasses
import types
from datetime import datetime, timedelta, timezone
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from hypothesis import strategies as st
from pydantic import AwareDatetime, BaseModel, JsonValue, StringConstraints, ValidationError
from pydantic.fields import FieldInfo

from bus_schemas import OVERALL_WEIGHTS, CategoryScore, Event, overall_score

INT64_MAX = 2**63 - 1
_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_TEXT, children, max_size=3),
    max_leaves=8,
)

aware_datetimes = st.datetimes(
    min_value=datetime(1970, 1, 2),
    max_value=datetime(2200, 1, 1),
    timezones=st.builds(timezone, st.integers(-23 * 60, 23 * 60).map(lambda m: timedelta(minutes=m))),
)


def _constraints(metadata: list[Any]) -> dict[str, Any]:
    """Flatten pydantic/annotated-types constraint objects into one dict."""
    found: dict[str, Any] = {}
    for item in metadata:
        if isinstance(item, FieldInfo):
            found.update(_constraints(item.metadata))
        elif isinstance(item, (StringConstraints, annotated_types.BaseMetadata)):
            found.update(
                {f.name: getattr(item, f.name) for f in dataclasses.fields(item) if getattr(item, f.name) is not None}
            )
    return found


def strategy_for(tp: Any, metadata: list[Any] | tuple[Any, ...] = ()) -> st.SearchStrategy[Any]:
    """A strategy for values of annotation ``tp`` that satisfy the constraints in ``metadata``."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return strategy_for(args[0], [*metadata, *args[1:]])
    limits = _constraints(list(metadata))
    if tp is JsonValue:
        return json_values
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (Union, types.UnionType):
        return st.one_of([strategy_for(arg) for arg in args])
    if origin is list:
        return st.lists(
            strategy_for(args[0]), min_size=limits.get("min_length", 0), max_size=max(3, limits.get("min_length", 0))
        )
    if origin is dict:
        return st.dictionaries(strategy_for(args[0]), strategy_for(args[1]), max_size=3)
    if tp is type(None):
        return st.none()
    if tp is bool:
        return st.booleans()
    if tp is int:
        low = limits.get("ge", -INT64_MAX)
        return st.integers(low, limits.get("le", INT64_MAX))
    if tp is float:
        low = limits.get("ge", limits.get("gt", -1e12))
        return st.floats(low, limits.get("le", 1e12), exclude_min="gt" in limits, allow_nan=False)
    if tp is str:
        if "pattern" in limits:
            return st.from_regex(limits["pattern"], fullmatch=True)
        return st.text(
            st.characters(codec="utf-8"),
            min_size=limits.get("min_length", 0),
            max_size=min(limits.get("max_length", 12), 12),
        )
    if tp is AwareDatetime:
        return aware_datetimes
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return models(tp)
    raise NotImplementedError(f"no strategy for {tp!r}")


def models(cls: type[BaseModel]) -> st.SearchStrategy[Any]:
    """Valid instances of ``cls``; combinations a model validator rejects are filtered out."""
    fields = {}
    for name, info in cls.model_fields.items():
        override = _field_override(cls.__name__, name)
        fields[name] = override if override is not None else strategy_for(info.annotation, info.metadata)
    return st.fixed_dictionaries(fields).map(lambda kwargs: _build(cls, kwargs)).filter(lambda value: value is not None)


def _field_override(model: str, field: str) -> st.SearchStrategy[Any] | None:
    """Fields whose valid values a generic strategy would almost never hit."""
    if (model, field) == ("DevSetEvaluated", "per_category"):
        return st.fixed_dictionaries({name: models(CategoryScore) for name in OVERALL_WEIGHTS})
    return None


def _build(cls: type[BaseModel], kwargs: dict[str, Any]) -> BaseModel | None:
    if cls.__name__ == "DevSetEvaluated":
        kwargs["overall"] = overall_score({name: score.success_rate for name, score in kwargs["per_category"].items()})
    try:
        return cls(**kwargs)
    except ValidationError:
        return None


def events(cls: type[Event]) -> st.SearchStrategy[Event]:
    """Valid events of type ``cls``."""
    return models(cls)
