"""Real token shards for the trainer tests: web text from ../shared/data, a 1,024-token BPE, ~1.5M tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

WEB = "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
VOCAB = 1024

# A model small enough for a shared 2-core CI box, large enough to learn more than unigram statistics.
SMALL = {"n_layer": 2, "n_head": 4, "n_embd": 64, "seq_len": 64, "micro_batch": 16, "batch_tokens": 1024}


def token_shards(shared: Path, tmp_factory: pytest.TempPathFactory) -> Path:
    """Built once per test session (both trainer test files reuse the directory)."""
    from curate.tokens.tokenize import build_token_shards

    out = tmp_factory.getbasetemp() / "train_tokens"
    if not (out / "manifest.json").is_file():
        build_token_shards(shared / WEB, out, vocab_size=VOCAB)
    return out
