"""Environments as plugins: backends, their judges and extra state predicates, found through Python entry points.

A distribution adds an environment by declaring entry points (the built-ins declare theirs in this project's
``pyproject.toml`` the same way); nothing else names a concrete backend. The three groups:

- ``planner_flywheel.backends``: ``name = "pkg.module:Factory"``, a callable that makes a
  :class:`~producers.backends.base.Backend` and carries the backend's ``name`` (the entry point's) and ``trust``;
- ``planner_flywheel.judges``: ``name = "pkg.module:check"``, keyed by backend name, a function
  ``(task, evidence, answer) -> VerificationResult``; a backend without one gets "no verifier" verdicts;
- ``planner_flywheel.predicates``: ``"app.name" = "pkg.module:fn"``, a state predicate
  ``(EvidenceView, params) -> (passed, detail)`` for ``StateCriterion.predicate``.

Entry points are listed once per process, each loaded on first use and kept. A plugin that fails to import or
declares itself wrongly raises :class:`PluginError` naming it and its entry point; the others load regardless.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from typing import Any, Protocol, cast, get_args

from bus_schemas.events.tasks import BACKEND_NAME_PATTERN
from producers.backends.base import Backend, TrustLevel

BACKENDS = "planner_flywheel.backends"
JUDGES = "planner_flywheel.judges"
PREDICATES = "planner_flywheel.predicates"
_log = logging.getLogger("flywheel.plugins")
SUITES = "planner_flywheel.suites"  # external benchmark suites: flywheel suites check, LoopConfig.external_suites
GROUPS = (BACKENDS, JUDGES, PREDICATES)
BACKEND_NAME = re.compile(BACKEND_NAME_PATTERN)
"""What a backend may be called: the pattern that validates ``backend`` on events."""


class BackendFactory(Protocol):
    """What a ``planner_flywheel.backends`` entry point names: usually the backend class itself."""

    name: str
    trust: TrustLevel

    def __call__(self, *args: Any, **kwargs: Any) -> Backend: ...


class PluginError(RuntimeError):
    """A plugin that cannot be used: the message names the plugin, its entry point and its distribution."""


@dataclass(frozen=True)
class BackendInfo:
    """One installed backend as ``flywheel backends list`` shows it."""

    name: str
    trust: str | None  # None when the factory could not be loaded
    provider: str  # the distribution (name and version) that declares the entry point
    entry_point: str
    judged: bool
    error: str | None = None


def provider(ep: metadata.EntryPoint) -> str:
    dist = ep.dist
    return f"{dist.name} {dist.version}" if dist is not None else "(unknown distribution)"


def _describe(ep: metadata.EntryPoint) -> str:
    return f"{ep.group} entry point {ep.name} = {ep.value!r} from {provider(ep)}"


@cache
def entry_points(group: str) -> Mapping[str, metadata.EntryPoint | PluginError]:
    """The group's entry points by name; a name two distributions claim is a :class:`PluginError` instead."""
    found: dict[str, metadata.EntryPoint | PluginError] = {}
    for ep in metadata.entry_points(group=group):
        seen = found.get(ep.name)
        if seen is None:
            found[ep.name] = ep
        else:
            first = seen if isinstance(seen, PluginError) else _describe(seen)
            found[ep.name] = PluginError(f"plugin {ep.name!r} is registered twice: {first}; {_describe(ep)}")
    return found


_loaded: dict[tuple[str, str], Any] = {}


def load(group: str, name: str) -> Any | None:
    """The object the entry point names, imported on first use; None when no plugin has that name."""
    key = (group, name)
    if key in _loaded:
        return _loaded[key]
    ep = entry_points(group).get(name)
    if ep is None:
        return None
    if isinstance(ep, PluginError):
        raise ep
    try:
        obj = ep.load()
    except Exception as exc:  # any failure of a third-party import is that plugin's, reported as such
        raise PluginError(f"plugin {name!r} failed to load ({_describe(ep)}): {type(exc).__name__}: {exc}") from exc
    if not callable(obj):
        raise PluginError(f"plugin {name!r} is not callable ({_describe(ep)})")
    _loaded[key] = obj
    return obj


