"""Contacts tools: look people up, edit their details, favourites and blocking."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from producers.backends.sandbox.apps.common import contact
from producers.backends.sandbox.apps.contacts.model import RELATIONS, Contact
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, NoArgs
from producers.backends.sandbox.seeding import TODAY
from producers.backends.sandbox.world import World

TOOLS = AppTools("contacts")
TOOLS.collection(
    "contacts", Contact, noun="contact", search=("name", "email", "phone", "relation"), example_id="c_1", delete=True
)
TOOLS.flag(
    "contacts",
    "favorite",
    Contact,
    noun="contact",
    on=("favorite", "Mark a contact as favorite."),
    off=("unfavorite", "Remove a contact from favorites."),
    example_id="c_2",
)
TOOLS.flag(
    "contacts",
    "blocked",
    Contact,
    noun="contact",
    on=("block", "Block calls and messages from a contact."),
    off=("unblock", "Unblock a contact."),
    example_id="c_1",
)


class NewContact(Args):
    name: str = Field(min_length=1, max_length=80)
    phone: str = Field(pattern=r"^\+?[0-9 \-]{5,20}$")
    email: str = ""
    address: str = ""
    relation: str = "friend"


class PhoneArgs(Args):
    contact_id: str
    phone: str = Field(pattern=r"^\+?[0-9 \-]{5,20}$")


class EmailArgs(Args):
    contact_id: str
    email: str = Field(pattern=r"^[^@\s]+@[^@\s]+$")


class AddressArgs(Args):
    contact_id: str
    address: str = Field(min_length=3, max_length=200)


class BirthdayArgs(Args):
    contact_id: str
    birthday: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")


class RelationArgs(Args):
    contact_id: str
    relation: str


class FindPhone(Args):
    phone: str


@TOOLS.tool(
    writes=True,
    errors={"conflict": "a contact with that phone number exists"},
    example={"name": "Sam Doe", "phone": "+1-555-0000"},
)
def create_contact(world: World, a: NewContact) -> Contact:
    """Add a new contact."""
    if any(c["phone"] == a.phone for c in world.table("contacts", "contacts").values()):
        raise ToolFailure("conflict", f"a contact with phone {a.phone} already exists")
    cid = world.new_id("contacts", "contacts", "c")
    record = Contact(
        id=cid,
        name=a.name,
        phone=a.phone,
        email=a.email,
        address=a.address,
        relation=a.relation,
        birthday="",
        favorite=False,
        blocked=False,
    )
    return world.put("contacts", "contacts", cid, record)


def _field_setter(field: str, name: str, doc: str, args: type[Args], example: str) -> None:
    """``contacts.<name>``: replace one field of a contact."""

    def set_field(world: World, a: Any) -> Contact:
        contact(world, a.contact_id)
        return world.patch("contacts", "contacts", a.contact_id, **{field: getattr(a, field)})

    TOOLS.generated(
        set_field,
        name,
        doc,
        args,
        Contact,
        writes=True,
        example={"contact_id": "c_1", field: example},
        errors={"not_found": "no such contact"},
    )


_field_setter("phone", "update_phone", "Change a contact's phone number.", PhoneArgs, "+1-555-1234")
_field_setter("email", "update_email", "Change a contact's email address.", EmailArgs, "x@mail.test")
_field_setter("address", "update_address", "Change a contact's home address.", AddressArgs, "12 Elm St")
_field_setter("birthday", "set_birthday", "Record a contact's birthday (YYYY-MM-DD).", BirthdayArgs, "1990-05-04")


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such contact", "invalid_argument": f"relation not one of {RELATIONS}"},
    example={"contact_id": "c_1", "relation": "family"},
)
def set_relation(world: World, a: RelationArgs) -> Contact:
    """Set how the user knows a contact."""
    contact(world, a.contact_id)
    if a.relation not in RELATIONS:
        raise ToolFailure("invalid_argument", f"relation must be one of {RELATIONS}")
    return world.patch("contacts", "contacts", a.contact_id, relation=a.relation)


@TOOLS.tool()
def list_favorites(world: World, a: NoArgs) -> list[Contact]:
    """List favorite contacts."""
    return [c for c in world.table("contacts", "contacts").values() if c["favorite"]]


@TOOLS.tool()
def list_blocked(world: World, a: NoArgs) -> list[Contact]:
    """List blocked contacts."""
    return [c for c in world.table("contacts", "contacts").values() if c["blocked"]]


@TOOLS.tool(errors={"not_found": "no contact has that number"}, example={"phone": "+1-555-0000"})
def find_by_phone(world: World, a: FindPhone) -> Contact:
    """Find the contact who owns a phone number."""
    digits = "".join(ch for ch in a.phone if ch.isdigit())
    for c in world.table("contacts", "contacts").values():
        if "".join(ch for ch in c["phone"] if ch.isdigit()) == digits:
            return c
    raise ToolFailure("not_found", f"no contact has number {a.phone}")


@TOOLS.tool()
def upcoming_birthdays(world: World, a: NoArgs) -> list[Contact]:
    """Contacts whose birthday falls in the next 30 days."""

    def days_until(bday: str) -> int:
        month_day = (int(bday[5:7]), int(bday[8:10]))
        this_year = TODAY.replace(month=month_day[0], day=min(month_day[1], 28))
        return (this_year - TODAY).days % 365

    return sorted(
        (c for c in world.table("contacts", "contacts").values() if c["birthday"] and days_until(c["birthday"]) <= 30),
        key=lambda c: days_until(c["birthday"]),
    )
