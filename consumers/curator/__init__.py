"""The curator: decides which verified trajectories may train the next model, and which need a human."""
