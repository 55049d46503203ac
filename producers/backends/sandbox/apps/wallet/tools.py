"""Wallet tools: pay contacts (two steps: send, then confirm), requests, cards, balance."""

from __future__ import annotations

from pydantic import Field

from producers.backends.sandbox.apps.common import contact
from producers.backends.sandbox.apps.wallet.model import Account, Card, MoneyRequest, Payment, Transaction
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, IdArgs, NoArgs
from producers.backends.sandbox.seeding import TODAY
from producers.backends.sandbox.world import World

TOOLS = AppTools("wallet")
TOOLS.collection("transactions", Transaction, noun="transaction", search=("note", "contact_id"), example_id="tx_1")
TOOLS.records.update(account=Account, payments=Payment, requests=MoneyRequest)
TOOLS.flag(
    "cards",
    "frozen",
    Card,
    noun="card",
    on=("freeze_card", "Temporarily block a card."),
    off=("unfreeze_card", "Unblock a frozen card."),
    example_id="card_2",
)


class SendMoney(Args):
    contact_id: str
    amount: float = Field(gt=0, le=5000)
    note: str = Field("", max_length=140)


def _payment(world: World, pid: str, status: str = "awaiting_confirmation") -> Payment:
    pay = world.get("wallet", "payments", pid, "payment")
    if pay["status"] != status:
        raise ToolFailure("conflict", f"payment {pid} is {pay['status']}")
    return pay


def open_payment(world: World, contact_id: str, amount: float, note: str) -> Payment:
    """Stage a payment; nothing moves until ``confirm_payment``."""
    contact(world, contact_id)
    pid = world.new_id("wallet", "payments", "pay")
    return world.put(
        "wallet",
        "payments",
        pid,
        Payment(id=pid, contact_id=contact_id, amount=round(amount, 2), note=note, status="awaiting_confirmation"),
    )


def _request(world: World, rid: str) -> MoneyRequest:
    req = world.get("wallet", "requests", rid, "money request")
    if req["status"] != "open":
        raise ToolFailure("conflict", f"request {rid} is already {req['status']}")
    return req


@TOOLS.tool()
def balance(world: World, a: NoArgs) -> Account:
    """Current balance, currency and default card."""
    return world.table("wallet", "account")["main"]


@TOOLS.tool()
def list_cards(world: World, a: NoArgs) -> list[Card]:
    """Payment cards on the phone."""
    return list(world.table("wallet", "cards").values())


@TOOLS.tool(
    writes=True, errors={"not_found": "no such card", "conflict": "the card is frozen"}, example={"id": "card_2"}
)
def set_default_card(world: World, a: IdArgs) -> Account:
    """Choose the card used by rides, shopping and food orders."""
    if world.get("wallet", "cards", a.id, "card")["frozen"]:
        raise ToolFailure("conflict", f"card {a.id} is frozen; unfreeze it first")
    return world.patch("wallet", "account", "main", default_card=a.id)


@TOOLS.tool(
    writes=True, errors={"not_found": "no such contact"}, example={"contact_id": "c_1", "amount": 10.0, "note": "pizza"}
)
def send_money(world: World, a: SendMoney) -> Payment:
    """Stage a payment to a contact. It is NOT sent until wallet.confirm_payment is called with its id."""
    return open_payment(world, a.contact_id, a.amount, a.note)


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such payment", "conflict": "not awaiting confirmation, or the balance is too low"},
    example={"id": "pay_1"},
)
def confirm_payment(world: World, a: IdArgs) -> Transaction:
    """Confirm a staged payment: the money leaves the account."""
    pay = _payment(world, a.id)
    account = world.table("wallet", "account")["main"]
    if account["balance"] < pay["amount"]:
        raise ToolFailure("conflict", f"balance {account['balance']} is below {pay['amount']}")
    world.patch("wallet", "account", "main", balance=round(account["balance"] - pay["amount"], 2))
    world.patch("wallet", "payments", a.id, status="completed")
    tid = world.new_id("wallet", "transactions", "tx")
    return world.put(
        "wallet",
        "transactions",
        tid,
        Transaction(
            id=tid, contact_id=pay["contact_id"], amount=-pay["amount"], note=pay["note"], date=TODAY.isoformat()
        ),
    )


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such payment", "conflict": "not awaiting confirmation"},
    example={"id": "pay_1"},
)
def cancel_payment(world: World, a: IdArgs) -> Payment:
    """Drop a staged payment."""
    _payment(world, a.id)
    return world.patch("wallet", "payments", a.id, status="cancelled")


@TOOLS.tool()
def list_pending(world: World, a: NoArgs) -> list[Payment]:
    """Payments awaiting confirmation."""
    return [p for p in world.table("wallet", "payments").values() if p["status"] == "awaiting_confirmation"]


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such contact"},
    example={"contact_id": "c_1", "amount": 20.0, "note": "tickets"},
)
def request_money(world: World, a: SendMoney) -> MoneyRequest:
    """Ask a contact to pay you (outgoing request, id prefix out_)."""
    contact(world, a.contact_id)
    rid = world.new_id("wallet", "requests", "out")
    return world.put(
        "wallet",
        "requests",
        rid,
        MoneyRequest(id=rid, contact_id=a.contact_id, amount=a.amount, note=a.note, status="open"),
    )


@TOOLS.tool()
def list_requests(world: World, a: NoArgs) -> list[MoneyRequest]:
    """Money requests, incoming (req_) and outgoing (out_)."""
    return list(world.table("wallet", "requests").values())


@TOOLS.tool(
    writes=True, errors={"not_found": "no such request", "conflict": "request no longer open"}, example={"id": "req_1"}
)
def pay_request(world: World, a: IdArgs) -> Payment:
    """Stage payment of an incoming request (then confirm it with wallet.confirm_payment)."""
    req = _request(world, a.id)
    world.patch("wallet", "requests", a.id, status="paid")
    return open_payment(world, req["contact_id"], req["amount"], req["note"])


@TOOLS.tool(
    writes=True, errors={"not_found": "no such request", "conflict": "request no longer open"}, example={"id": "req_1"}
)
def decline_request(world: World, a: IdArgs) -> MoneyRequest:
    """Decline an incoming money request."""
    _request(world, a.id)
    return world.patch("wallet", "requests", a.id, status="declined")
