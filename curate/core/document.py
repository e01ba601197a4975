"""The document record that flows through every step, and the text-shard contract it is written as."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa

# The text-shard contract (docs/data-contract.md). Steps may add flat columns (Step.columns) after these.
# SHARD_MARK goes in the schema's metadata of every shard this project writes: only a file that carries
# it has its ids trusted by readers.Parquet (a third-party file with the same columns does not).
SHARD_MARK = {b"peneira.shard": b"text/1"}
TEXT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("url", pa.string()),
        pa.field("date", pa.timestamp("us", tz="UTC")),
        pa.field("lang", pa.string()),
        pa.field("lang_score", pa.float32()),
        pa.field("quality_score", pa.float32()),
        pa.field("metadata", pa.string()),
    ],
    metadata=SHARD_MARK,
)
CORE_COLUMNS = tuple(TEXT_SCHEMA.names)


def make_id(source: str, key: str) -> str:
    """A stable id from the source name and a record key (WARC-Record-ID, or URL + offset).

    Hashing keeps ids short and uniform whatever the key looks like; including the source keeps two
    sources that reuse record ids apart.
    """
    return hashlib.blake2b(f"{source}\x00{key}".encode(), digest_size=12).hexdigest()


@dataclass(slots=True)
class Document:
    """One document. `html` holds markup between reading and extraction and is never written."""

    id: str
    text: str
    source: str
    url: str | None = None
    date: datetime | None = None
    lang: str | None = None
    lang_score: float | None = None
    quality_score: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # flat columns declared by steps
    html: str | None = None

    def to_record(self) -> dict[str, Any]:
        rec = {
            "id": self.id,
            "text": self.text,
            "source": self.source,
            "url": self.url,
            "date": self.date,
            "lang": self.lang,
            "lang_score": self.lang_score,
            "quality_score": self.quality_score,
            "metadata": json.dumps(self.metadata, ensure_ascii=False, default=str) if self.metadata else None,
        }
        rec.update(self.extra)
        return rec

    def child(self, index: int, text: str) -> Document:
        """Piece `index` of a split of this document: its own stable id, the parent's fields, `parent_id` in metadata."""
        meta = {**self.metadata, "parent_id": self.id, "part": index}
        return Document(id=make_id(self.source, f"{self.id}#{index}"), text=text, source=self.source, url=self.url,
                        date=self.date, lang=self.lang, lang_score=self.lang_score, quality_score=self.quality_score,
                        metadata=meta, extra=dict(self.extra))

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> Document:
        meta = rec.get("metadata")
        extra = {k: v for k, v in rec.items() if k not in CORE_COLUMNS and k not in DROP_COLUMNS}
        return cls(
            id=rec["id"],
            text=rec["text"],
            source=rec["source"],
            url=rec.get("url"),
            date=rec.get("date"),
            lang=rec.get("lang"),
            lang_score=rec.get("lang_score"),
            quality_score=rec.get("quality_score"),
            metadata=json.loads(meta) if meta else {},
            extra=extra,
        )


DROP_COLUMNS = ("drop_reason", "drop_measured", "drop_limit")  # rejected shards only


def shard_schema(extra_columns: dict[str, pa.DataType], rejected: bool = False) -> pa.Schema:
    """The contract schema plus the flat columns that the pipeline's steps declare."""
    schema = TEXT_SCHEMA
    for name, typ in extra_columns.items():
        schema = schema.append(pa.field(name, typ))
    return rejected_schema(schema) if rejected else schema


def rejected_schema(schema: pa.Schema) -> pa.Schema:
    """The schema of rejected shards: the kept one, the reason, and its evidence where the rule measured something
    (`Reject.measured`, `.limit`). Every writer of rejected shards, streaming or global, takes it from here, so the
    shards of one run share one schema whichever stage dropped the document."""
    return (schema.append(pa.field("drop_reason", pa.string(), nullable=False))
            .append(pa.field("drop_measured", pa.float64())).append(pa.field("drop_limit", pa.float64())))


def conform(table: pa.Table | pa.RecordBatch, schema: pa.Schema, **columns: pa.Array) -> pa.Table:
    """`table` in `schema`'s columns and order: missing columns as nulls, extra ones dropped, types cast.

    `columns` replace (or supply) whole columns by name, e.g. `quality_score=scores`. Every code path
    that writes rows it did not build from `Document`s (the global steps) goes through this one function.
    """
    names = table.schema.names
    cols = []
    for f in schema:
        if f.name in columns:
            given = columns[f.name]
            cols.append(given.cast(f.type) if isinstance(given, pa.Array) else pa.array(given, f.type))
        elif f.name in names:
            cols.append(table.column(f.name).cast(f.type))
        else:
            cols.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)
