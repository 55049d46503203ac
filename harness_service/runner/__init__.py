"""The episode loop: context -> policy -> parse -> execute -> feedback, with budgets and sub-agents."""
