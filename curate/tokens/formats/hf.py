"""A Hugging Face dataset of token ids: Parquet shards `SPLIT/part-NNNNN.parquet` with one row per document,
`input_ids` (its ids, the end-of-document token last) and `source`. `datasets.load_dataset("parquet",
data_files={"train": "OUT/train/*.parquet", "validation": "OUT/val/*.parquet"})` loads it, and the folder can be
uploaded to the Hub as it is.

Row groups are cut by bytes (`ROW_GROUP_TOKENS`), so a reader holds a bounded slice; every page carries a checksum,
as every Parquet file of the project does (a damaged page is an error, never other data).
"""

from __future__ import annotations

import numpy as np

from curate.tokens.common import naming
from curate.tokens.formats.base import Accounting

ROW_GROUP_TOKENS = 1 << 22  # ids buffered before a row group is written (8-16 MiB)


class HfWriter(Accounting):
    format = "hf"

    def open(self) -> None:
        import pyarrow as pa

        self.file = self.stage(".parquet")
        self.schema = pa.schema([("input_ids", pa.list_(pa.from_numpy_dtype(self.dtype.newbyteorder("=")))),
                                 ("source", pa.string())])
        self.writer = None
        self.pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.pending_tokens = 0

    def write(self, ids: np.ndarray, lengths: np.ndarray, codes: np.ndarray) -> None:
        self.pending.append((ids.copy(), lengths, codes))
        self.pending_tokens += len(ids)
        if self.pending_tokens >= ROW_GROUP_TOKENS:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.pending:
            return
        ids = np.concatenate([p[0] for p in self.pending])
        lengths = np.concatenate([p[1] for p in self.pending])
        codes = np.concatenate([p[2] for p in self.pending])
        self.pending, self.pending_tokens = [], 0
        # a row group holds ~ROW_GROUP_TOKENS ids (or one longer document, below 2**31 ids): int32 offsets suffice
        offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]), pa.int32())
        column = pa.ListArray.from_arrays(offsets, pa.array(ids.astype(self.dtype.newbyteorder("="))))
        names = np.array(list(self.sources), dtype=object)
        table = pa.table({"input_ids": column, "source": pa.array(names[codes], pa.string())}, schema=self.schema)
        with naming(self.file.path):
            if self.writer is None:
                self.writer = pq.ParquetWriter(self.file.tmp, self.schema, compression="zstd",
                                               write_page_checksum=True)
            self.writer.write_table(table)

    def close(self) -> None:
        import pyarrow.parquet as pq
        import xxhash

        with naming(self.file.path):
            self.flush()
            if self.writer is None:
                self.writer = pq.ParquetWriter(self.file.tmp, self.schema, write_page_checksum=True)
            self.writer.close()
        h = xxhash.xxh3_64()
        with open(self.file.tmp, "rb") as f:
            while block := f.read(1 << 22):
                h.update(block)
        self.digests[f"{self.split}/{self.name}.parquet"] = h.hexdigest()

    def abort(self) -> None:
        if self.writer is not None:
            self.writer.close()
