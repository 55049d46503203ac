"""Task templates by capability; ``TEMPLATES`` is the catalogue the suite builder walks."""

from producers.tasks.templates import memory, skills, sub_agent, tool_use

TEMPLATES = {t.id: t for module in (tool_use, memory, skills, sub_agent) for t in module.TEMPLATES}
