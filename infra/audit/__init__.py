"""Auditor tools: re-run deterministic consumers over the log and compare, check blobs, show an episode."""
