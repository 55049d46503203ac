"""The BFCL API instances of one episode: built from a task's ``initial_config``, called by tool name, read as JSON.

Everything BFCL-specific that the backend, the judge and the suite share lives here: which classes exist (the
wheel's own ``CLASS_FILE_PATH_MAPPING``), their tool specs (the wheel's ``multi_turn_func_doc`` files), calls by
our tool names (``<module>.<method>``, e.g. ``gorilla_file_system.cd``), and the state BFCL's checker compares
(every public attribute of every involved instance).
"""

from __future__ import annotations

import ast
import copy
import importlib
import importlib.util
import inspect
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

from bus_schemas.actions import ToolCall, ToolError
from producers.backends.base import ToolSpec

PACKAGE = "bfcl_eval"
_CONFIG = "bfcl_eval.constants.executable_backend_config"
SUPPORTED_CLASSES = (
    "GorillaFileSystem",
    "MathAPI",
    "MessageAPI",
    "TwitterAPI",
    "TicketAPI",
    "TradingBot",
    "TravelAPI",
    "VehicleControlAPI",
)
"""The multi-turn classes that import only the standard library (and mpmath, which our lock has)."""
_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}
_BLOCKED = {"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"}
"""Method names BFCL's own executor refuses to evaluate; refused here too."""


if importlib.util.find_spec(PACKAGE) is None:  # fail at plugin load, with the fix, not at the first reset
    raise ImportError(
        "No module named 'bfcl_eval': the bfcl backend needs the bfcl-eval wheel without its dependencies "
        "(make install, or uv pip install --no-deps -r requirements/plugins-nodeps.txt)"
    )


def _config() -> Any:
    return importlib.import_module(_CONFIG)


def module_of(class_name: str) -> str:
    """The class's module, which is also the app part of its tool names (``gorilla_file_system``)."""
    path: str = _config().CLASS_FILE_PATH_MAPPING[class_name]
    return path.rsplit(".", 1)[1]


def _schema(node: Any) -> Any:
    """BFCL's function-doc parameter schema as JSON Schema (``dict`` -> ``object``, ``float`` -> ``number``)."""
    if isinstance(node, list):
        return [_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    typed = isinstance(node.get("type"), str)  # a property may itself be called "type"
    out = {k: _schema(v) for k, v in node.items() if not (typed and k == "type")}
    if typed:
        kind = _TYPES.get(node["type"], node["type"])
        if kind is not None:
            out["type"] = kind
    if "default" in out and not isinstance(out["default"], (str, int, float, bool, list, dict)):
        out.pop("default")
    return out


@cache
def class_docs(class_name: str) -> tuple[ToolSpec, ...]:
    """The tool specs of one class, from the wheel's ``multi_turn_func_doc/<file>.json`` (one JSON doc a line)."""
    file = _config().MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]
    text = resources.files(PACKAGE).joinpath("data", "multi_turn_func_doc", file).read_text(encoding="utf-8")
    app = module_of(class_name)
    specs = []
    for line in text.splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        parameters = _schema(doc.get("parameters") or {"type": "dict", "properties": {}})
        parameters.setdefault("type", "object")
        result = _schema(doc["response"]) if doc.get("response") else None
        specs.append(
            ToolSpec(
                name=f"{app}.{doc['name']}", description=doc["description"], parameters=parameters, result_schema=result
            )
        )
    return tuple(specs)


def to_json(value: Any, _path: tuple[int, ...] = ()) -> Any:
    """A Python value as JSON: objects by their public attributes, an object already on the path (a parent
    back-reference) as ``{"$ref": type}``, sets sorted, anything else unknown as its ``str``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_json(v, _path) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v, _path) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((to_json(v, _path) for v in value), key=repr)
    if hasattr(value, "__dict__") and not inspect.isroutine(value):
        if id(value) in _path:
            return {"$ref": type(value).__name__}
        inner = (*_path, id(value))
        return {k: to_json(v, inner) for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)


def result_text(result: Any) -> str:
    """A call's result as BFCL's executor records it (strings as is, dicts as JSON, anything else ``str``);
    BFCL's response check compares these strings."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except (TypeError, ValueError):
            return str(result)
    return str(result)


@dataclass(frozen=True)
class Step:
    """One executed call: the JSON result or a ToolError, and BFCL's text of the result."""

    result: Any
    error: ToolError | None
    text: str


