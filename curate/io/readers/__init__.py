"""Readers turn one input file into a stream of documents, counting every record they skip and why.

An input is a local path (opened directly) or a URL (`file://`, `s3://`, …), opened through fsspec
(`curate.io.fs`). `base` holds the interface and what every reader shares, `charsets` the decoding of
HTML bytes, `warc` the WARC readers, `text` the JSONL and Parquet ones.
"""

from curate.io.readers.base import Reader
from curate.io.readers.charsets import decode_html
from curate.io.readers.commoncrawl import CommonCrawl
from curate.io.readers.text import Jsonl, Parquet
from curate.io.readers.warc import FastWarc, Warc, fastest_warc

__all__ = ["CommonCrawl", "FastWarc", "Jsonl", "Parquet", "Reader", "Warc", "decode_html", "fastest_warc"]
