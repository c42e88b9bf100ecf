"""Tiny calculator module the agent was asked to fix."""


def add(a, b):
    """Return a + b (the bug was `return a - b`; the agent fixed it)."""
    return a + b


def mul(a, b):
    """Return a * b (was already correct)."""
    return a * b
