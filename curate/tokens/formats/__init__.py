"""Token shards in the formats of the trainers people use (issue 33): one writer per format behind one seam.

`curate tokenize --format NAME` encodes exactly as before (same documents, same order, same validation split, same
end-of-document token after every document) and hands each split's documents of one input file to a shard writer
of the chosen format: `add(flat, lengths, sources)` as batches are encoded, then `commit()` (publish, return the
manifest's entry) or `discard()` (drop the temporary files). Every writer stages its files under names unique to it
(`fs.Staged` + `unique_tmp`) and publishes them only at `commit`, so what makes the default format atomic and
resumable makes every format so; the per-source accounting and checksums (`Accounting`) are shared.

| name | files per shard | read by |
|---|---|---|
| `peneira` | `part-N.bin` + `part-N.idx` (`peneira.tokens/2`) | `train.data.TokenDataset` |
| `megatron` | `part-N.bin` + `part-N.idx` (Megatron-Core's indexed dataset) + `part-N.sources` | Megatron-Core `IndexedDataset`, NeMo; `train.data` |
| `nanotron` | `part-N.ds` + `part-N.ds.index` + `part-N.ds.metadata` (datatrove's tokenized files) | datatrove / nanotron `DatatroveFolderDataset` |
| `mds` | `part-N.K.mds` shards + the split's `index.json` (MosaicML streaming, `tokens: ndarray:int32`) | LLM Foundry, `streaming.StreamingDataset` |
| `litdata` | `part-N-chunk-K.bin` + the split's `index.json` (litdata's `BinaryWriter`, `TokensLoader`) | LitGPT, `litdata.StreamingDataset` |
| `hf` | `part-N.parquet` (`input_ids`, `source`) | `datasets.load_dataset("parquet", ...)` |

A format's module holds only its file layout; everything else (split, accounting, locking, resume) is the
tokenizer's.
"""

from __future__ import annotations

from curate.core.errors import UsageError
from curate.io.token_format import FORMAT, MEGATRON_FORMAT

DEFAULT = "peneira"
NAMES = ("peneira", "megatron", "nanotron", "mds", "litdata", "hf")


def writer_class(name: str):
    """The shard writer of format `name` (imported on use: a format's libraries load only when it is chosen)."""
    if name == "peneira":
        from curate.tokens.formats.peneira import PeneiraWriter as cls
    elif name == "megatron":
        from curate.tokens.formats.megatron import MegatronWriter as cls
    elif name == "nanotron":
        from curate.tokens.formats.nanotron import NanotronWriter as cls
    elif name == "mds":
        from curate.tokens.formats.mds import MdsWriter as cls
    elif name == "litdata":
        from curate.tokens.formats.litdata import LitdataWriter as cls
    elif name == "hf":
        from curate.tokens.formats.hf import HfWriter as cls
    else:
        raise UsageError(f"--format {name!r}: choose one of {', '.join(NAMES)}")
    return cls


def check_format(name: str, vocab_size: int, dtype: str | None) -> str:
    """The token dtype format `name` writes for `vocab_size` ids (`dtype` when one is forced), or one line saying why
    it cannot."""
    return writer_class(name).choose_dtype(vocab_size, dtype)


# The manifest's `format` (and the resume config's) per `--format`: what a reader checks before it reads a folder.
MANIFEST_FORMATS = {"peneira": FORMAT, "megatron": MEGATRON_FORMAT, "nanotron": "datatrove.tokens/1",
                    "mds": "mds.tokens/2", "litdata": "litdata.tokens/1", "hf": "hf.parquet-tokens/1"}


def finish(name: str, out: str, manifest: dict) -> None:
    """What a format writes once every task has finished, from the manifest's shard entries (the split-wide index
    of MDS); called with the output locked, before the manifest is published."""
    if name == "mds":
        from curate.tokens.formats.mds import finish as mds_finish

        mds_finish(out, manifest)
    elif name == "litdata":
        from curate.tokens.formats.litdata import finish as litdata_finish

        litdata_finish(out, manifest)
    elif name == "megatron":
        from curate.tokens.formats.megatron import finish as megatron_finish

        megatron_finish(out, manifest)


def verify(out: str) -> dict:
    """Read every shard file of a token folder (any format) once against the manifest's xxh3-64 checksums: one
    `TokenDataError` naming the first file that differs (damaged, truncated, rewritten), else the manifest.

    Why: the trainers' own readers check little (Megatron maps whatever `.bin` it finds; datatrove reads any bytes),
    so a damaged shard trains silently on other data unless it is checked where it was written.
    """
    import json

    import xxhash

    from curate.io import fs
    from curate.io.token_format import CHECKSUM, MANIFEST, RETOKENIZE, TokenDataError, member

    m = json.loads(fs.read_bytes(fs.join(out, MANIFEST)))
    for split in m["splits"].values():
        for shard in split["shards"]:
            for key, want in shard[CHECKSUM].items():  # by the entry's key naming the file (peneira, megatron)
                name = shard[key] if isinstance(shard.get(key), str) else key  # or by the file's name
                h = xxhash.xxh3_64()
                path = fs.join(out, member(name))
                try:
                    with fs.open(path, "rb") as f:
                        while block := f.read(1 << 22):
                            h.update(block)
                except FileNotFoundError:
                    raise TokenDataError(f"{path}: missing; {RETOKENIZE}") from None
                if h.hexdigest() != want:
                    raise TokenDataError(f"{path}: checksum {h.hexdigest()} is not the manifest's {want}: the file "
                                         f"was changed or damaged after `curate tokenize` wrote it; {RETOKENIZE}")
    return m
