"""Megatron-LM / Megatron-Core's indexed dataset (`megatron.core.datasets.indexed_dataset`), as its
`IndexedDatasetBuilder` writes it and `IndexedDataset(path_prefix)` reads it, so Megatron-LM, NeMo and anything built
on Megatron-Core train on `SPLIT/part-NNNNN` prefixes (`--data-path 1.0 OUT/train/part-00000 ...`).

* `PREFIX.bin`: every document's ids end to end, each document ending with the end-of-document token (what
  Megatron's `tools/preprocess_data.py --append-eod` writes), in the dtype Megatron chooses for the vocabulary
  (`DType.optimal_dtype`: uint16 below 65,500 ids, else int32).
* `PREFIX.idx`: `MMIDIDX\\x00\\x00`, version 1 (uint64), the dtype code (uint8: 8 uint16, 4 int32), the sequence count
  and the document-index count (uint64), the sequence lengths (int32), the sequence pointers (int64 byte offsets
  into the `.bin`) and the document indices (int64: 0, then the end of each document in sequences). One sequence
  is one document, as `preprocess_data.py` writes without sentence splitting.
* `PREFIX.sources`: the source code of each document (uint16, into the manifest entry's `sources`): not Megatron's,
  which ignores it; `python -m train` reads it to weight sources.

Once every shard is written (`finish`), the hand-off Megatron needs beside them, so nobody builds it by hand:
* `megatron-data.json`: the blend of every shard for `--per-split-data-args-path` (`{"train": [weight, prefix, ...],
  "valid": [...], "test": null}`), each shard weighted by its tokens so the blend reads the stream in its proportions;
* `tokenizer_config.json` beside the copied `tokenizer.json`, naming the fast tokenizer class and the end-of-document
  token, so `--tokenizer-type HuggingFaceTokenizer --tokenizer-model OUT` loads the tokenizer the ids came from and
  Megatron's `eod` is the id every document ends with.
"""

from __future__ import annotations

import json
import os

import numpy as np

from curate.core.errors import UsageError
from curate.io import fs
from curate.io.token_format import CHECKSUM
from curate.io.token_format import MEGATRON_DTYPE_CODES as DTYPE_CODES
from curate.io.token_format import MEGATRON_INDEX_HEADER as INDEX_HEADER
from curate.tokens.formats.base import StreamWriter

VERSION = 1
OPTIMAL_UINT16 = 65500  # Megatron's rule: uint16 when the vocabulary has fewer ids than this


def encode_index(lengths: np.ndarray, dtype: np.dtype) -> bytes:
    """The `.idx` bytes of documents of `lengths` tokens of `dtype`, one sequence each."""
    n = len(lengths)
    pointers = np.zeros(n, "<i8")
    if n:
        np.cumsum(lengths[:-1] * dtype.itemsize, out=pointers[1:])
    return b"".join([INDEX_HEADER, np.array([VERSION], "<u8").tobytes(),
                     np.array([DTYPE_CODES[dtype.name]], "<u1").tobytes(),
                     np.array([n, n + 1], "<u8").tobytes(), np.asarray(lengths, "<i4").tobytes(),
                     pointers.tobytes(), np.arange(n + 1, dtype="<i8").tobytes()])


class MegatronWriter(StreamWriter):
    format = "megatron"
    dtypes = ("uint16", "int32")

    @classmethod
    def choose_dtype(cls, vocab_size: int, dtype: str | None) -> str:
        best = "uint16" if vocab_size < OPTIMAL_UINT16 else "int32"
        if dtype is not None and dtype != best:
            raise UsageError(f"--dtype {dtype}: Megatron reads {best} for a vocabulary of {vocab_size} ids "
                             "(uint16 below 65,500, else int32); leave --dtype out")
        if vocab_size > 2**31:
            raise UsageError(f"vocab size {vocab_size} does not fit Megatron's int32")
        return best

    def write_index(self) -> None:
        ends = self.all_ends()
        lengths = np.diff(ends, prepend=0)
        if len(lengths) and int(lengths.max()) >= 2**31:
            raise UsageError(f"{self.split}/{self.name}: a document of {int(lengths.max())} tokens is longer than "
                             "Megatron's int32 sequence length")
        self.write_small(".idx", encode_index(lengths, self.dtype))
        self.write_small(".sources", self.all_codes().astype("<u2").tobytes())

    def entry(self) -> dict:
        """The generic entry, plus `file`, `index` and `source_codes` (and checksums by those keys), which is what
        `train.data.TokenDataset` reads."""
        e = super().entry()
        names = dict(zip(("file", "index", "source_codes"), e["files"], strict=True))
        e.update(names)
        e[CHECKSUM] = {key: e[CHECKSUM][name] for key, name in names.items()}
        return e


DATA_ARGS = "megatron-data.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
SPLITS = {"train": "train", "valid": "val"}  # Megatron's split names -> ours


def blend(out: str, manifest: dict) -> dict:
    """Megatron's per-split blend lists: weight (tokens), shard prefix, ... for each split with shards.

    Prefixes are absolute for a local folder (Megatron runs from its own directory) and as given for a URL."""
    root = os.path.abspath(out) if fs.local_path(out) is not None else out.rstrip("/")
    lists: dict = {}
    for theirs, ours in SPLITS.items():
        shards = [s for s in manifest["splits"][ours]["shards"] if s["tokens"]]
        lists[theirs] = [x for s in shards
                         for x in (str(s["tokens"]), f"{root}/{s['files'][0].removesuffix('.bin')}")] or None
    lists["test"] = None
    return lists


def megatron_args(out: str) -> str:
    """The data and tokenizer arguments of a Megatron-LM (or Megatron-Bridge) run over this folder."""
    root = os.path.abspath(out) if fs.local_path(out) is not None else out
    return (f"--per-split-data-args-path {root}/{DATA_ARGS} --tokenizer-type HuggingFaceTokenizer "
            f"--tokenizer-model {root}")


def finish(out: str, manifest: dict) -> None:
    """Write the blend and the tokenizer's config (called with the output locked, before the manifest)."""
    eos = manifest["tokenizer"]["eos_token"]
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": eos, "model_max_length": 2**62,
              "clean_up_tokenization_spaces": False}
    fs.atomic_write_text(fs.join(out, TOKENIZER_CONFIG), json.dumps(config, indent=1))
    fs.atomic_write_text(fs.join(out, DATA_ARGS), json.dumps(blend(out, manifest), indent=1))
