"""Policy inference behind one interface: scripted replay, OpenAI-compatible HTTP, vLLM offline, transformers."""
