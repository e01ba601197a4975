"""Gopher quality and repetition rules (Rae et al. 2021, "Scaling Language Models", appendix A1).

Defaults are the published thresholds. Each rule that fires is its own drop reason, checked in the
order listed, so the first rule a document breaks is the one it is counted under.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import numpy as np

from curate.core.document import Document
from curate.core.stats import StepStats
from curate.core.step import Filter, Reject
from curate.core.validate import check, check_order, check_strings, config_error
from curate.filters._text import HAS_LETTER, find_duplicates, shipped_words, text_stats
from curate.lang import units_version

try:
    import curate.filters._repetition as _repetition
except ImportError:  # a source tree without the built extension
    _repetition = None

# The paper's list: a document must contain at least two of these English words.
GOPHER_STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})
BULLETS = ("•", "‣", "·", "-", "*")
ELLIPSES = ("...", "…")


_ALNUM = re.compile(r"[^\W_]")


def _stop_word_table(stop_words: Iterable[str] | Mapping[str, Iterable[str]] | None) -> dict[str, frozenset[str]]:
    if stop_words is None:
        return {}
    owner = "GopherQuality"
    if isinstance(stop_words, Mapping):
        return {check(owner, "stop_words language", lang, str): frozenset(
            w.lower() for w in check_strings(owner, f"stop_words[{lang!r}]", ws)) for lang, ws in stop_words.items()}
    return {"*": frozenset(w.lower() for w in check_strings(owner, "stop_words", stop_words))}


def _ngram_limits(owner: str, name: str, limits: Mapping[int, float]) -> dict[int, float]:
    """{n: fraction} with n >= 2 (the n-gram rules start at bigrams)."""
    if not isinstance(limits, Mapping):
        raise config_error(owner, f"{name} must be a dict {{n: fraction}}, got {limits!r}")
    for n, frac in limits.items():
        check(owner, f"{name} n-gram size", n, int, lo=2)
        check(owner, f"{name}[{n}]", frac, float, lo=0, hi=1)
    return dict(limits)


class GopherQuality(Filter):
    """Drops documents that do not look like prose: too short or long, odd word lengths, symbol-heavy,
    list-like, or without the function words every real sentence has.

    Ratios "per word" (hashes, ellipses, words with a letter) divide by words plus punctuation tokens, as
    the tokenizer-based reference implementations (datatrove, used for FineWeb) do, and so agree with
    them. `punctuation_counts_as_words=False` divides by words only, the paper's wording: comma-rich
    prose with numbers then survives the 80% alphabetic-words rule (40 of the 378 Bosque Portuguese
    news documents of 50+ words fail it by default, none without punctuation). Stop words are looked up in the document's language (`doc.lang`, else
    `default_lang`): English uses the paper's eight words, other languages the shipped NLTK (Snowball)
    list; pass `stop_words` (a list, or a dict per language) to override. A language without a list
    skips that one rule and is counted in `stats.extra["stop_words_unavailable"]`. Words are those of the
    document's language (`curate.lang.words`): segmented by ICU for Chinese, Japanese, Thai, Lao, Khmer and
    Burmese, where a whitespace split would make a sentence one word.
    """

    name = "gopher_quality"

    def __init__(
        self,
        min_words: int = 50,
        max_words: int = 100_000,
        min_mean_word_length: float = 3,
        max_mean_word_length: float = 10,
        max_hash_ratio: float = 0.1,
        max_ellipsis_ratio: float = 0.1,
        max_bullet_lines_ratio: float = 0.9,
        max_ellipsis_lines_ratio: float = 0.3,
        min_alpha_words_ratio: float = 0.8,
        min_stop_words: int = 2,
        stop_words: Iterable[str] | Mapping[str, Iterable[str]] | None = None,
        default_lang: str = "en",
        punctuation_counts_as_words: bool = True,
        stop_words_counted: str = "distinct",
    ):
        self.min_words = check(self, "min_words", min_words, int, lo=0)
        self.max_words = check(self, "max_words", max_words, int, lo=0)
        check_order(self, "min_words", min_words, "max_words", max_words)
        self.min_mean_word_length = check(self, "min_mean_word_length", min_mean_word_length, float, lo=0)
        self.max_mean_word_length = check(self, "max_mean_word_length", max_mean_word_length, float, lo=0)
        check_order(self, "min_mean_word_length", min_mean_word_length, "max_mean_word_length", max_mean_word_length)
        # per-word counts, not shares: a page can hold more "#" than words
        self.max_hash_ratio = check(self, "max_hash_ratio", max_hash_ratio, float, lo=0)
        self.max_ellipsis_ratio = check(self, "max_ellipsis_ratio", max_ellipsis_ratio, float, lo=0)
        self.max_bullet_lines_ratio = check(self, "max_bullet_lines_ratio", max_bullet_lines_ratio, float, lo=0, hi=1)
        self.max_ellipsis_lines_ratio = check(self, "max_ellipsis_lines_ratio", max_ellipsis_lines_ratio, float,
                                              lo=0, hi=1)
        self.min_alpha_words_ratio = check(self, "min_alpha_words_ratio", min_alpha_words_ratio, float, lo=0, hi=1)
        self.min_stop_words = check(self, "min_stop_words", min_stop_words, int, lo=0)
        self.stop_words = _stop_word_table(stop_words)
        self.default_lang = check(self, "default_lang", default_lang, str)
        self.punctuation_counts_as_words = check(self, "punctuation_counts_as_words", punctuation_counts_as_words, bool)
        # DCLM-Baseline counts every occurrence (its `count_unique: False`); Gopher and datatrove distinct words
        self.stop_words_counted = check(self, "stop_words_counted", stop_words_counted,
                                        choices=("distinct", "occurrences"))
        self.text_units = units_version()  # words per language (curate.lang): a change re-runs, not resumes
        self._unavailable = 0

    def _stop_words(self, lang: str) -> frozenset[str] | None:
        if lang in self.stop_words or "*" in self.stop_words:
            return self.stop_words.get(lang, self.stop_words.get("*"))
        if lang == "en":
            return GOPHER_STOP_WORDS
        try:
            return shipped_words("stopwords", lang)
        except KeyError:
            return None

    def reject_rule(self, doc: Document) -> Reject | None:
        lang = doc.lang or self.default_lang
        st = text_stats(doc.text, lang)
        tokens = st.word_tokens
        has_alnum = _ALNUM.search
        words = [t for t in tokens if has_alnum(t)]  # tokens with a letter or digit: what "words" counts
        n = len(words)
        if n < self.min_words or n == 0:  # with min_words=0, a text of no words has no ratios to take
            return Reject("too_few_words", n, self.min_words)
        if n > self.max_words:
            return Reject("too_many_words", n, self.max_words)
        mean_len = sum(map(len, words)) / n
        if mean_len < self.min_mean_word_length:
            return Reject("short_mean_word_length", mean_len, self.min_mean_word_length)
        if mean_len > self.max_mean_word_length:
            return Reject("long_mean_word_length", mean_len, self.max_mean_word_length)
        text = doc.text
        n_tokens = len(tokens) if self.punctuation_counts_as_words else n
        if (r := text.count("#") / n_tokens) > self.max_hash_ratio:
            return Reject("hash_ratio", r, self.max_hash_ratio)
        if (r := sum(map(text.count, ELLIPSES)) / n_tokens) > self.max_ellipsis_ratio:
            return Reject("ellipsis_ratio", r, self.max_ellipsis_ratio)
        lines = [s for s in st.lines if s.strip()]
        if (r := sum(s.lstrip().startswith(BULLETS) for s in lines) / len(lines)) > self.max_bullet_lines_ratio:
            return Reject("bullet_lines", r, self.max_bullet_lines_ratio)
        if (r := sum(s.rstrip().endswith(ELLIPSES) for s in lines) / len(lines)) > self.max_ellipsis_lines_ratio:
            return Reject("ellipsis_lines", r, self.max_ellipsis_lines_ratio)
        has_letter = HAS_LETTER.search
        if (r := sum(1 for w in words if has_letter(w)) / n_tokens) < self.min_alpha_words_ratio:
            return Reject("alpha_words", r, self.min_alpha_words_ratio)
        stop = self._stop_words(lang)
        if stop is None:
            self._unavailable += 1
        elif (k := self._count_stop_words(stop, [t.lower() for t in tokens])) < self.min_stop_words:
            return Reject("stop_words", k, self.min_stop_words)
        return None

    def _count_stop_words(self, stop: frozenset[str], tokens: list[str]) -> int:
        """Stop words among the (lower-cased) tokens. datatrove compares tokens as written, so "The" does not
        count there; lower-casing follows the paper and changes 2 of 2,313 decisions on the fidelity set."""
        if self.stop_words_counted == "occurrences":
            return sum(1 for t in tokens if t in stop)
        return len(stop.intersection(tokens))

    def finish(self, stats: StepStats) -> None:
        if self._unavailable:
            stats.extra["stop_words_unavailable"] = self._unavailable
        self._unavailable = 0


_SPLITS = {2: re.compile(r"\n{2,}"), 1: re.compile(r"\n+")}  # paragraphs, lines


def dup_pieces_python(text: str, min_run: int) -> tuple[int, int, int]:
    """(pieces, repeated pieces, their characters) of `text` cut at runs of `min_run` or more newlines: the
    reference of the compiled `_repetition.dup_pieces`, and the fallback without it."""
    pieces = _SPLITS[min_run].split(text)
    return (len(pieces), *find_duplicates(pieces))


def dup_pieces(text: str, min_run: int) -> tuple[int, int, int]:
    """`dup_pieces_python`'s counts, compiled where the extension is built (one pass, no list of pieces)."""
    if _repetition is None:
        return dup_pieces_python(text, min_run)
    return _repetition.dup_pieces(text, min_run)


