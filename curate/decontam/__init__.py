"""Benchmark decontamination: an n-gram index over evaluation sets, a step that drops or redacts
documents containing benchmark items, and a report of what leaked. See docs/decontam.md."""

from curate.decontam.index import NgramIndex, build_index
from curate.decontam.loaders import BenchmarkError, Item, load_benchmark
from curate.decontam.step import Decontaminate

__all__ = ["BenchmarkError", "Decontaminate", "Item", "NgramIndex", "build_index", "load_benchmark"]
