"""The `Decontaminate` step: drop or redact documents that contain benchmark items."""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import ClassVar

from curate.core.document import Document
from curate.core.stats import StepStats
from curate.core.step import Reject, Result, Step
from curate.core.validate import check, config_error
from curate.decontam.index import Match, NgramIndex, merge_spans

MODES = ("drop", "redact")
SNIPPET_CHARS = 200  # matched text kept in metadata per match, for `curate decontam report`
SNIPPETS_PER_DOC = 20  # matches beyond this keep benchmark, item and span but not the text
_TRAILING_PART = re.compile(r"\S+$")
_LEADING_PART = re.compile(r"^\S+")


class Decontaminate(Step):
    """Find benchmark items (n-gram overlap with an index from `curate decontam index`) in documents.

    * `mode="drop"`: a document with any match is dropped with reason `decontam:contaminated`.
    * `mode="redact"`: `window_chars` characters either side of each match are cut out (plus the word
      the cut lands in), and the remaining pieces are joined by blank lines. A document cut into more
      than `max_pieces` pieces is dropped as `decontam:too_fragmented`, one left with fewer than
      `min_chars_left` characters as `decontam:too_short`: what is left of them is mostly seams. The
      redacted text is scanned again, and one that still matches (pieces joined across a cut can spell
      another item) is dropped as `decontam:still_contaminated`, so redacted output always scans clean.

    Every document with a match gets `metadata["decontam"]`: a list of
    `{"benchmark", "item", "span": [start, end], "text"}` (span in the text as it was before any
    redaction), so dropped documents in `rejected/` and redacted ones in `data/` both say what leaked.
    Per task, `stats.extra` holds `docs_hit:<benchmark>` and `matches:<benchmark>` counts.
    """

    name: ClassVar[str] = "decontam"
    file_params: ClassVar[tuple[str, ...]] = ("index_path",)

    def __init__(
        self,
        index_path: str,
        mode: str = "drop",
        window_chars: int = 200,
        max_pieces: int = 10,
        min_chars_left: int = 200,
    ):
        if not isinstance(index_path, (str, os.PathLike)) or not os.fspath(index_path):
            raise config_error(self, f"index_path must be a path, got {index_path!r}")
        self.index_path = str(index_path)
        self.mode = check(self, "mode", mode, choices=MODES)
        self.window_chars = check(self, "window_chars", window_chars, int, lo=0)
        self.max_pieces = check(self, "max_pieces", max_pieces, int, lo=1)
        self.min_chars_left = check(self, "min_chars_left", min_chars_left, int, lo=0)
        self._index: NgramIndex | None = None
        self._counts: Counter = Counter()

    def __getstate__(self) -> dict:
        """Pickle without the loaded index: workers load their own in `setup()`."""
        return {**self.__dict__, "_index": None, "_counts": Counter()}

    def setup(self) -> None:
        self._index = NgramIndex.load(self.index_path)
        self._counts = Counter()

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        if self._index is None:  # used outside a pipeline run
            self.setup()
        assert self._index is not None
        out: list[Result] = []
        for doc, matches in zip(docs, self._index.scan([d.text for d in docs]), strict=True):
            if not matches:
                out.append(doc)
                continue
            self._record(doc, matches)
            out.append(Reject("contaminated") if self.mode == "drop" else self._redact(doc, matches))
        return out

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def _record(self, doc: Document, matches: list[Match]) -> None:
        idx = self._index
        assert idx is not None
        entries = []
        for i, m in enumerate(matches):
            e = {"benchmark": idx.benchmark_of(m.item), "item": idx.key_of(m.item), "span": [m.start, m.end]}
            if i < SNIPPETS_PER_DOC:
                e["text"] = doc.text[m.start : m.end][:SNIPPET_CHARS]
            entries.append(e)
        doc.metadata["decontam"] = entries
        for bench in {e["benchmark"] for e in entries}:
            self._counts[f"docs_hit:{bench}"] += 1
        for e in entries:
            self._counts[f"matches:{e['benchmark']}"] += 1

    def _redact(self, doc: Document, matches: list[Match]) -> Result:
        text, w = doc.text, self.window_chars
        cuts = merge_spans((max(0, m.start - w), min(len(text), m.end + w)) for m in matches)
        pieces, prev = [], 0
        for s, e in [*cuts, (len(text), len(text))]:
            piece = text[prev:s]
            if s < len(text) and s > 0 and not text[s - 1].isspace() and not text[s].isspace():
                piece = _TRAILING_PART.sub("", piece)  # the cut landed inside a word: drop its left half
            if prev > 0 and prev < len(text) and not text[prev - 1].isspace() and not text[prev].isspace():
                piece = _LEADING_PART.sub("", piece)  # ...and its right half
            piece = piece.strip()
            if piece:
                pieces.append(piece)
            prev = e
        if len(pieces) > self.max_pieces:
            return Reject("too_fragmented")
        kept = sum(len(p) for p in pieces)
        if kept < self.min_chars_left:
            return Reject("too_short")
        redacted = "\n\n".join(pieces)
        assert self._index is not None
        if self._index.scan([redacted])[0]:  # pieces joined across a cut can spell another item: never let one out
            return Reject("still_contaminated")
        doc.metadata["decontam_cuts"] = [list(c) for c in cuts]
        self._counts["docs_redacted"] += 1
        self._counts["chars_redacted"] += len(text) - kept
        doc.text = redacted
        return doc

    def finish(self, stats: StepStats) -> None:
        stats.extra.update(self._counts)
        if self._index is not None:
            stats.extra["index"] = self.index_path
            stats.extra["benchmarks"] = {b: v["items"] for b, v in self._index.meta["benchmarks"].items()}
        self._counts = Counter()
