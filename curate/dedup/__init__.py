"""Deduplication: `Exact` (equal normalised text or URL) and `MinHash` (near-duplicates), as global steps.

Both run in phases through the pipeline's executor and keep their intermediate files and phase
markers in the work directory, so they scale past memory and an interrupted run resumes. See
docs/dedup.md.
"""

from curate.dedup.exact import Exact
from curate.dedup.minhash import MinHash
from curate.dedup.sketch import signatures
from curate.dedup.text import match_form, shingles

__all__ = ["Exact", "MinHash", "match_form", "shingles", "signatures"]
