"""A compact, declarative way to define app tools: one decorator per tool, a factory for routine reads.

A tool is a plain function ``(world, args) -> result``; the decorator reads its argument model and
return type from the annotations, so the JSON Schemas shown to the policy come from the code itself.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from typing_extensions import TypedDict

from producers.backends.base import ToolSpec
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.world import World

MAX_TEXT_CHARS = 10_000
"""No tool argument string is longer (the longest any tool declares, a note or email body); the limit holds
for every argument, whether or not its field declares one, so a direct caller cannot store megabytes."""
MAX_ITEMS = 100
"""No list argument holds more items."""


def _check_sizes(args: Mapping[str, Any]) -> None:
    for name, value in args.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and len(item) > MAX_TEXT_CHARS:
                raise ValueError(f"{name}: at most {MAX_TEXT_CHARS} characters, got {len(item)}")
        if isinstance(value, list) and len(value) > MAX_ITEMS:
            raise ValueError(f"{name}: at most {MAX_ITEMS} items, got {len(value)}")


class Args(BaseModel):
    """Base of every tool's argument model: unknown arguments are an error, not silently dropped. The sandbox
    validates a call with :meth:`from_call`: strict JSON types (no ``true`` or ``"5"`` for 5), bounded sizes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def from_call(cls, args: Mapping[str, Any]) -> Args:
        """Validate a tool call's JSON arguments strictly: types as JSON Schema means them (what the harness's
        schema check already enforces), so direct API callers get the same rules."""
        _check_sizes(args)  # here, not in the schema: the tool specs the policy reads stay as they are
        try:
            raw = orjson.dumps(args)
        except TypeError as exc:
            raise ValueError(f"arguments are not JSON: {exc}") from None
        return cls.model_validate_json(raw, strict=True)


class NoArgs(Args):
    """For tools that take no arguments."""


class ListArgs(Args):
    limit: int = Field(20, ge=1, le=100, description="Maximum number of items to return.")
    offset: int = Field(0, ge=0, description="Number of items to skip.")


class SearchArgs(Args):
    query: str = Field(min_length=1, max_length=200, description="Case-insensitive text to look for.")
    limit: int = Field(10, ge=1, le=100)


class IdArgs(Args):
    id: str = Field(min_length=1, max_length=64, description="Identifier of the item.")


class Ack(TypedDict):
    ok: bool
    message: str


ToolFn = Callable[["World", Any], Any]


@dataclass(frozen=True)
class Tool:
    """One registered tool: the callable plus everything the policy and the tests need to know about it."""

    name: str
    fn: ToolFn
    args_model: type[Args]
    result_type: Any
    description: str
    writes: bool
    errors: Mapping[str, str]
    example: Mapping[str, Any]

    @cached_property
    def spec(self) -> ToolSpec:
        params = self.args_model.model_json_schema()
        params["examples"] = [dict(self.example)]
        errors = "".join(f"\n- {code}: {when}" for code, when in self.errors.items())
        return ToolSpec(
            name=self.name,
            description=self.description + ("\nErrors:" + errors if errors else ""),
            parameters=params,
            result_schema=TypeAdapter(self.result_type).json_schema(),
            writes=self.writes,
        )


def _doc(fn: Callable[..., Any]) -> str:
    return " ".join((fn.__doc__ or "").split())


