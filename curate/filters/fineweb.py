"""FineWeb's extra quality rules (Penedo et al. 2024), which catch list-like and boilerplate pages that
pass Gopher and C4: few lines ending in punctuation, mostly short lines, duplicated lines, and many
newlines per word."""

from __future__ import annotations

from curate.core.document import Document
from curate.core.step import Filter, Reject
from curate.core.validate import check, check_strings
from curate.filters._text import find_duplicates, text_stats
from curate.lang import terminal_punctuation, units_version


class FineWeb(Filter):
    """Reasons, checked in this order: `empty`, `punct_lines`, `short_lines`, `dup_line_chars`, `newline_ratio`.

    Lines are the non-blank lines, right-stripped. datatrove (FineWeb) does not strip them, so there a
    line ending in ". " does not end in punctuation, and two of NLTK's inaugural addresses, whose lines
    end in a space, fail `punct_lines`; stripping changes 5 of 2,313 decisions on the fidelity set
    (docs/filters.md). `dup_line_chars` is the characters in lines that repeat
    an earlier line over all non-newline characters. `newline_ratio` is newlines per word, the words of the
    document's language (`doc.lang`, else `default_lang`; `curate.lang.words`). `end_chars=None` takes the
    language's sentence-end marks (`curate.lang.terminal_punctuation`: English's are FineWeb's, other languages
    add every script's, such as Burmese ။ and Khmer ។).
    """

    name = "fineweb"

    def __init__(
        self,
        min_punct_line_ratio: float = 0.12,
        punct_exclude_zero: bool = False,
        max_short_line_ratio: float = 0.67,
        short_line_chars: int = 30,
        max_dup_line_char_ratio: float = 0.01,
        max_newline_word_ratio: float = 0.3,
        end_chars: tuple[str, ...] | None = None,
        default_lang: str = "en",
    ):
        self.min_punct_line_ratio = check(self, "min_punct_line_ratio", min_punct_line_ratio, float, lo=0, hi=1)
        self.punct_exclude_zero = check(self, "punct_exclude_zero", punct_exclude_zero, bool)
        self.max_short_line_ratio = check(self, "max_short_line_ratio", max_short_line_ratio, float, lo=0, hi=1)
        self.short_line_chars = check(self, "short_line_chars", short_line_chars, int, lo=0)
        self.max_dup_line_char_ratio = check(self, "max_dup_line_char_ratio", max_dup_line_char_ratio, float, lo=0, hi=1)
        # newlines per word: a share only by habit, a page of one-word lines has 1
        self.max_newline_word_ratio = check(self, "max_newline_word_ratio", max_newline_word_ratio, float, lo=0)
        self.end_chars = None if end_chars is None else check_strings(self, "end_chars", end_chars, empty=False)
        self.default_lang = check(self, "default_lang", default_lang, str)
        self.text_units = units_version()

    def reject_rule(self, doc: Document) -> str | Reject | None:
        lang = doc.lang or self.default_lang
        st = text_stats(doc.text, lang)
        lines = [s.rstrip() for s in st.lines if s.strip()]
        if not lines:
            return "empty"
        ends = terminal_punctuation(lang) if self.end_chars is None else self.end_chars
        ratio = sum(s.endswith(ends) for s in lines) / len(lines)
        if ratio < self.min_punct_line_ratio and not (ratio == 0 and self.punct_exclude_zero):
            return Reject("punct_lines", ratio, self.min_punct_line_ratio)
        if (r := sum(len(s) <= self.short_line_chars for s in lines) / len(lines)) > self.max_short_line_ratio:
            return Reject("short_lines", r, self.max_short_line_ratio)
        text = doc.text
        if (r := find_duplicates(lines)[1] / (len(text) - text.count("\n"))) > self.max_dup_line_char_ratio:
            return Reject("dup_line_chars", r, self.max_dup_line_char_ratio)
        if (r := text.count("\n") / max(len(st.word_tokens), 1)) > self.max_newline_word_ratio:
            return Reject("newline_ratio", r, self.max_newline_word_ratio)
        return None
