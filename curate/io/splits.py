"""What one reading task reads: a whole input file, a byte range of it, or a list of records in it.

`Split` is the one name for a task's share of the input, whatever planned it: a glob (one split per file),
`--tasks N` / bytes per task (byte ranges of large files), or an index query (records fetched by range, as
Common Crawl's index gives them). Readers see the split; ids come from the file's `key` and byte offsets, so
they do not depend on how a file was split or where it is stored.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Split:
    """A part of one input file.

    `url`: where the bytes are (a path or URL). `key`: the file's name in document ids, the same for every
    split of the file (`curate.io.plan.input_keys`). `start`/`end`: a byte range; the reader starts at
    the first record boundary at or after `start` and reads every record that begins before `end` in full
    (None: to the end of the file). `records`: explicit `(offset, length)` records to read instead of a
    range (an index query); empty for a range.
    """

    url: str
    key: str
    start: int = 0
    end: int | None = None
    records: tuple[tuple[int, int], ...] = ()

    @property
    def whole(self) -> bool:
        """The whole file, as one task reads it when nothing splits it."""
        return self.start == 0 and self.end is None and not self.records

    @property
    def label(self) -> str:
        """How progress bars, failures and stats name the split."""
        if self.records:
            return f"{self.url} ({len(self.records)} record(s))"
        if self.whole:
            return self.url
        return f"{self.url} [{self.start}:{'' if self.end is None else self.end}]"


def row_group_start(rg) -> int:
    """The byte offset where a Parquet row group begins (its first page, a dictionary page if it has one): what
    a byte-range split of a Parquet file owns a row group by (readers.Parquet, curate.io.plan)."""
    starts = []
    for i in range(rg.num_columns):
        col = rg.column(i)
        starts += [o for o in (col.dictionary_page_offset if col.has_dictionary_page else None, col.data_page_offset)
                   if o is not None and o > 0]
    return min(starts)
