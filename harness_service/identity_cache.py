"""Values derived once per live object, by identity: for frozen inputs that recur episode after episode."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityCache(Generic[K, V]):
    """``derive(obj)``, computed on the first call for ``obj`` and forgotten when ``obj`` is garbage-collected.

    For objects that are immutable in practice but not hashable (frozen pydantic models holding dicts), such as
    the tool specs a backend hands out for every episode. ``derive`` must be a pure function of the object."""

    def __init__(self, derive: Callable[[K], V]) -> None:
        self._derive = derive
        self._values: dict[int, tuple[weakref.ref[K], V]] = {}

    def __call__(self, obj: K) -> V:
        key = id(obj)
        cached = self._values.get(key)
        if cached is not None and cached[0]() is obj:
            return cached[1]
        value = self._derive(obj)
        values = self._values
        self._values[key] = (weakref.ref(obj, lambda _: values.pop(key, None)), value)
        return value
