"""The spaCy-English-like word tokenizer now lives in `curate.lang.spaced` (the language layer, below every
step, so that filters, dedup and decontamination share one); these names stay importable from here."""

from curate.lang.spaced import _CHUNKS, split_chunk, word_tokens

__all__ = ["_CHUNKS", "split_chunk", "word_tokens"]
