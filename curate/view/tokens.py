"""A token folder (`curate tokenize`, format `peneira.tokens/2`) for `curate view`: its splits and shards from the
manifest, and any one document decoded with the folder's own tokenizer (the copy `tokenizer.json` beside the
manifest). A document is read by seeking: two offsets of the `.idx` and its token range of the `.bin`, never a
whole shard, so a page costs the same on a shard of ten documents or of ten million.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from curate.core.errors import UsageError
from curate.io import fs
from curate.io.token_format import FORMAT, INDEX_HEADER, member, token_dtype
from curate.view.query import ViewError

MAX_PIECES = 2000  # tokens shown one by one on a document's page; the decoded text is always whole


def is_token_folder(path: str) -> bool:
    return fs.exists(fs.join(path, "manifest.json")) and fs.exists(fs.join(path, "tokenizer.json"))


@dataclass
class TokenDoc:
    split: str
    shard: int
    n: int  # the document's place in its shard
    docs: int  # documents in the shard
    source: str
    ids: np.ndarray
    text: str  # the ids decoded, special tokens kept
    pieces: list[tuple[int, str]]  # (id, its own decoding) of the first MAX_PIECES tokens


class TokenFolder:
    """A token folder given on the command line; pages address it by index, its shards by number."""

    kind = "tokens"

    def __init__(self, path: str):
        self.path = path.rstrip("/") or path
        self.name = fs.basename(self.path)
        if self.manifest.get("format") != FORMAT:
            raise UsageError(f"{path}: token format {self.manifest.get('format')!r}; curate view reads {FORMAT}")

    @cached_property
    def manifest(self) -> dict:
        with fs.open(fs.join(self.path, "manifest.json"), "r", encoding="utf-8") as f:
            return json.load(f)

    @cached_property
    def tokenizer(self):
        from tokenizers import Tokenizer

        return Tokenizer.from_str(fs.read_bytes(fs.join(self.path, "tokenizer.json")).decode("utf-8"))

    def shards(self, split: str) -> list[dict]:
        if split not in self.manifest.get("splits", {}):
            raise ViewError(f"{self.name} has no split {split!r}: {', '.join(self.manifest.get('splits', {}))}")
        return self.manifest["splits"][split]["shards"]

    def document(self, split: str, shard: int, n: int) -> TokenDoc:
        """Document `n` of shard `shard` of `split`: its end offsets from the index, its ids from the shard."""
        shards = self.shards(split)
        if not 0 <= shard < len(shards) or not 0 <= n < shards[shard]["docs"]:
            raise ViewError(f"no document {n} in shard {shard} of {split}")
        entry, dtype = shards[shard], token_dtype(self.manifest["dtype"])
        with fs.open(fs.join(self.path, member(entry["index"])), "rb") as f:
            f.seek(INDEX_HEADER + 8 * (n - 1) if n else INDEX_HEADER)
            ends = np.frombuffer(f.read(16 if n else 8), "<i8")
            f.seek(INDEX_HEADER + 8 * entry["docs"] + 2 * n)
            code = int(np.frombuffer(f.read(2), "<u2")[0])
        start, end = (0, int(ends[0])) if n == 0 else (int(ends[0]), int(ends[1]))
        with fs.open(fs.join(self.path, member(entry["file"])), "rb") as f:
            f.seek(start * dtype.itemsize)
            ids = np.frombuffer(f.read((end - start) * dtype.itemsize), dtype.newbyteorder("<"))
        tok = self.tokenizer
        pieces = [(int(i), tok.decode([int(i)], skip_special_tokens=False)) for i in ids[:MAX_PIECES]]
        source = entry["sources"][code] if code < len(entry["sources"]) else f"#{code}"
        return TokenDoc(split, shard, n, entry["docs"], source, ids,
                        tok.decode(ids.tolist(), skip_special_tokens=False), pieces)
