"""An executor for tests that need to know which tasks a run actually ran (resume, skipped stages)."""

from __future__ import annotations

from curate.run.executors.local import LocalExecutor


class Recording(LocalExecutor):
    """A one-process executor that records which tasks each map call ran."""

    def __init__(self):
        super().__init__(1, progress=False)
        self.calls: list[tuple[str, list[str]]] = []

    def map(self, fn, items, desc="tasks", labels=()):
        self.calls.append((desc, list(labels)))
        return super().map(fn, items, desc, labels)
