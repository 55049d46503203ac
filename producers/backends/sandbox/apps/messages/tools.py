"""Messages tools: send, reply, forward, read state, pins and location sharing."""

from __future__ import annotations

from pydantic import Field

from producers.backends.sandbox.apps.common import contact, require_permission
from producers.backends.sandbox.apps.messages.model import Message
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, NoArgs
from producers.backends.sandbox.seeding import NOW
from producers.backends.sandbox.world import World

TOOLS = AppTools("messages")
TOOLS.collection(
    "messages", Message, noun="message", search=("text", "number", "contact_id"), example_id="msg_1", delete=True
)
TOOLS.flag(
    "messages",
    "read",
    Message,
    noun="message",
    on=("mark_read", "Mark a message as read."),
    off=("mark_unread", "Mark a message as unread."),
    example_id="msg_2",
)
TOOLS.flag(
    "messages",
    "pinned",
    Message,
    noun="message",
    on=("pin", "Pin a message to the top of its conversation."),
    off=("unpin", "Unpin a message."),
    example_id="msg_1",
)


class Send(Args):
    contact_id: str = Field(description="Recipient contact id.")
    text: str = Field(min_length=1, max_length=1000)


class Reply(Args):
    message_id: str
    text: str = Field(min_length=1, max_length=1000)


class Forward(Args):
    message_id: str
    contact_id: str


class ContactRef(Args):
    contact_id: str


def send_text(world: World, contact_id: str, text: str) -> Message:
    """Deliver an outgoing message; shared by every tool that ends up texting someone."""
    person = contact(world, contact_id)
    if person["blocked"]:
        raise ToolFailure("conflict", f"{person['name']} is blocked; unblock them first")
    mid = world.new_id("messages", "messages", "msg")
    return world.put(
        "messages",
        "messages",
        mid,
        Message(
            id=mid,
            contact_id=person["id"],
            number=person["phone"],
            direction="out",
            text=text,
            at=NOW.isoformat(timespec="minutes"),
            read=True,
            pinned=False,
        ),
    )


_SEND_ERRORS = {"not_found": "no such contact", "conflict": "the contact is blocked"}


@TOOLS.tool(writes=True, errors=_SEND_ERRORS, example={"contact_id": "c_1", "text": "hi"})
def send(world: World, a: Send) -> Message:
    """Send a text message to a contact."""
    return send_text(world, a.contact_id, a.text)


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such message", "conflict": "the contact is blocked"},
    example={"message_id": "msg_1", "text": "ok"},
)
def reply(world: World, a: Reply) -> Message:
    """Reply to the sender of a message."""
    msg = world.get("messages", "messages", a.message_id, "message")
    return send_text(world, msg["contact_id"], a.text)


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such message or contact", "conflict": "the contact is blocked"},
    example={"message_id": "msg_1", "contact_id": "c_2"},
)
def forward(world: World, a: Forward) -> Message:
    """Forward a message's text to another contact."""
    msg = world.get("messages", "messages", a.message_id, "message")
    return send_text(world, a.contact_id, f"Fwd: {msg['text']}")


@TOOLS.tool(
    writes=True,
    errors={
        "not_found": "no such contact",
        "permission_denied": "messages.location permission not granted",
        "conflict": "the contact is blocked",
    },
    example={"contact_id": "c_1"},
)
def share_location(world: World, a: ContactRef) -> Message:
    """Text a contact a link to the phone's current location."""
    require_permission(world, "messages.location")
    return send_text(world, a.contact_id, "My location: https://maps.test/here")


@TOOLS.tool()
def list_unread(world: World, a: NoArgs) -> list[Message]:
    """Unread incoming messages."""
    return [m for m in world.table("messages", "messages").values() if not m["read"]]


@TOOLS.tool(errors={"not_found": "no such contact"}, example={"contact_id": "c_1"})
def conversation(world: World, a: ContactRef) -> list[Message]:
    """All messages with one contact, oldest first."""
    contact(world, a.contact_id)
    return sorted(
        (m for m in world.table("messages", "messages").values() if m["contact_id"] == a.contact_id),
        key=lambda m: (m["at"], m["id"]),
    )
