"""LLM-simulated backend: declared-but-unimplemented tools whose results a configured model generates."""

from producers.backends.llm_sim.backend import LlmSimBackend
from producers.backends.llm_sim.toolset import TOOLSETS_DIR, DeclaredTool, Toolset, load_toolsets

__all__ = ["TOOLSETS_DIR", "DeclaredTool", "LlmSimBackend", "Toolset", "load_toolsets"]
