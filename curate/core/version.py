"""Peneira's version: its one home. pyproject.toml reads it at build time (`[tool.setuptools.dynamic]`), `curate.__version__`
and every run's manifest read it here, with no package metadata lookup (importlib.metadata costs 35-45 CPU ms a
process, a tenth of a one-file run's fixed cost: issue 45)."""

__version__ = "0.1.0"
