"""Fault tests stop and break servers, so each runs on a private stack (own ports, own tmp dir)."""

from __future__ import annotations

import pytest
from stack_support import private_stack_settings

from infra.stack import Stack


@pytest.fixture
def private_stack(tmp_path):
    """Factory: ``private_stack(["kafka"])`` starts those services privately; all are stopped afterwards."""
    started: list[Stack] = []

    def start(services: list[str]) -> Stack:
        stack = Stack(private_stack_settings(tmp_path), echo=lambda msg: None)
        stack.up(services)
        started.append(stack)
        return stack

    yield start
    for stack in started:
        stack.down()
