"""The n-gram index: sorted 64-bit n-gram hashes, each mapped to the benchmark item it came from.

On disk (a directory, written atomically file by file, `index.json` last):

* `hashes.npy`: uint64, sorted; one entry per (n-gram, item) pair, so an n-gram shared by two items
  (WinoGrande pairs, MMLU question stems) appears twice.
* `items.npy`: uint32, parallel to `hashes`: the item each n-gram belongs to.
* `items.json`: the item table: benchmark and key of every item, plus a short preview.
* `index.json`: format name and version, normalisation scheme, n, the short-item floor (both in English words;
  `scale`: how they are scaled to scripts whose units are characters; `lengths`: the n-gram sizes used), per-benchmark
  counts (items, indexed items, n-grams, and per item language: items indexed and too short) and the frequency
  cap that was applied. A reader refuses any other version or scheme.

The directory may be an fsspec URL (`s3://…`): it is written there file by file the same way, and a
step loads it from a local copy made once per machine (`curate.io.models.local_copy`).

The arrays are memory-mapped when loaded, so the forkserver workers of one machine share one copy in
the page cache instead of each holding its own.

Lookup is `np.searchsorted` of a document's n-gram hashes into `hashes`: O(words · log(index size)),
all in numpy. 64-bit hashes make a false match between two different n-grams a ~1e-19 event per pair.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curate.core.errors import UsageError
from curate.decontam.loaders import Item
from curate.decontam.text import NORMALIZATION, WordBatch, char_map, unentity, words
from curate.io import fs
from curate.io.models import local_copy
from curate.io.writers import atomic_write_text
from curate.lang import SCALE_VERSION, scaled, script_language

FORMAT = "peneira-decontam-index"
VERSION = 2  # 2: n-gram sizes scaled per script, `lengths` and per-language counts in index.json
DEFAULT_N = 13
DEFAULT_MIN_WORDS = 8  # GPT-3's floor for benchmarks whose items are shorter than n (Brown et al. 2020, App. C)
PREVIEW_CHARS = 80
FILES = ("index.json", "hashes.npy", "items.npy", "items.json")  # index.json first: it names the version
_CHUNK = 20_000  # segments hashed per WordBatch while building: bounds memory, keeps numpy calls large


class IndexFormatError(UsageError):
    """A missing, incomplete or incompatible index directory."""


@dataclass(frozen=True, slots=True)
class Match:
    """One item found in one document; `start`/`end` are character offsets in the document's text."""

    item: int
    start: int
    end: int


SPACED = "spaced"  # the language label of an item in a script whose words are spaced (units: its words)


def item_language(item: Item) -> str:
    """The language an item's n-grams are scaled for (`curate.lang.script_language` of its text), or `SPACED`."""
    return script_language(" ".join(item.segments)) or SPACED


