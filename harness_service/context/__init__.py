"""Context construction: the chat messages a policy sees at each step, under a token budget."""
