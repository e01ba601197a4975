"""datatrove's tokenized files, which nanotron trains on (`DatatroveFolderDataset`), as datatrove's
`DocumentTokenizer` writes them:

* `SPLIT/part-NNNNN.ds`: the ids end to end, each document ending with the end-of-document token, little-endian
  uint16 (`token_size` 2) or uint32 (4);
* `SPLIT/part-NNNNN.ds.index`: the end of each document, in tokens (uint64), what datatrove reads for positions and
  for merging/shuffling documents;
* `SPLIT/part-NNNNN.ds.metadata`: `TOKENIZER|token_size`, the token count and the count in words, as datatrove's
  `write_final_metadata` writes it.

nanotron reads a split with `DatatroveFolderDataset(OUT/train, seq_len, token_size=…)`.
"""

from __future__ import annotations

from curate.tokens.formats.base import StreamWriter


class NanotronWriter(StreamWriter):
    format = "nanotron"
    suffix = ".ds"
    tokenizer_name = "peneira"  # the metadata's tokenizer field: ours is a file, named in the manifest

    def write_index(self) -> None:
        self.write_small(".ds.index", self.all_ends().astype("<u8").tobytes())
        size = self.dtype.itemsize
        self.write_small(".ds.metadata", f"{self.tokenizer_name}|{size}\n{self.tokens}\n{_metric(self.tokens)}"
                         .encode())


def _metric(n: int) -> str:
    """The human count datatrove's metadata carries (`humanize.metric(n, unit="T")`, e.g. `1.23 MT`)."""
    for exp, prefix in ((12, "T"), (9, "G"), (6, "M"), (3, "k")):
        if n >= 10**exp:
            return f"{n / 10**exp:.3g} {prefix}T"
    return f"{n} T"
