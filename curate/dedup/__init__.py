"""Deduplication as global steps: `Exact` (equal normalised text or URL), `MinHash` (near-duplicates),
`Lines` (lines, paragraphs or sentence spans repeated across documents, exact or through a Bloom filter),
`Substrings` (every span of at least N bytes repeated anywhere, by suffix arrays) and `Semantic` (embeddings nearly
parallel inside a k-means cluster, SemDeDup).

All run in phases through the pipeline's executor and keep their intermediate files and phase
markers in the work directory, so they scale past memory and an interrupted run resumes. See
docs/dedup.md.
"""

from curate.dedup.exact import Exact
from curate.dedup.lines import Lines
from curate.dedup.minhash import MinHash
from curate.dedup.semantic import Semantic
from curate.dedup.sketch import signatures
from curate.dedup.substrings import Substrings
from curate.dedup.text import match_form, shingles

__all__ = ["Exact", "Lines", "MinHash", "Semantic", "Substrings", "match_form", "shingles", "signatures"]
