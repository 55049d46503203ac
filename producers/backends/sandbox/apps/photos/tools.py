"""Photos and files tools: albums, favourites, sharing (needs permission), file housekeeping."""

from __future__ import annotations

from pydantic import Field

from producers.backends.sandbox.apps.common import require_permission
from producers.backends.sandbox.apps.messages.model import Message
from producers.backends.sandbox.apps.messages.tools import send_text
from producers.backends.sandbox.apps.photos.model import FILE_FOLDERS, Album, File, Photo
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, NoArgs
from producers.backends.sandbox.world import World

TOOLS = AppTools("photos")
TOOLS.collection("photos", Photo, noun="photo", search=("title", "city", "taken"), example_id="ph_1", delete=True)
TOOLS.collection("files", File, noun="file", search=("name", "folder"), example_id="file_1", delete=True)
TOOLS.records.update(albums=Album)
TOOLS.members(
    "photos",
    "albums",
    Photo,
    noun="photo",
    owner_arg="photo_id",
    member_arg="album_id",
    add=("add_to_album", "Put a photo in an album."),
    remove=("remove_from_album", "Take a photo out of an album."),
    example={"photo_id": "ph_1", "album_id": "alb_1"},
    member_of=("photos", "albums", "album"),
)
TOOLS.flag(
    "photos",
    "favorite",
    Photo,
    noun="photo",
    on=("favorite", "Mark a photo as favorite."),
    off=("unfavorite", "Unmark a favorite photo."),
    example_id="ph_1",
)


class NewAlbum(Args):
    name: str = Field(min_length=1, max_length=60)


class Share(Args):
    photo_id: str
    contact_id: str


class MoveFile(Args):
    file_id: str
    folder: str


class RenameFile(Args):
    file_id: str
    name: str = Field(min_length=1, max_length=120, pattern=r"^[^/\\]+$")


class Person(Args):
    contact_id: str


def _photo(world: World, photo_id: str) -> Photo:
    return world.get("photos", "photos", photo_id, "photo")


def _file(world: World, file_id: str) -> File:
    return world.get("photos", "files", file_id, "file")


@TOOLS.tool(writes=True, errors={"conflict": "an album with that name exists"}, example={"name": "Trip"})
def create_album(world: World, a: NewAlbum) -> Album:
    """Create an album."""
    if any(x["name"].lower() == a.name.lower() for x in world.table("photos", "albums").values()):
        raise ToolFailure("conflict", f"album {a.name!r} exists")
    aid = world.new_id("photos", "albums", "alb")
    return world.put("photos", "albums", aid, Album(id=aid, name=a.name))


@TOOLS.tool()
def list_albums(world: World, a: NoArgs) -> list[Album]:
    """Albums."""
    return list(world.table("photos", "albums").values())


@TOOLS.tool(errors={"not_found": "no such contact"}, example={"contact_id": "c_1"})
def photos_of(world: World, a: Person) -> list[Photo]:
    """Photos a contact appears in."""
    world.get("contacts", "contacts", a.contact_id, "contact")
    return [p for p in world.table("photos", "photos").values() if a.contact_id in p["people"]]


@TOOLS.tool(
    writes=True,
    errors={
        "not_found": "no such photo or contact",
        "permission_denied": "messages.photos permission not granted",
        "conflict": "the contact is blocked",
    },
    example={"photo_id": "ph_1", "contact_id": "c_1"},
)
def share_photo(world: World, a: Share) -> Message:
    """Send a photo to a contact by message."""
    require_permission(world, "messages.photos")
    photo = _photo(world, a.photo_id)
    return send_text(world, a.contact_id, f"[photo {photo['id']}: {photo['title']}]")


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such file", "invalid_argument": "unknown folder", "conflict": "already in that folder"},
    example={"file_id": "file_1", "folder": "travel"},
)
def move_file(world: World, a: MoveFile) -> File:
    """Move a file to another folder."""
    if a.folder not in FILE_FOLDERS:
        raise ToolFailure("invalid_argument", f"unknown folder {a.folder!r}; folders: {', '.join(FILE_FOLDERS)}")
    if _file(world, a.file_id)["folder"] == a.folder:
        raise ToolFailure("conflict", f"file {a.file_id} is already in {a.folder}")
    return world.patch("photos", "files", a.file_id, folder=a.folder)


@TOOLS.tool(writes=True, errors={"not_found": "no such file"}, example={"file_id": "file_1", "name": "renamed.pdf"})
def rename_file(world: World, a: RenameFile) -> File:
    """Rename a file."""
    _file(world, a.file_id)
    return world.patch("photos", "files", a.file_id, name=a.name)