class BfclWorld:
    """Fresh instances of the involved classes, loaded with their initial config as BFCL's executor loads them."""

    def __init__(
        self,
        initial_config: Mapping[str, Any],
        involved: list[str],
        excluded: list[str] | None = None,
        long_context: bool = False,
    ) -> None:
        unknown = [c for c in involved if c not in SUPPORTED_CLASSES]
        if unknown:
            raise ValueError(f"unsupported BFCL classes {unknown}; supported: {', '.join(SUPPORTED_CLASSES)}")
        config = _config()
        self.instances: dict[str, Any] = {}
        for name in involved:
            instance = getattr(importlib.import_module(config.CLASS_FILE_PATH_MAPPING[name]), name)()
            if name not in config.STATELESS_CLASSES:
                instance._load_scenario(copy.deepcopy(dict(initial_config.get(name, {}))), long_context=long_context)
            self.instances[name] = instance
        excluded_set = set(excluded or [])
        self.specs = {
            spec.name: spec
            for name in involved
            for spec in class_docs(name)
            if spec.name.split(".", 1)[1] not in excluded_set
        }
        self._owner = {spec_name: spec_name.split(".", 1)[0] for spec_name in self.specs}
        self._class_of_app = {module_of(name): name for name in involved}
        self._validators = {name: Draft202012Validator(spec.parameters) for name, spec in self.specs.items()}
        # BFCL's executor resolves a bare method name to the last involved class that has it
        self.qualified: dict[str, str] = {}
        for name in involved:
            for spec in class_docs(name):
                method = spec.name.split(".", 1)[1]
                if spec.name in self.specs:
                    self.qualified[method] = spec.name

    def state(self) -> dict[str, Any]:
        """What BFCL's state checker compares: every involved instance's public attributes, as JSON."""
        return {name: to_json(instance) for name, instance in self.instances.items()}

    def call(self, call: ToolCall) -> Step:
        """Run one call on its instance; every failure is a ToolError, nothing raises."""
        spec = self.specs.get(call.name)
        if spec is None:
            return _failed("unknown_tool", f"{call.name} is not a tool of this task: {', '.join(sorted(self.specs))}")
        bad = next(iter(self._validators[call.name].iter_errors(call.args)), None)
        if bad is not None:
            return _failed("invalid_argument", f"args{''.join(f'[{p!r}]' for p in bad.path)}: {bad.message}")
        app, method = call.name.split(".", 1)
        if method in _BLOCKED:
            return _failed("permission_denied", f"{method} is not allowed")
        instance = self.instances[self._class_of_app[app]]
        try:
            result = getattr(instance, method)(**call.args)
        except TypeError as exc:
            return _failed("invalid_argument", f"{call.name}: {exc}")
        except Exception as exc:  # noqa: BLE001 - a failing API method is feedback for the policy, not a crash
            return _failed("internal", f"{call.name} failed: {type(exc).__name__}: {exc}")
        return Step(to_json(result), None, result_text(result))

    def parse(self, text: str) -> ToolCall:
        """A ground-truth call string (``mv(source='a', destination='b')``) as our ToolCall; positional arguments
        take the method's parameter names. ValueError when it is not one call of a known method."""
        node = ast.parse(text.strip(), mode="eval").body
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            raise ValueError(f"not a call of a method: {text!r}")
        name = self.qualified.get(node.func.id)
        if name is None:
            raise ValueError(f"no involved class has a method {node.func.id!r}: {text!r}")
        method = getattr(self.instances[self._class_of_app[name.split(".", 1)[0]]], node.func.id)
        params = [p for p in inspect.signature(method).parameters]
        args = {params[i]: _literal(a) for i, a in enumerate(node.args)}
        args.update({k.arg: _literal(k.value) for k in node.keywords if k.arg is not None})
        return ToolCall(name=name, args=args)


def _literal(node: ast.expr) -> Any:
    return _jsonable(ast.literal_eval(node))


def _jsonable(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def _failed(code: str, message: str) -> Step:
    error = ToolError(code=code, message=message[:4000])  # type: ignore[arg-type]
    return Step(None, error, f"Error during execution: {message}")


def iter_jsonl(relative: str) -> Iterator[dict[str, Any]]:
    """The records of one of the wheel's data files (``BFCL_v4_multi_turn_base.json``: one JSON object a line)."""
    text = resources.files(PACKAGE).joinpath("data", *relative.split("/")).read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.strip():
            yield json.loads(line)
