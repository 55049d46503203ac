"""Contacts: people with phone, email and home address; the hub other apps link to."""

from producers.backends.sandbox.apps.contacts.model import seed
from producers.backends.sandbox.apps.contacts.tools import TOOLS

__all__ = ["TOOLS", "seed"]
