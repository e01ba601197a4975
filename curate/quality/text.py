"""Training examples for the quality classifier, and the one text form used at train and predict time.

fastText sees a document as one line of whitespace-separated tokens, so both sides of the model
(training lines and scored pages) go through `classifier_text`: lower-cased, punctuation split from words,
whitespace folded, capped at `MAX_CHARS`. Splitting punctuation matters on real data: tokenised
corpora (WikiText writes "word ," where the web writes "word,") would otherwise teach the model a
spacing artefact instead of prose quality.
"""

from __future__ import annotations

import gzip
import io
import re
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from curate.core.errors import UsageError
from curate.core.stats import StepStats
from curate.io import kinds
from curate.io.fs import expand_inputs
from curate.io.readers import Jsonl, Parquet

MAX_CHARS = 10_000  # predict cost is linear in length; the first 10k characters show the kind of page
CHUNK_WORDS = 400  # plain-text files are cut into documents of about this many words (a web page's median)
_TOKEN = re.compile(r"\w+|[^\w\s]")
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")


def classifier_text(text: str) -> str:
    """The model's view of a document: one line, lower-cased, punctuation as tokens, at most MAX_CHARS."""
    out = " ".join(_TOKEN.findall(text[:MAX_CHARS].lower()))
    # A literal "__label__x" token in a training line would be read by fastText as a second label.
    return out.replace("__label__", "label") if "__label__" in out else out


def chunk_text(text: str, chunk_words: int = CHUNK_WORDS) -> list[str]:
    """Cut a long text into documents of about `chunk_words` words without splitting a paragraph.

    Paragraphs are blank-line separated blocks; a text without blank lines (one post or message per
    line) is cut at line ends instead. A short tail joins the previous document rather than becoming
    a fragment that would be a poor training example.
    """
    blocks = _BLANK_LINE.split(text) if _BLANK_LINE.search(text) else text.splitlines()
    docs: list[list[str]] = []
    current: list[str] = []
    words = 0
    for block in blocks:
        block = block.strip()
        if not block:
            continue
        current.append(block)
        words += len(block.split())
        if words >= chunk_words:
            docs.append(current)
            current, words = [], 0
    if current:
        if docs and words < chunk_words // 4:
            docs[-1].extend(current)
        else:
            docs.append(current)
    return ["\n\n".join(d) for d in docs]


@dataclass
class Examples:
    """One class of training or evaluation examples (`classifier_text` of each), with where each came from.

    `group[i]` numbers the input document example i was cut from (a record, or a text file), so that a
    held-out split can keep every chunk of one document on one side; `source[i]` indexes `files`.
    """

    lines: list[str] = field(default_factory=list)
    group: list[int] = field(default_factory=list)
    source: list[int] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)

    def words(self) -> list[int]:
        return [x.count(" ") + 1 for x in self.lines]

    def subset(self, keep: list[int]) -> Examples:
        return Examples([self.lines[i] for i in keep], [self.group[i] for i in keep], [self.source[i] for i in keep],
                        self.files, self.skipped)

    def summary(self) -> str:
        skipped = ", ".join(f"{n:,} {reason}" for reason, n in self.skipped.most_common())
        words = sum(self.words())
        return (f"{len(self.lines):,} examples ({words:,} words) from {len(self.files):,} files"
                + (f" (skipped {skipped})" if skipped else ""))


def _read_text_file(path: str) -> str:
    compression = kinds.kind_of(path).compression  # content first, then the name (issue 42.1)
    if compression == "gzip":
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            return f.read()
    if compression == "zstd":
        import zstandard

        with zstandard.open(path, "rb") as raw:
            return io.TextIOWrapper(raw, encoding="utf-8", errors="replace").read()
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def _iter_file(path: str, text_key: str, chunk_words: int, skipped: Counter) -> Iterator[list[str]]:
    """The documents of one input file, each as its list of chunks: a JSONL or Parquet record, a zip
    member or a whole text file is one document, cut into examples of about `chunk_words` words."""
    lower, fmt = path.lower(), kinds.name_kind(path).format
    if fmt in ("jsonl", "parquet"):
        reader = Parquet(text_key=text_key) if fmt == "parquet" else Jsonl(text_key=text_key)
        stats = StepStats("read")
        for doc in reader.read(path, stats):
            yield chunk_text(doc.text, chunk_words) or [doc.text]  # an empty record is counted, not lost
        skipped.update(stats.dropped)
        return
    if lower.endswith(".zip"):
        try:
            archive = zipfile.ZipFile(path)
        except zipfile.BadZipFile as e:
            raise UsageError(f"{path}: not a zip file ({e})") from e
        with archive:
            for member in archive.infolist():
                if member.is_dir():
                    continue
                if not member.filename.lower().endswith(".txt"):
                    skipped["read:zip_member_not_txt"] += 1  # READMEs and licences are not examples
                    continue
                text = archive.read(member).decode("utf-8", errors="replace")
                yield chunk_text(text, chunk_words) or [text]
        return
    text = _read_text_file(path)
    yield chunk_text(text, chunk_words) or [text]


def load_examples(patterns: str | list[str], text_key: str = "text", chunk_words: int = CHUNK_WORDS) -> Examples:
    """Read one class from globs of text, zip, JSONL and Parquet files, every document cut into chunks.

    Every input kind is chunked alike (a long JSONL record is many examples, as a long text file is),
    so that one book is not one example truncated to MAX_CHARS. Examples that come out empty and exact
    repeats (in classifier form) are skipped with a count: a repeat that lands on both sides of the
    held-out split would inflate the metrics.
    """
    files = expand_inputs(patterns)
    ex = Examples(files=list(files))
    seen: set[int] = set()
    group = 0
    for k, path in enumerate(files):
        for chunks in _iter_file(path, text_key, chunk_words, ex.skipped):
            for text in chunks:
                line = classifier_text(text)
                key = hash(line)
                if not line:
                    ex.skipped["empty"] += 1
                elif key in seen:
                    ex.skipped["duplicate"] += 1
                else:
                    seen.add(key)
                    ex.lines.append(line)
                    ex.group.append(group)
                    ex.source.append(k)
            group += 1
    return ex
