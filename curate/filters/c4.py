"""C4's page cleaning (Raffel et al. 2020), with the TensorFlow Datasets reference semantics.

Per line, in order: drop lines with a word over `max_word_length` characters; strip citation markers
(`[1]`, `[edit]`, `[citation needed]`); drop lines not ending in terminal punctuation or ending in "...";
drop lines with fewer than `min_words_per_line` words; a surviving line with "lorem ipsum" or "{" drops
the whole page; drop lines mentioning "javascript" or cookie/terms boilerplate. The page is kept if its
kept lines hold at least `min_sentences` sentences and no listed bad word, with its text rewritten to
those lines. datatrove's variant (3 words per line, 5 sentences, `'` as end mark) is three arguments away:
`C4(min_words_per_line=3, min_sentences=5, end_marks=(".", "?", "!", '"', "'"))`.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import partial

from curate.core.document import Document
from curate.core.stats import StepStats
from curate.core.step import Reject, Result, Step
from curate.core.validate import check, check_strings
from curate.filters._text import shipped_languages
from curate.filters.badwords import BadWordMatcher
from curate.lang import (
    count_sentences,
    is_segmented,
    language,
    terminal_punctuation,
    units,
    units_version,
    word_count,
    words,
)

CITATION = re.compile(r"\[\d*\]|\[edit\]|\[citation needed\]", re.IGNORECASE)
POLICY_SUBSTRINGS = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")
END_MARKS = (".", "?", "!", '"')


def _script_marks(lang: str) -> tuple[str, ...]:
    """End marks C4 adds for a language other than English: its scripts' stops (`curate.lang.STOPS`)."""
    return tuple(m for m in terminal_punctuation(lang) if m not in ".?!")


class C4(Step):
    """Rewrites pages to their prose lines and drops pages that C4 would drop.

    Reasons: `lorem_ipsum`, `curly_bracket`, `too_few_sentences`, `bad_words`. Lines removed per rule are
    counted in `stats.extra` (`lines_<rule>`), with `docs_rewritten`. Bad words are checked on the kept
    text for documents whose language (`doc.lang`, else `default_lang`) is in `bad_words_languages`
    (English only by default: the reference list and cleaning are English).

    Words and sentences are those of the document's language (`doc.lang`, else `default_lang`; `curate.lang`):
    English keeps C4's rules exactly (whitespace words, `count_sentences`' Latin rule); Chinese, Japanese, Thai,
    Lao, Khmer and Burmese lines count their segmented words; every language but English ends lines and
    sentences with its scripts' marks too (`。`, `।`, `။`, `؟`...), added to `end_marks`.
    """

    name = "c4"

    def __init__(
        self,
        min_words_per_line: int = 5,
        min_sentences: int = 3,
        max_word_length: int = 1000,
        remove_citations: bool = True,
        require_terminal_punct: bool = True,
        end_marks: tuple[str, ...] = END_MARKS,
        drop_javascript_lines: bool = True,
        drop_policy_lines: bool = True,
        drop_lorem_ipsum: bool = True,
        drop_curly_bracket: bool = True,
        bad_words_languages: tuple[str, ...] = ("en",),
        default_lang: str = "en",
    ):
        self.min_words_per_line = check(self, "min_words_per_line", min_words_per_line, int, lo=0)
        self.min_sentences = check(self, "min_sentences", min_sentences, int, lo=0)
        self.max_word_length = check(self, "max_word_length", max_word_length, int, lo=0)  # 0: no limit
        self.remove_citations = check(self, "remove_citations", remove_citations, bool)
        self.require_terminal_punct = check(self, "require_terminal_punct", require_terminal_punct, bool)
        self.end_marks = check_strings(self, "end_marks", end_marks, empty=not require_terminal_punct)
        self.drop_javascript_lines = check(self, "drop_javascript_lines", drop_javascript_lines, bool)
        self.drop_policy_lines = check(self, "drop_policy_lines", drop_policy_lines, bool)
        self.drop_lorem_ipsum = check(self, "drop_lorem_ipsum", drop_lorem_ipsum, bool)
        self.drop_curly_bracket = check(self, "drop_curly_bracket", drop_curly_bracket, bool)
        self.bad_words_languages = check_strings(self, "bad_words_languages", bad_words_languages,
                                                 choices=shipped_languages("ldnoobw"))
        self.default_lang = check(self, "default_lang", default_lang, str)
        self.text_units = units_version()
        self._bad: BadWordMatcher | None = None
        self._lines: Counter = Counter()
        self._rewritten = 0

    def setup(self) -> None:
        if self.bad_words_languages:
            self._bad = BadWordMatcher.shipped(self.bad_words_languages)

    def clean(self, text: str, lang: str | None = "en") -> tuple[list[str], int, str | None]:
        """(kept lines, sentences in them, page-dropping rule or None); counts removed lines per rule."""
        kept: list[str] = []
        sentences = 0
        dropped = self._lines
        code = language(lang)
        english = code == "en"
        ends = self.end_marks if english else self.end_marks + _script_marks(code)
        # `count_sentences` (a name of this module, C4's rule) for English, the language's rule for the others
        count = count_sentences if english else partial(units.count_sentences, lang=code)
        split = partial(words, lang=code) if is_segmented(code) else str.split
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            if self.max_word_length and len(line) > self.max_word_length and any(
                len(w) > self.max_word_length for w in split(line)
            ):
                dropped["too_long_word"] += 1
                continue
            if self.remove_citations and "[" in line:
                line = CITATION.sub("", line)
            if self.require_terminal_punct and (not line.endswith(ends) or line.endswith("...")):
                dropped["no_terminal_punct"] += 1
                continue
            if (len(line.split()) if english else word_count(line, code)) < self.min_words_per_line:
                dropped["too_few_words"] += 1
                continue
            lower = line.lower()
            if self.drop_lorem_ipsum and "lorem ipsum" in lower:
                return kept, sentences, "lorem_ipsum"
            if self.drop_javascript_lines and "javascript" in lower:
                dropped["javascript"] += 1
                continue
            if self.drop_curly_bracket and "{" in line:
                return kept, sentences, "curly_bracket"
            if self.drop_policy_lines and any(p in lower for p in POLICY_SUBSTRINGS):
                dropped["policy"] += 1
                continue
            sentences += count(line)
            kept.append(line)
        return kept, sentences, None

    def apply(self, doc: Document) -> Result:
        lang = doc.lang or self.default_lang
        kept, sentences, rule = self.clean(doc.text, lang)
        if rule is not None:
            return Reject(rule)
        if sentences < self.min_sentences:
            return Reject("too_few_sentences", sentences, self.min_sentences)
        text = "\n".join(kept)
        if self._bad is not None and lang in self.bad_words_languages and self._bad.first(text, lang):
            return Reject("bad_words")
        if text != doc.text:
            doc.text = text
            self._rewritten += 1
        return doc

    def finish(self, stats: StepStats) -> None:
        stats.extra["docs_rewritten"] = self._rewritten
        for rule, n in sorted(self._lines.items()):
            stats.extra[f"lines_{rule}"] = n
        self._lines = Counter()
        self._rewritten = 0
