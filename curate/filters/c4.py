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

from curate.core.document import Document
from curate.core.stats import StepStats
from curate.core.step import Reject, Result, Step
from curate.core.validate import check, check_strings
from curate.filters._text import shipped_languages
from curate.filters.badwords import BadWordMatcher

CITATION = re.compile(r"\[\d*\]|\[edit\]|\[citation needed\]", re.IGNORECASE)
POLICY_SUBSTRINGS = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")
END_MARKS = (".", "?", "!", '"')
# A sentence boundary inside a line: end punctuation (and closing quotes/brackets), space, then a capital
# or digit, unless the mark follows an abbreviation. Not punkt, but it agrees on the count that matters (is it at
# least 3?) for ordinary prose. Written as one regex with the abbreviations as lookbehinds, it tried every mark of
# a run of periods as a start and read the run to its end from each: quadratic in the run. So the regex finds each
# run once, from its first mark, and the abbreviations are checked there after: a run of two or more marks always
# has a start that no abbreviation precedes (its second mark follows a mark), a lone mark only if none does.
_STOP_RUN = re.compile(r"(?<![.!?])([.!?]+)[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-ZÀ-ÖØ-Þ0-9])")
_ABBREVIATION_BEFORE = re.compile(r"(?<=\b[A-Z])|(?<=\bMr)|(?<=\bMrs)|(?<=\bMs)|(?<=\bDr)|(?<=\bSt)|(?<=\bvs)|"
                                  r"(?<=\bSr)|(?<=\bJr)|(?<=\be\.g)|(?<=\bi\.e)|(?<=\betc)")


def count_sentences(line: str) -> int:
    """Sentences in a non-empty line: one more than the sentence breaks inside it. Linear in its length."""
    s = line.rstrip()
    after = _ABBREVIATION_BEFORE.match
    return 1 + sum(1 for m in _STOP_RUN.finditer(s) if m.end(1) - m.start(1) > 1 or not after(s, m.start()))


class C4(Step):
    """Rewrites pages to their prose lines and drops pages that C4 would drop.

    Reasons: `lorem_ipsum`, `curly_bracket`, `too_few_sentences`, `bad_words`. Lines removed per rule are
    counted in `stats.extra` (`lines_<rule>`), with `docs_rewritten`. Bad words are checked on the kept
    text for documents whose language (`doc.lang`, else `default_lang`) is in `bad_words_languages`
    (English only by default: the reference list and cleaning are English).
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
        self._bad: BadWordMatcher | None = None
        self._lines: Counter = Counter()
        self._rewritten = 0

    def setup(self) -> None:
        if self.bad_words_languages:
            self._bad = BadWordMatcher.shipped(self.bad_words_languages)

    def clean(self, text: str) -> tuple[list[str], int, str | None]:
        """(kept lines, sentences in them, page-dropping rule or None); counts removed lines per rule."""
        kept: list[str] = []
        sentences = 0
        dropped = self._lines
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            if self.max_word_length and len(line) > self.max_word_length and any(
                len(w) > self.max_word_length for w in line.split()
            ):
                dropped["too_long_word"] += 1
                continue
            if self.remove_citations and "[" in line:
                line = CITATION.sub("", line)
            if self.require_terminal_punct and (not line.endswith(self.end_marks) or line.endswith("...")):
                dropped["no_terminal_punct"] += 1
                continue
            if len(line.split()) < self.min_words_per_line:
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
            sentences += count_sentences(line)
            kept.append(line)
        return kept, sentences, None

    def apply(self, doc: Document) -> Result:
        kept, sentences, rule = self.clean(doc.text)
        if rule is not None:
            return Reject(rule)
        if sentences < self.min_sentences:
            return Reject("too_few_sentences")
        text = "\n".join(kept)
        lang = doc.lang or self.default_lang
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
