"""Bad-word filtering with the LDNOOBW lists ("List of Dirty, Naughty, Obscene, and Otherwise Bad Words",
https://github.com/LDNOOBW, CC BY 4.0; copies for en, pt, es, fr, de ship in curate/filters/data/ldnoobw).

Matching is by whole words, case-insensitive, like C4's `(?:\\W|^)(w1|w2|…)(?:\\W|$)` regex, but done
on the word list the other filters already computed: single words by set lookup, phrases by comparing
the few word sequences that start with a phrase's first word. This is what makes it cheap.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from curate.core.document import Document
from curate.core.stats import StepStats
from curate.core.step import Filter
from curate.core.validate import check, check_file, check_strings, config_error
from curate.filters._text import TOKEN_RE, read_word_file, shipped_languages, shipped_words, text_stats
from curate.lang import is_segmented


class _Lexicon:
    """One language's list, split into single words, word sequences, and entries with no word characters."""

    def __init__(self, entries: Iterable[str]):
        self.single: set[str] = set()
        self.phrases: dict[str, list[tuple[str, ...]]] = {}
        self.raw: list[str] = []  # e.g. emoji: matched as substrings
        self.entries: list[str] = []  # every entry, for languages that do not space their words
        for e in entries:
            if e.strip():
                self.entries.append(e.strip().lower())
            toks = tuple(TOKEN_RE.findall(e.lower()))
            if not toks:
                self.raw.append(e.lower())
            elif len(toks) == 1:
                self.single.add(toks[0])
            else:
                self.phrases.setdefault(toks[0], []).append(toks)

    def first(self, words: list[str], lower_text: str) -> str | None:
        for i, w in enumerate(words):
            if w in self.single:
                return w
            for phrase in self.phrases.get(w, ()):
                if tuple(words[i : i + len(phrase)]) == phrase:
                    return " ".join(phrase)
        return next((r for r in self.raw if r in lower_text), None)


class BadWordMatcher:
    """Lists per language; `first(text, lang)` returns the first listed word found, or None."""

    def __init__(self, lists: Mapping[str, Iterable[str]]):
        self.lexicons = {lang: _Lexicon(words) for lang, words in lists.items()}

    @classmethod
    def shipped(cls, languages: Iterable[str] | None = None) -> BadWordMatcher:
        langs = shipped_languages("ldnoobw") if languages is None else list(languages)
        missing = [lang for lang in langs if lang not in shipped_languages("ldnoobw")]
        if missing:
            raise ValueError(f"no shipped bad-word list for {missing}; shipped: {shipped_languages('ldnoobw')}")
        return cls({lang: shipped_words("ldnoobw", lang) for lang in langs})

    def first(self, text: str, lang: str) -> str | None:
        lex = self.lexicons.get(lang)
        if lex is None:
            return None
        if is_segmented(lang):  # no spaces to flank a word: a listed entry anywhere in the text, as C4's filter does
            lower = text.lower()  # for ja, th and zh (a segmenter's word boundaries would differ by context)
            return next((e for e in lex.entries if e in lower), None)
        st = text_stats(text)
        return lex.first(st.lower_tokens, text.lower() if lex.raw else "")


class BadWords(Filter):
    """Drops a document containing a listed word for its language (`doc.lang`, else `default_lang`).

    `lists` maps a language to a word list or to a file path (one entry a line); by default the shipped
    LDNOOBW lists for `languages`. Documents in a language without a list are kept and counted in
    `stats.extra["no_list"]`. Reason: `bad_words`. The found words are tallied in `stats.extra` as
    `found:<word>` (the ten most frequent per task), so a user can see what the list actually removes. Note that the LDNOOBW
    lists for languages other than English contain everyday words (pt: "comer", "mama", "saco"), so check
    the tally before enabling them on a large crawl.
    """

    name = "bad_words"
    file_params = ("lists",)

    def __init__(
        self,
        languages: Iterable[str] = ("en",),
        lists: Mapping[str, Iterable[str] | str] | None = None,
        default_lang: str = "en",
    ):
        if not lists:
            self.languages = check_strings(self, "languages", languages, choices=shipped_languages("ldnoobw"))
            self.lists = None
        else:
            self.languages = check_strings(self, "languages", languages)
            if not isinstance(lists, Mapping):
                raise config_error(self, f"lists must be a dict {{language: words or file path}}, got {lists!r}")
            self.lists = {check(self, "lists language", lang, str): check_file(self, f"lists[{lang!r}]", v)
                          if isinstance(v, (str, os.PathLike)) else check_strings(self, f"lists[{lang!r}]", v)
                          for lang, v in lists.items()}
        self.default_lang = check(self, "default_lang", default_lang, str)
        self._matcher: BadWordMatcher | None = None
        self._no_list = 0
        self._found: dict[str, int] = {}

    def setup(self) -> None:
        if self.lists is None:
            self._matcher = BadWordMatcher.shipped(self.languages)
        else:
            self._matcher = BadWordMatcher(
                {lang: read_word_file(v) if isinstance(v, str) else list(v) for lang, v in self.lists.items()}
            )

    def reject_rule(self, doc: Document) -> str | None:
        if self._matcher is None:
            self.setup()
        lang = doc.lang or self.default_lang
        if lang not in self._matcher.lexicons:
            self._no_list += 1
            return None
        word = self._matcher.first(doc.text, lang)
        if word is None:
            return None
        self._found[word] = self._found.get(word, 0) + 1
        return "bad_words"

    def finish(self, stats: StepStats) -> None:
        if self._no_list:
            stats.extra["no_list"] = self._no_list
        if self._found:
            for word, n in sorted(self._found.items(), key=lambda kv: -kv[1])[:10]:
                stats.extra[f"found:{word}"] = n
        self._no_list, self._found = 0, {}
