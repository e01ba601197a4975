"""The two errors every layer may raise, kept at the bottom so that raising one never imports the runner."""

from __future__ import annotations


class UsageError(ValueError):
    """Bad input from the user (options, globs, pipeline files, step arguments): one line on stderr, exit 2."""


class StepFailed(RuntimeError):
    """A step that fails on every document (or its first ones): the run stops with the step's real error."""
