"""The run report: Markdown and self-contained HTML with charts, from a run's stats and shards."""
