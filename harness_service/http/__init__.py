"""The harness HTTP service: run an episode per request and stream its events as NDJSON."""
