"""The skill library: markdown playbooks with front matter, offered by the tools they apply to."""
