"""The programmatic mobile sandbox: typed tool calls over a seeded, copy-on-write phone world, verified exactly."""

from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.catalog import APP_NAMES, TOOLS
from producers.backends.sandbox.skill_docs import SKILLS, SKILLS_DIR
from producers.backends.sandbox.verify import VerificationResult, verify

__all__ = ["APP_NAMES", "SKILLS", "SKILLS_DIR", "TOOLS", "SandboxBackend", "VerificationResult", "verify"]