_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit multiplier for the rolling n-gram hash


def _scan_repeats(hashes: list[int], csum: np.ndarray, n: int) -> int:
    """Characters in repeated n-grams, counted as the reference implementations do: scan left to right;
    at an n-gram seen before, count its characters and jump past it, else remember it and move one."""
    seen: set[int] = set()
    chars = i = 0
    while i < len(hashes):
        if hashes[i] in seen:
            chars += int(csum[i + n] - csum[i])
            i += n
        else:
            seen.add(hashes[i])
            i += 1
    return chars


class GopherRepetition(Filter):
    """Drops documents that repeat themselves: duplicate lines or paragraphs, one n-gram taking a large
    share of the text, or many characters inside repeated n-grams.

    N-grams are of words and punctuation tokens, the words of the document's language (`doc.lang`, else
    `default_lang`; `curate.lang.words`). Every fraction is of `len(text)`. The top n-gram's
    characters are its length (tokens joined by spaces) times its count. Repeated n-gram characters are
    counted as the reference implementations (datatrove, used for FineWeb) count them, see
    `_scan_repeats`. The counts are compiled (curate/filters/_repetition.c); `ngram_rule_python` and
    `dup_pieces_python` are the Python they replaced, kept as the reference and the fallback.
    """

    name = "gopher_repetition"

    def __init__(
        self,
        max_dup_line_frac: float = 0.30,
        max_dup_para_frac: float = 0.30,
        max_dup_line_char_frac: float = 0.20,
        max_dup_para_char_frac: float = 0.20,
        max_top_ngram_char_frac: Mapping[int, float] | None = None,
        max_dup_ngram_char_frac: Mapping[int, float] | None = None,
        default_lang: str = "en",
    ):
        self.max_dup_line_frac = check(self, "max_dup_line_frac", max_dup_line_frac, float, lo=0, hi=1)
        self.max_dup_para_frac = check(self, "max_dup_para_frac", max_dup_para_frac, float, lo=0, hi=1)
        self.max_dup_line_char_frac = check(self, "max_dup_line_char_frac", max_dup_line_char_frac, float, lo=0, hi=1)
        self.max_dup_para_char_frac = check(self, "max_dup_para_char_frac", max_dup_para_char_frac, float, lo=0, hi=1)
        if max_top_ngram_char_frac is None:
            max_top_ngram_char_frac = {2: 0.20, 3: 0.18, 4: 0.16}
        if max_dup_ngram_char_frac is None:
            max_dup_ngram_char_frac = {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}
        # n -> limit; {} turns the rule off
        self.max_top_ngram_char_frac = _ngram_limits("GopherRepetition", "max_top_ngram_char_frac", max_top_ngram_char_frac)
        self.max_dup_ngram_char_frac = _ngram_limits("GopherRepetition", "max_dup_ngram_char_frac", max_dup_ngram_char_frac)
        self.default_lang = check(self, "default_lang", default_lang, str)
        self.text_units = units_version()

    def reject_rule(self, doc: Document) -> str | Reject | None:
        text = doc.text
        stripped = text.strip()
        if not stripped:
            return "empty"
        paragraphs, dups, dup_chars = dup_pieces(stripped, 2)
        if (r := dups / paragraphs) > self.max_dup_para_frac:
            return Reject("dup_para_frac", r, self.max_dup_para_frac)
        if (r := dup_chars / len(text)) > self.max_dup_para_char_frac:
            return Reject("dup_para_char_frac", r, self.max_dup_para_char_frac)
        lines, dups, dup_chars = dup_pieces(stripped, 1)
        if (r := dups / lines) > self.max_dup_line_frac:
            return Reject("dup_line_frac", r, self.max_dup_line_frac)
        if (r := dup_chars / len(text)) > self.max_dup_line_char_frac:
            return Reject("dup_line_char_frac", r, self.max_dup_line_char_frac)
        return self._ngram_rule(text_stats(text, doc.lang or self.default_lang).word_tokens, len(text))

    def _ngram_rule(self, words: list[str], n_chars: int) -> str | Reject | None:
        """The first n-gram rule over its limit, n ascending, the top rule before the duplicate one at each n.
        The counting is compiled (curate/filters/_repetition.c); the comparisons are the reference's, so
        both give the same decisions (tests/test_gopher_repetition_compiled.py)."""
        top_limits, dup_limits = self.max_top_ngram_char_frac, self.max_dup_ngram_char_frac
        if _repetition is None:  # the extension not built (a source tree): the Python reference
            return ngram_rule_python(words, n_chars, top_limits, dup_limits)
        if len(words) < 2:
            return None
        top, dup = _repetition.ngram_stats(words, tuple(top_limits), tuple(dup_limits))
        for n in range(2, max(top_limits | dup_limits, default=1) + 1):
            if n in top and top[n] / n_chars > top_limits[n]:
                return Reject(f"top_{n}_gram", top[n] / n_chars, top_limits[n])
            if n in dup and dup[n] > dup_limits[n] * n_chars:
                return Reject(f"dup_{n}_gram", dup[n] / n_chars, dup_limits[n])
        return None


