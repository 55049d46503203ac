"""Account balance, cards, completed transactions, payments awaiting confirmation, money requests."""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder, day


class Account(TypedDict):
    balance: float
    currency: str
    default_card: str


class Card(TypedDict):
    id: str
    label: str
    last4: str
    frozen: bool


class Transaction(TypedDict):
    id: str
    contact_id: str
    amount: float
    note: str
    date: str


class Payment(TypedDict):
    id: str
    contact_id: str
    amount: float
    note: str
    status: Literal["awaiting_confirmation", "completed", "cancelled"]


class MoneyRequest(TypedDict):
    id: str
    contact_id: str
    amount: float
    note: str
    status: Literal["open", "paid", "declined"]


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    people = s.contacts()
    cards = {
        f"card_{i}": Card(id=f"card_{i}", label=label, last4=f"{s.rng.randrange(10000):04d}", frozen=False)
        for i, label in enumerate(("Visa", "Mastercard", "Amex"), start=1)
    }
    txs = {}
    for i in range(1, 11):
        p = s.pick(people)
        txs[f"tx_{i}"] = Transaction(
            id=f"tx_{i}",
            contact_id=p["id"],
            amount=-s.money(5, 120),
            note=s.phrase(1),
            date=day(-s.rng.randrange(1, 30)),
        )
    requests = {}
    for i, p in enumerate(s.sample(people, 3), start=1):
        requests[f"req_{i}"] = MoneyRequest(
            id=f"req_{i}", contact_id=p["id"], amount=s.money(8, 60), note=f"{s.phrase(1)} share", status="open"
        )
    return {
        "account": {"main": Account(balance=s.money(400, 1500), currency="USD", default_card="card_1")},
        "cards": cards,
        "transactions": txs,
        "payments": {
            "pay_1": Payment(
                id="pay_1", contact_id=people[0]["id"], amount=12.5, note="lunch", status="awaiting_confirmation"
            )
        },
        "requests": requests,
    }
