"""Tool handling beyond one call: choosing which tools a free user goal is offered."""