def _pairs(items: list[Item], first_item: int, n: int, min_words: int,
           lengths: set[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hash, item id) for every n-gram of every segment; whole segments of min_words..n-1 words. Both sizes are
    stated in English words and scaled to the segment's script (`curate.lang.scale`: 13 words are 20 Han
    characters). Returns the pairs and the ids of the items that got an n-gram (the rest are too short to
    index); adds the n-gram lengths used to `lengths`."""
    segs = [(s, i, script_language(s)) for i, it in enumerate(items, first_item) for s in it.segments]
    hashes, owners = [], []
    for lang in {lang for _, _, lang in segs}:
        group = [(s, i) for s, i, la in segs if la == lang]
        n_l, min_l = scaled(n, lang), scaled(min_words, lang)
        for lo in range(0, len(group), _CHUNK):
            chunk = group[lo : lo + _CHUNK]
            wb = WordBatch.from_texts([s for s, _ in chunk])
            owner_of_seg = np.array([i for _, i in chunk], dtype=np.int64)
            g, valid = wb.grams(n_l)
            idx = np.flatnonzero(valid)
            hashes.append(g[idx])
            owners.append(owner_of_seg[wb.doc[idx]])
            lengths.update([n_l] if len(idx) else [])
            for k in range(min_l, n_l):  # short segments: the whole segment is the n-gram
                short = np.flatnonzero(wb.counts == k)
                if len(short):
                    g, _ = wb.grams(k)
                    hashes.append(g[wb.first[short]])
                    owners.append(owner_of_seg[short])
                    lengths.add(k)
    h = np.concatenate(hashes) if hashes else np.zeros(0, np.uint64)
    o = np.concatenate(owners).astype(np.uint32) if owners else np.zeros(0, np.uint32)
    return h, o, np.unique(o)


def language_counts(items: list[Item], first_item: int, indexed: np.ndarray) -> dict[str, dict[str, int]]:
    """Per item language (`item_language`): items, those indexed, those too short to index."""
    out: dict[str, dict[str, int]] = {}
    got = set(indexed.tolist())
    for i, it in enumerate(items, first_item):
        row = out.setdefault(item_language(it), {"items": 0, "indexed": 0, "too_short": 0})
        row["items"] += 1
        row["indexed" if i in got else "too_short"] += 1
    return dict(sorted(out.items()))


def _sorted_unique(h: np.ndarray, o: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((o, h))
    h, o = h[order], o[order]
    keep = np.ones(len(h), dtype=bool)
    keep[1:] = (h[1:] != h[:-1]) | (o[1:] != o[:-1])
    return h[keep], o[keep]


def check_params(n: int, min_words: int) -> None:
    if n < 1 or not 1 <= min_words <= n:
        raise UsageError(f"need 1 <= min_words <= n, got n={n}, min_words={min_words}")


def check_indexable(name: str, source: str, items: list[Item], min_words: int) -> None:
    """Refuse a benchmark none of whose items would be indexed: its index would pass every document."""
    if not any(len(words(s)) >= scaled(min_words, script_language(s)) for it in items for s in it.segments):
        raise UsageError(f"benchmark {name} ({source}): none of its {len(items):,} items has a text of {min_words}+ "
                         "words, so the index would find nothing; name the text fields (NAME=FILE:field1,field2) "
                         "or lower --min-words")


def build_index(
    benchmarks: dict[str, tuple[str, list[Item]]],
    out_dir: str | os.PathLike,
    n: int = DEFAULT_N,
    min_words: int = DEFAULT_MIN_WORDS,
    corpus_sample: Iterable[str] | None = None,
    max_doc_freq: int | None = None,
    progress: bool = False,
) -> dict:
    """Build an index from `{name: (source, items)}` and write it to `out_dir`; returns its metadata.

    Frequency cap: when `corpus_sample` (texts of a sample of the corpus) and `max_doc_freq` are given,
    every index n-gram found in more than `max_doc_freq` of the sample's documents is removed. Such
    n-grams are boilerplate that benchmarks share with the web (licence text, quoted standard phrases);
    matching them would flag documents that leak nothing. The cap counts documents, not occurrences,
    so one page that repeats a phrase does not trip it. `progress`: bars on stderr over the benchmarks' items and
    the sample's documents.
    """
    check_params(n, min_words)
    t0 = time.time()
    names, table, all_h, all_o, stats, lengths = [], [], [], [], {}, set()
    from tqdm import tqdm

    bar = tqdm(total=sum(len(items) for _, items in benchmarks.values()), desc="decontam index: items", unit="item",
               disable=not progress, file=sys.stderr, dynamic_ncols=True)
    for b, (name, (source, items)) in enumerate(benchmarks.items()):
        names.append(name)
        check_indexable(name, source, items, min_words)
        h, o, indexed = _pairs(items, len(table), n, min_words, lengths)
        stats[name] = {"source": source, "items": len(items), "indexed_items": len(indexed), "ngrams": int(len(h)),
                       "languages": language_counts(items, len(table), indexed)}
        table.extend([b, it.key, (it.segments[0] if it.segments else "")[:PREVIEW_CHARS]] for it in items)
        all_h.append(h)
        all_o.append(o)
        bar.update(len(items))
    bar.close()
    hashes, owners = _sorted_unique(
        np.concatenate(all_h) if all_h else np.zeros(0, np.uint64),
        np.concatenate(all_o) if all_o else np.zeros(0, np.uint32),
    )
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "normalization": NORMALIZATION,
        "n": n,
        "min_words": min_words,
        "scale": SCALE_VERSION,  # n and min_words are English words; other scripts' sizes scaled (curate.lang.scale)
        "lengths": sorted(lengths),  # the n-gram lengths in the index, in units: what a scan computes
        "benchmarks": stats,
        "entries": int(len(hashes)),
        "frequency_cap": None,
    }
    if corpus_sample is not None and max_doc_freq is not None:
        index = NgramIndex(hashes, owners, table, names, meta)
        sample = tqdm(corpus_sample, desc="decontam index: corpus sample", unit="doc", disable=not progress,
                      file=sys.stderr, dynamic_ncols=True)
        common, docs = index.common_ngrams(sample, max_doc_freq)
        sample.close()
        if not docs:
            raise UsageError("the corpus sample has no documents, so the frequency cap would count nothing; "
                             "check the sample files and the text field (--text-key)")
        keep = ~np.isin(hashes, common)
        hashes, owners = hashes[keep], owners[keep]
        meta["entries"] = int(len(hashes))
        meta["frequency_cap"] = {"sample_docs": docs, "max_doc_freq": max_doc_freq, "removed_ngrams": int(len(common))}
    meta["build_seconds"] = round(time.time() - t0, 3)
    out = os.fspath(out_dir)  # a local directory or an fsspec URL (s3://…)
    # The transaction: everything above is computed before the folder is touched; then the marker goes first
    # (an interrupted rebuild must not look complete), the arrays are published whole, and the marker last.
    # `curate decontam index` holds the folder's lock throughout, so two builds never interleave their files.
    fs.makedirs(out)
    fs.remove(fs.join(out, "index.json"))
    _save_npy(fs.join(out, "hashes.npy"), hashes)
    _save_npy(fs.join(out, "items.npy"), owners)
    atomic_write_text(fs.join(out, "items.json"), json.dumps({"benchmarks": names, "items": table}, ensure_ascii=False))
    atomic_write_text(fs.join(out, "index.json"), json.dumps(meta, indent=1))
    return meta


def _save_npy(path: str, arr: np.ndarray) -> None:
    with fs.atomic_open(path, "wb") as f:
        np.save(f, arr)


class NgramIndex:
    """A loaded index: find benchmark items in texts."""

    def __init__(self, hashes: np.ndarray, owners: np.ndarray, table: list, names: list[str], meta: dict):
        self.hashes, self.owners, self.table, self.names, self.meta = hashes, owners, table, names, meta
        self.n, self.min_words = meta["n"], meta["min_words"]
        self.lengths = meta["lengths"]
        self._bits, self._shift = _bitmap(np.asarray(hashes))

    @classmethod
    def load(cls, path: str | os.PathLike) -> NgramIndex:
        """Load an index directory; one at an fsspec URL is first copied to the local cache, once per machine."""
        try:
            p = Path(local_copy(path, FILES))
        except FileNotFoundError:
            p = None
        if p is None or not (p / "index.json").is_file():
            raise IndexFormatError(
                f"no decontamination index at {os.fspath(path)} (missing index.json); build one with `curate decontam index`"
            )
        meta = json.loads((p / "index.json").read_text())
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise IndexFormatError(
                f"{p}: index format {meta.get('format')!r} version {meta.get('version')!r}; this Peneira reads "
                f"{FORMAT!r} version {VERSION}: rebuild it with `curate decontam index`"
            )
        if meta.get("normalization") != NORMALIZATION:
            raise IndexFormatError(
                f"{p}: built with normalisation {meta.get('normalization')!r}, this Peneira uses {NORMALIZATION!r}: "
                "rebuild it with `curate decontam index`"
            )
        try:
            hashes = np.load(p / "hashes.npy", mmap_mode="r")
            owners = np.load(p / "items.npy", mmap_mode="r")
            items = json.loads((p / "items.json").read_text())
        except (OSError, ValueError) as e:
            raise IndexFormatError(f"{p}: incomplete index ({e}); rebuild it with `curate decontam index`") from None
        if len(hashes) != meta["entries"] or len(owners) != len(hashes) or hashes.dtype != np.uint64:
            raise IndexFormatError(f"{p}: index arrays do not match index.json; rebuild it with `curate decontam index`")
        return cls(hashes, owners, items["items"], items["benchmarks"], meta)

    def benchmark_of(self, item: int) -> str:
        return self.names[self.table[item][0]]

    def key_of(self, item: int) -> str:
        return self.table[item][1]

    def _hits(self, wb: WordBatch) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Per n-gram length k: (k, first word, hash, lo, hi) of the n-grams present in the index.

        `hashes[lo:hi]` are the matching entries, so `owners[lo:hi]` are the items an n-gram belongs to.
        """
        out: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        if not len(self.hashes):
            return out
        for k in self.lengths:
            g, valid = wb.grams(k)
            slot = g >> self._shift
            maybe = np.flatnonzero(valid & ((self._bits[slot >> _U3] >> (slot & _U7).astype(np.uint8)) & 1).astype(bool))
            pos = np.searchsorted(self.hashes, g[maybe])
            np.minimum(pos, len(self.hashes) - 1, out=pos)
            found = self.hashes[pos] == g[maybe]
            idx, pos = maybe[found], pos[found]
            if len(idx):
                out.append((k, idx, g[idx], pos, np.searchsorted(self.hashes, g[idx], side="right")))
        return out

    def scan(self, texts: list[str]) -> list[list[Match]]:
        """The items found in each text, one `Match` per contiguous matched span, in text order.

        Overlapping n-gram hits of one item merge into one span, so a copied 40-word question is one
        match covering the question, not 28 overlapping 13-grams.
        """
        wb = WordBatch.from_texts(texts)
        raw: list[dict[int, list[tuple[int, int]]]] = [{} for _ in texts]
        for k, idx, _, lo, hi in self._hits(wb):
            cols = (wb.doc[idx], wb.start[idx], wb.end[idx + k - 1], lo, hi)
            for d, s, e, a, b in zip(*(c.tolist() for c in cols), strict=True):
                for item in self.owners[a:b].tolist():
                    raw[d].setdefault(item, []).append((s, e))
        out: list[list[Match]] = []
        for text, by_item in zip(texts, raw, strict=True):
            if not by_item:
                out.append([])
                continue
            decoded, emap = unentity(text)  # offsets of the decoded text in `text` (None: the same)
            cmap = char_map(decoded)  # exact: row 0 maps starts, row 1 ends
            matches = []
            for item, spans in by_item.items():
                for s, e in merge_spans(spans):
                    if cmap is not None:
                        s, e = int(cmap[0, s]), int(cmap[1, e])
                    if emap is not None:
                        s, e = int(emap[s]), int(emap[e])
                    matches.append(Match(item, s, e))
            matches.sort(key=lambda m: (m.start, m.end, m.item))
            out.append(matches)
        return out

    def common_ngrams(self, texts: Iterable[str], max_doc_freq: int, batch: int = 256) -> tuple[np.ndarray, int]:
        """Index hashes that occur in more than `max_doc_freq` of `texts`, and how many texts were read."""
        found, docs, buf = [], 0, []

        def flush() -> None:
            wb = WordBatch.from_texts(buf)
            for _, idx, g, _, _ in self._hits(wb):
                doc = wb.doc[idx]
                pairs = np.unique(np.stack([doc.astype(np.uint64), g]), axis=1)  # once per document
                found.append(pairs[1])

        for t in texts:
            buf.append(t)
            docs += 1
            if len(buf) >= batch:
                flush()
                buf = []
        if buf:
            flush()
        if not found:
            return np.zeros(0, np.uint64), docs
        uniq, counts = np.unique(np.concatenate(found), return_counts=True)
        return uniq[counts > max_doc_freq], docs


_U3, _U7 = np.uint64(3), np.uint64(7)


def _bitmap(hashes: np.ndarray) -> tuple[np.ndarray, np.uint64]:
    """A one-hash Bloom filter over the top bits of the hashes, about 64 bits per entry.

    Nearly every n-gram of a document is absent from the index; one random read of a ~16 MB bitmap
    rejects ~98% of them, where a binary search over the sorted array costs ~20 cache misses each.
    """
    bits = max(16, int(np.ceil(np.log2(max(len(hashes), 1) * 64))))
    shift = np.uint64(64 - bits)
    table = np.zeros(1 << (bits - 3), dtype=np.uint8)
    slot = hashes >> shift
    byte, bit = slot >> _U3, (slot & _U7).astype(np.uint8)
    for b in range(8):  # one bit value per pass, so repeated bytes in the fancy index all agree
        sel = byte[bit == b]
        table[sel] |= np.uint8(1 << b)
    return table, shift


def merge_spans(spans: Iterable[tuple[int, int]], gap: int = 0) -> list[tuple[int, int]]:
    """Sorted union of [start, end) spans; spans closer than `gap` characters join."""
    out: list[list[int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1] + gap:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]
