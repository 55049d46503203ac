"""Wallet: balance, cards, payments to contacts (confirmation required) and money requests."""

from producers.backends.sandbox.apps.wallet.model import seed
from producers.backends.sandbox.apps.wallet.tools import TOOLS

__all__ = ["TOOLS", "seed"]
