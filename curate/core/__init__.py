"""The bottom layer: documents, the step API, per-step stats, errors and config checks. Imports nothing of curate."""
