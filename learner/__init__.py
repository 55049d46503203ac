"""The learner: cold-start SFT, online agentic RL with CARE, dev-set evaluation and model registration."""
