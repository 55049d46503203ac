"""Notes tools: write, edit, organise with folders, tags and pins."""

from __future__ import annotations

from pydantic import Field

from producers.backends.sandbox.apps.notes.model import FOLDERS, Note
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, NoArgs
from producers.backends.sandbox.world import World

TOOLS = AppTools("notes")
TOOLS.collection("notes", Note, noun="note", search=("title", "body", "tags"), example_id="note_1", delete=True)
TOOLS.members(
    "notes",
    "tags",
    Note,
    noun="note",
    owner_arg="note_id",
    member_arg="tag",
    add=("add_tag", "Tag a note."),
    remove=("remove_tag", "Remove a tag from a note."),
    example={"note_id": "note_1", "tag": "later"},
)
TOOLS.flag(
    "notes",
    "pinned",
    Note,
    noun="note",
    on=("pin", "Pin a note to the top."),
    off=("unpin", "Unpin a note."),
    example_id="note_1",
)


class NewNote(Args):
    title: str = Field(min_length=1, max_length=120)
    body: str = Field("", max_length=10000)
    folder: str = "personal"
    tags: list[str] = Field(default_factory=list)


class Append(Args):
    note_id: str
    text: str = Field(min_length=1, max_length=10000)


class Retitle(Args):
    note_id: str
    title: str = Field(min_length=1, max_length=120)


class Tag(Args):
    tag: str


class MoveArgs(Args):
    note_id: str
    folder: str


def _note(world: World, note_id: str) -> Note:
    return world.get("notes", "notes", note_id, "note")


def _folder(folder: str) -> str:
    if folder not in FOLDERS:
        raise ToolFailure("invalid_argument", f"unknown folder {folder!r}; folders: {', '.join(FOLDERS)}")
    return folder


_NF = {"not_found": "no such note"}


@TOOLS.tool(writes=True, errors={"invalid_argument": "unknown folder"}, example={"title": "Groceries", "body": "eggs"})
def create_note(world: World, a: NewNote) -> Note:
    """Write a new note."""
    nid = world.new_id("notes", "notes", "note")
    return world.put(
        "notes",
        "notes",
        nid,
        Note(id=nid, title=a.title, body=a.body, folder=_folder(a.folder), tags=list(a.tags), pinned=False),
    )


@TOOLS.tool(writes=True, errors=_NF, example={"note_id": "note_1", "text": "milk"})
def append(world: World, a: Append) -> Note:
    """Add a line at the end of a note."""
    note = _note(world, a.note_id)
    return world.patch("notes", "notes", a.note_id, body=f"{note['body']}\n{a.text}" if note["body"] else a.text)


@TOOLS.tool(writes=True, errors=_NF, example={"note_id": "note_1", "title": "New title"})
def rename_note(world: World, a: Retitle) -> Note:
    """Change a note's title."""
    _note(world, a.note_id)
    return world.patch("notes", "notes", a.note_id, title=a.title)


@TOOLS.tool(example={"tag": "todo"})
def list_by_tag(world: World, a: Tag) -> list[Note]:
    """Notes carrying a tag."""
    return [n for n in world.table("notes", "notes").values() if a.tag in n["tags"]]


@TOOLS.tool(
    writes=True, errors={**_NF, "invalid_argument": "unknown folder"}, example={"note_id": "note_1", "folder": "work"}
)
def move_note(world: World, a: MoveArgs) -> Note:
    """Move a note to another folder."""
    _note(world, a.note_id)
    return world.patch("notes", "notes", a.note_id, folder=_folder(a.folder))


@TOOLS.tool()
def list_folders(world: World, a: NoArgs) -> list[str]:
    """The note folders."""
    return list(FOLDERS)
