"""Pipelines compiled into stages, run task by task on an executor (`curate.run.executors`)."""