def reset() -> None:
    """Forget what was discovered and loaded (tests that install plugins, a process that installed some)."""
    entry_points.cache_clear()
    _loaded.clear()


def backend_names() -> list[str]:
    return sorted(entry_points(BACKENDS))


def backend_factory(name: str) -> BackendFactory:
    """The factory registered as ``name``; it must declare that name and a known trust level."""
    factory = load(BACKENDS, name)
    if factory is None:
        raise PluginError(f"no backend {name!r} is installed (installed: {', '.join(backend_names()) or 'none'})")
    declared, trust = getattr(factory, "name", None), getattr(factory, "trust", None)
    problem = None
    if not BACKEND_NAME.match(name):
        problem = f"backend {name!r} has an invalid name, want {BACKEND_NAME.pattern}"
    elif declared != name:
        problem = f"backend {name!r} declares name {declared!r}; they must agree"
    elif trust not in get_args(TrustLevel):
        problem = f"backend {name!r} declares trust {trust!r}, want one of {get_args(TrustLevel)}"
    if problem is not None:  # where it comes from only then: reading a distribution's metadata costs ~3 ms a call
        raise PluginError(f"{problem} ({_describe(_entry(BACKENDS, name))})")
    return cast(BackendFactory, factory)


def offered_factories(configured: tuple[str, ...] = ("llm_sim", "device")) -> dict[str, BackendFactory]:
    """Every installed backend's factory except ``configured`` ones (built from options by their caller): what a
    rollout worker offers, so a new environment's tasks roll out with no edit. One that fails to load is logged and
    left out."""
    factories: dict[str, BackendFactory] = {}
    for name in backend_names():
        if name in configured:
            continue
        try:
            factories[name] = backend_factory(name)
        except PluginError as exc:
            _log.warning("backend %s is not offered: %s", name, exc)
    return factories


def make_suite(name: str) -> Any:
    """The external suite registered as ``name`` (``planner_flywheel.suites``): an object with ``backend``,
    ``tasks(limit)``, ``gold(task)`` and ``native(task)``; PluginError when none is installed or it fails to load."""
    factory = load(SUITES, name)
    if factory is None:
        raise PluginError(f"no suite {name!r} is installed (entry point group {SUITES}; see flywheel suites list)")
    return factory()


def make_backend(name: str, *args: Any, **kwargs: Any) -> Backend:
    """A new instance of the backend registered as ``name``."""
    return backend_factory(name)(*args, **kwargs)


class Backends:
    """One instance per backend name, made on first use: for loops that run tasks of several kinds in turn."""

    def __init__(self) -> None:
        self._made: dict[str, Backend] = {}

    def __getitem__(self, name: str) -> Backend:
        if name not in self._made:
            self._made[name] = make_backend(name)
        return self._made[name]


def judge(backend: str) -> Callable[..., Any] | None:
    """The backend's verifier check, None when it has none (its episodes are unjudgeable)."""
    return load(JUDGES, backend)


def predicate(name: str) -> Callable[..., Any] | None:
    """The state predicate registered as ``name``, None when none is."""
    return load(PREDICATES, name)


def _entry(group: str, name: str) -> metadata.EntryPoint:
    ep = entry_points(group)[name]
    assert not isinstance(ep, PluginError)  # not isinstance(EntryPoint): some libraries hand back their own class
    return ep


def installed_backends() -> list[BackendInfo]:
    """Every backend entry point, loaded; a broken one is listed with its error instead of hiding the others."""
    rows = []
    judges = entry_points(JUDGES)
    for name, ep in sorted(entry_points(BACKENDS).items()):
        if isinstance(ep, PluginError):
            rows.append(BackendInfo(name, None, "(several)", "", name in judges, str(ep)))
            continue
        try:
            trust = backend_factory(name).trust
        except PluginError as exc:
            rows.append(BackendInfo(name, None, provider(ep), ep.value, name in judges, str(exc)))
            continue
        rows.append(BackendInfo(name, trust, provider(ep), ep.value, name in judges))
    return rows
