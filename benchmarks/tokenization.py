"""Tokenization throughput (named tokenization.py: a benchmarks/tokenize.py would shadow the stdlib
`tokenize` module for every script in this folder): `curate tokenize`'s per-process batch encoding vs one document at a time.

Both sides use the same tokenizer (byte-level BPE, trained here on the data) on the 697 Common Crawl
documents of shared/data/text/web_cc plus the 486 Portuguese Bosque documents, repeated `--reps`
times, in one process with one Rust thread (RAYON_NUM_THREADS=1), timed in CPU seconds (process_time) so
that a busy shared machine does not skew the ratio; tokens/s is per core:

* baseline: `Tokenizer.encode(text)` per document, ids collected into a list (the naive loop);
* peneira: `_tokenize_file`, the exact task `curate tokenize` runs per input file (batch encoder,
  flat numpy buffer, EOS appended, `.bin` + `.idx` shards written), timed end to end including reading and
  writing.

    .venv/bin/python benchmarks/tokenization.py --reps 3
"""

from __future__ import annotations

import os

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers starts its pool: per-core figures

import argparse  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from _data import WEB_AND_PT as FILES  # noqa: E402


def main() -> None:
    from curate.io.corpus import read_batches
    from curate.tokens.tokenize import _Task, _tokenize_file, load_tokenizer, train_tokenizer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--vocab-size", type=int, default=8192)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp, "corpus.jsonl")
        texts = [t for f in FILES for b in read_batches(str(f)) for t in b.texts]
        with open(corpus, "w", encoding="utf-8") as f:
            for r in range(args.reps):
                for i, t in enumerate(texts):
                    f.write(json.dumps({"id": f"{r}-{i}", "text": t}) + "\n")
        tok_path = Path(tmp, "tok.json")
        train_tokenizer(str(corpus), args.vocab_size, tok_path)
        tok = load_tokenizer(tok_path)
        docs = texts * args.reps

        t0 = time.process_time()
        base_tokens = sum(len(tok.encode(t, add_special_tokens=False).ids) + 1 for t in docs)
        base_s = time.process_time() - t0

        os.makedirs(Path(tmp, "_done"))
        task = _Task(0, str(corpus), tmp, str(tok_path), "uint16", 0.0, 1000, 1)
        t0 = time.process_time()
        res = _tokenize_file(task)
        ours_s = time.process_time() - t0
        ours_tokens = res["shards"]["train"]["tokens"]
    assert ours_tokens == base_tokens, (ours_tokens, base_tokens)
    chars = sum(map(len, docs))
    print(f"{len(docs):,} documents, {chars:,} characters, {ours_tokens:,} tokens (vocab {args.vocab_size}), 1 core")
    print(f"baseline  encode() per document      {base_tokens / base_s:>12,.0f} tokens/s  ({base_s:.2f} s)")
    print(f"peneira   tokenize task (read+encode+write) {ours_tokens / ours_s:>6,.0f} tokens/s  ({ours_s:.2f} s)")
    print(f"ratio {base_s / ours_s:.2f}x")


if __name__ == "__main__":
    main()
