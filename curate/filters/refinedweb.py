"""RefinedWeb's line-wise corrections (Penedo et al. 2023, appendix G.2), with DCLM-Baseline's parameters.

Pages that pass the document rules still carry interface lines: social counters ("12 likes"), shouted
navigation, bare numbers, one-word menu items, "Read more..." links. This step removes such lines,
and drops the page when they make up more than `max_removed_word_ratio` of its words: a page that
needs that much repair is boilerplate, not prose with a few stray lines.
"""

from __future__ import annotations

import re
from collections import Counter

from curate.core.document import Document
from curate.core.stats import StepStats
from curate.core.step import Reject, Result, Step
from curate.core.validate import check
from curate.lang import units_version, word_count

COUNTER_LINE = re.compile(
    r"^\W*\d(?:[,.\d])*(?:[KkMmBb])?\s+(?:likes?|shares?|comments?|retweets?|reposts?|quotes?|bookmarks?|"
    r"upvotes?|downvotes?|downloads?|views?|followers?)\W*$", re.IGNORECASE)
# (snippet, where it may sit in a short line) as DCLM-Baseline's substring_line_modifier entries
SNIPPETS = (("items in cart", "any"), ("Read more...", "suffix"), ("Sign-in", "prefix"))


class RefinedWebLines(Step):
    """Remove interface lines; reject the page (`too_many_removed_words`) when they held too many words.

    Per non-blank line, in order: more than `max_uppercase_ratio` of its characters upper-case
    (`uppercase`); more than `max_numeric_ratio` digits (`numeric`); a social counter (`counter`);
    fewer than `min_words_per_line` words (`too_few_words`). Lines of at most `snippet_max_words` words
    lose the snippets in `SNIPPETS` (`snippet`). Words are whitespace-separated, or in Chinese, Japanese,
    Thai, Lao, Khmer and Burmese (`doc.lang`, else `default_lang`) the segmented words of `curate.lang.word_count`;
    removed lines per rule are counted in `stats.extra` (`lines_<rule>`).
    """

    name = "refinedweb_lines"

    def __init__(
        self,
        max_uppercase_ratio: float = 0.5,
        max_numeric_ratio: float = 0.999999,
        min_words_per_line: int = 2,
        snippet_max_words: int = 10,
        max_removed_word_ratio: float = 0.05,
        default_lang: str = "en",
    ):
        self.max_uppercase_ratio = check(self, "max_uppercase_ratio", max_uppercase_ratio, float, lo=0, hi=1)
        self.max_numeric_ratio = check(self, "max_numeric_ratio", max_numeric_ratio, float, lo=0, hi=1)
        self.min_words_per_line = check(self, "min_words_per_line", min_words_per_line, int, lo=0)
        self.snippet_max_words = check(self, "snippet_max_words", snippet_max_words, int, lo=0)
        self.max_removed_word_ratio = check(self, "max_removed_word_ratio", max_removed_word_ratio, float, lo=0, hi=1)
        self.default_lang = check(self, "default_lang", default_lang, str)
        self.text_units = units_version()
        self._lines: Counter = Counter()

    def _line_rule(self, line: str, lang: str) -> str | None:
        n = len(line)
        if sum(c.isupper() for c in line) / n > self.max_uppercase_ratio:
            return "uppercase"
        if sum(c.isdigit() for c in line) / n > self.max_numeric_ratio:
            return "numeric"
        if COUNTER_LINE.match(line):
            return "counter"
        if word_count(line, lang) < self.min_words_per_line:
            return "too_few_words"
        return None

    def _strip_snippets(self, line: str, lang: str) -> str:
        if word_count(line, lang) > self.snippet_max_words:
            return line
        for snippet, where in SNIPPETS:
            if where == "any":
                line = line.replace(snippet, "")
            elif where == "suffix" and line.endswith(snippet):
                line = line[: -len(snippet)]
            elif where == "prefix" and line.startswith(snippet):
                line = line[len(snippet) :]
        return line.strip()

    def clean(self, text: str, lang: str = "en") -> str:
        kept = []
        for line in text.splitlines():
            s = line.strip()
            if s:
                rule = self._line_rule(s, lang)
                if rule:
                    self._lines[rule] += 1
                    continue
                cut = self._strip_snippets(s, lang)
                if cut != s:
                    self._lines["snippet"] += 1
                    if not cut:
                        continue
                    line = cut
            kept.append(line)
        return "\n".join(kept).strip()

    def apply(self, doc: Document) -> Result:
        lang = doc.lang or self.default_lang
        before = word_count(doc.text, lang)
        text = self.clean(doc.text, lang)
        if before and (before - word_count(text, lang)) / before > self.max_removed_word_ratio:
            return Reject("too_many_removed_words")
        if text != doc.text:
            doc.text = text
        return doc

    def finish(self, stats: StepStats) -> None:
        for rule, n in sorted(self._lines.items()):
            stats.extra[f"lines_{rule}"] = n
        self._lines = Counter()
