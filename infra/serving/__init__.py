"""``flywheel serve model``: a registry version behind an OpenAI-compatible server (``transformers serve`` on CPU,
``vllm serve`` on GPU), following its alias, each version it serves announced as ``ModelServed``."""
