"""The verifier: judges each ended episode against its task's completion criteria, from hidden evidence."""
