"""The task constructor: builds new executable tasks where the reweighter asks for them."""