@dataclass
class AppTools:
    """The toolkit of one app; ``@tools.tool(...)`` registers ``app.<function name>``."""

    app: str
    tools: list[Tool] = field(default_factory=list)
    records: dict[str, type] = field(default_factory=dict)  # collection -> record type, for state type checks

    def tool(
        self,
        *,
        writes: bool = False,
        errors: Mapping[str, str] | None = None,
        example: Mapping[str, Any] | None = None,
    ) -> Callable[[ToolFn], ToolFn]:
        """Register ``fn(world, args: <Args model>) -> <result type>``; ``errors`` maps each
        code it may return to when."""

        def register(fn: ToolFn) -> ToolFn:
            hints = typing.get_type_hints(fn, localns={"World": World})
            args_model = hints[fn.__code__.co_varnames[1]]
            documented = {"invalid_argument": "the arguments do not match the schema", **(errors or {})}
            self.tools.append(
                Tool(
                    name=f"{self.app}.{fn.__name__}",
                    fn=fn,
                    args_model=args_model,
                    result_type=hints["return"],
                    description=_doc(fn),
                    writes=writes,
                    errors=documented,
                    example=example or {},
                )
            )
            return fn

        return register

    def generated(
        self,
        fn: ToolFn,
        name: str,
        doc: str,
        args: type[Args],
        result: Any,
        *,
        writes: bool = False,
        example: Mapping[str, Any] | None = None,
        errors: Mapping[str, str] | None = None,
    ) -> None:
        """Register a tool built by a factory below (its name, doc and types are given, not written)."""
        fn.__name__, fn.__doc__ = name, doc
        fn.__annotations__ = {fn.__code__.co_varnames[0]: World, fn.__code__.co_varnames[1]: args, "return": result}
        self.tool(writes=writes, example=example, errors=errors)(fn)

    def collection(
        self,
        coll: str,
        record: type,
        *,
        noun: str,
        search: tuple[str, ...],
        example_id: str,
        plural: str | None = None,
        delete: bool = False,
    ) -> None:
        """The routine tools of a collection: ``list_<plural>``, ``get_<noun>``, ``search_<plural>`` (and
        ``delete_<noun>``)."""
        plural = plural or f"{noun}s"
        app = self.app
        self.records[coll] = record
        not_found = {"not_found": f"no {noun} with that id"}

        def list_(world: World, args: ListArgs) -> list[Any]:
            rows = list(world.table(app, coll).values())
            return rows[args.offset : args.offset + args.limit]

        def get(world: World, args: IdArgs) -> Any:
            return world.get(app, coll, args.id, noun)

        def search_(world: World, args: SearchArgs) -> list[Any]:
            needle = args.query.lower()
            return [
                r for r in world.table(app, coll).values() if any(needle in str(r.get(f, "")).lower() for f in search)
            ][: args.limit]

        def delete_(world: World, args: IdArgs) -> Any:
            world.get(app, coll, args.id, noun)
            return world.delete(app, coll, args.id)

        self.generated(list_, f"list_{plural}", f"List {plural} (paged).", ListArgs, list[record])  # type: ignore[valid-type]  # the row type is a runtime value
        self.generated(
            get, f"get_{noun}", f"Get one {noun} by id.", IdArgs, record, example={"id": example_id}, errors=not_found
        )
        self.generated(
            search_,
            f"search_{plural}",
            f"Search {plural} by {', '.join(search)}.",
            SearchArgs,
            list[record],  # type: ignore[valid-type]  # the row type is a runtime value
            example={"query": "a"},
        )
        if delete:
            self.generated(
                delete_,
                f"delete_{noun}",
                f"Delete a {noun}.",
                IdArgs,
                record,
                writes=True,
                example={"id": example_id},
                errors=not_found,
            )

    def flag(
        self,
        coll: str,
        field_name: str,
        record: type,
        *,
        noun: str,
        on: tuple[str, str],
        off: tuple[str, str],
        example_id: str,
    ) -> None:
        """A pair of tools that set and clear a boolean field of a record; setting the current value is a conflict."""
        app = self.app
        self.records[coll] = record
        for (name, doc), value in ((on, True), (off, False)):

            def set_flag(world: World, args: IdArgs, value: bool = value) -> Any:
                if world.get(app, coll, args.id, noun)[field_name] == value:
                    raise ToolFailure("conflict", f"{noun} {args.id} already has {field_name}={value}")
                return world.patch(app, coll, args.id, **{field_name: value})

            errors = {"not_found": f"no {noun} with that id", "conflict": f"{field_name} is already {value}"}
            self.generated(set_flag, name, doc, IdArgs, record, writes=True, example={"id": example_id}, errors=errors)

    def members(
        self,
        coll: str,
        list_field: str,
        record: type,
        *,
        noun: str,
        owner_arg: str,
        member_arg: str,
        add: tuple[str, str],
        remove: tuple[str, str],
        example: Mapping[str, str],
        member_of: tuple[str, str, str] | None = None,
    ) -> None:
        """A pair of tools that add an item to / remove it from a list field (attendees, tags, albums...)."""
        app = self.app
        args_model = create_model(
            f"{noun.title()}{list_field.title()}Args",
            __base__=Args,
            **{owner_arg: (str, ...), member_arg: (str, Field(min_length=1, max_length=64))},
        )  # type: ignore[call-overload]

        def add_(world: World, args: Any) -> Any:
            owner_id, item = getattr(args, owner_arg), getattr(args, member_arg)
            current = world.get(app, coll, owner_id, noun)[list_field]
            if member_of is not None:
                world.get(*member_of[:2], item, member_of[2])
            if item in current:
                raise ToolFailure("conflict", f"{noun} {owner_id} already has {item!r} in {list_field}")
            return world.patch(app, coll, owner_id, **{list_field: [*current, item]})

        def remove_(world: World, args: Any) -> Any:
            owner_id, item = getattr(args, owner_arg), getattr(args, member_arg)
            current = world.get(app, coll, owner_id, noun)[list_field]
            if item not in current:
                raise ToolFailure("not_found", f"{item!r} is not in {list_field} of {noun} {owner_id}")
            return world.patch(app, coll, owner_id, **{list_field: [x for x in current if x != item]})

        added = {
            "not_found": f"no such {noun}" + (f" or {member_of[2]}" if member_of else ""),
            "conflict": f"already in {list_field}",
        }
        self.generated(add_, add[0], add[1], args_model, record, writes=True, example=example, errors=added)
        self.generated(
            remove_,
            remove[0],
            remove[1],
            args_model,
            record,
            writes=True,
            example=example,
            errors={"not_found": f"no such {noun}, or the item is not in its {list_field}"},
        )