def ngram_rule_python(words: list[str], n_chars: int, top: Mapping[int, float], dup: Mapping[int, float]) -> str | None:
    """GopherRepetition's n-gram rules in Python and numpy: the reference the compiled statistics are tested
    against, and the fallback where the extension is not built. A vectorised upper bound skips the
    sequential duplicate scan for the many documents far below the limit."""
    if len(words) < 2:
        return None
    vocab: dict[str, int] = {}
    ids = np.fromiter((vocab.setdefault(w, len(vocab)) + 1 for w in words), dtype=np.uint64, count=len(words))
    lens = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    csum = np.concatenate(([0], np.cumsum(lens)))
    h = ids.copy()  # h[i] = hash of the n-gram starting at word i, for the current n
    for n in range(2, max(top | dup, default=1) + 1):
        if len(words) < n:
            break
        with np.errstate(over="ignore"):
            h = h[:-1] * _HASH_MULT + ids[n - 1 :]
        if n in top:
            _, inverse, counts = np.unique(h, return_inverse=True, return_counts=True)
            per_pos = counts[inverse]
            i = int(per_pos.argmax())  # first occurrence of the most frequent n-gram
            if per_pos[i] * (csum[i + n] - csum[i] + n - 1) / n_chars > top[n]:
                return f"top_{n}_gram"
        if n in dup:
            limit = dup[n] * n_chars
            _, first = np.unique(h, return_index=True)
            repeat = np.ones(len(h), dtype=bool)
            repeat[first] = False
            starts = np.flatnonzero(repeat)
            if len(starts):
                edges = np.bincount(starts, minlength=len(words) + 1) - np.bincount(
                    starts + n, minlength=len(words) + 1
                )
                covered = np.cumsum(edges[:-1]) > 0
                # every character the scan counts lies in a repeated n-gram, so the covered characters
                # bound it from above: only documents over the limit need the sequential scan
                if lens[covered].sum() > limit and _scan_repeats(h.tolist(), csum, n) > limit:
                    return f"dup_{n}_gram"
    return None
