"""URL filtering: blocklisted domains and URLs, and banned words in the URL."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from curate.core.document import Document
from curate.core.stats import StepStats
from curate.core.step import Filter
from curate.core.validate import check, check_file, check_strings
from curate.filters._text import read_word_file, shipped_words

_URL_WORDS = re.compile(r"[^a-z0-9]+")


def _load(entries: str | Iterable[str] | None) -> frozenset[str]:
    """A list given inline, or a path to a file with one entry a line (`#` comments allowed)."""
    if entries is None:
        return frozenset()
    items = read_word_file(entries) if isinstance(entries, str) else list(entries)
    return frozenset(e.strip().lower() for e in items if e.strip())


def _check_list(owner: Filter, name: str, entries: str | os.PathLike | Iterable[str] | None):
    """None, a path to an existing file, or a list of strings (blank entries are skipped on load)."""
    if entries is None:
        return None
    if isinstance(entries, (str, os.PathLike)):
        return check_file(owner, name, entries)
    if not isinstance(entries, Iterable):
        check_strings(owner, name, entries)  # raises: not a list
    items = list(entries)
    check_strings(owner, name, [e for e in items if e != ""])  # raises at the first non-string
    return items


def host_of(url: str) -> str:
    try:
        host = urlsplit(url if "//" in url else f"//{url}").hostname or ""
    except ValueError:
        return ""
    return host.removeprefix("www.")


def in_domains(host: str, domains: frozenset[str], longest: int) -> bool:
    """Whether `host` or a parent domain of it (two labels at least: not the TLD alone) is in `domains`, whose
    longest entry has `longest` characters. The parents are taken from the right, shortest first, and only while
    they are no longer than that: joining every suffix of a host of k labels was quadratic in k."""
    end = host.rfind(".")
    while end >= 0:
        dot = host.rfind(".", 0, end)
        if len(host) - dot - 1 > longest:
            return False
        if host[dot + 1 :] in domains:
            return True
        end = dot
    return False


class Url(Filter):
    """Drops documents by their URL. Reasons, in order:

    * `blocked_domain`: the host or any parent domain is in `blocked_domains` (`a.b.example.com` is
      blocked by `example.com`), so one entry covers a site's subdomains;
    * `blocked_url`: the URL is in `blocked_urls` (exact, after lower-casing);
    * `banned_word`: a URL word (split on non-alphanumerics) is in `banned_words`; by default the single
      words of the shipped English LDNOOBW list;
    * `soft_banned_words`: at least `min_soft_banned_words` URL words are in `soft_banned_words`;
    * `banned_subword`: an entry of `banned_subwords` is a substring of the URL's letters and digits
      (lower-cased, everything else removed), as datatrove's URLFilter (FineWeb) matches its subword list.

    Lists are given inline or as a file path. A document without a URL is kept and counted in
    `stats.extra["no_url"]`.
    """

    name = "url"
    file_params = ("blocked_domains", "blocked_urls", "banned_words", "soft_banned_words", "banned_subwords")

    def __init__(
        self,
        blocked_domains: str | Iterable[str] | None = None,
        blocked_urls: str | Iterable[str] | None = None,
        banned_words: str | Iterable[str] | None = None,
        soft_banned_words: str | Iterable[str] | None = None,
        min_soft_banned_words: int = 2,
        banned_subwords: str | Iterable[str] | None = None,
    ):
        self.blocked_domains = _check_list(self, "blocked_domains", blocked_domains)
        self.blocked_urls = _check_list(self, "blocked_urls", blocked_urls)
        self.banned_words = _check_list(self, "banned_words", banned_words)
        self.soft_banned_words = _check_list(self, "soft_banned_words", soft_banned_words)
        self.min_soft_banned_words = check(self, "min_soft_banned_words", min_soft_banned_words, int, lo=1)
        self.banned_subwords = _check_list(self, "banned_subwords", banned_subwords)
        self._no_url = 0
        self._lists: tuple[frozenset[str], ...] | None = None
        self._longest = 0

    def setup(self) -> None:
        banned = self.banned_words
        if banned is None:
            banned = [w for w in shipped_words("ldnoobw", "en") if w.isalnum()]
        # hosts lose their "www." (host_of), so an entry must too, or "www.example.com" would never match
        domains = frozenset(d.removeprefix("www.") for d in _load(self.blocked_domains))
        subwords = sorted({_URL_WORDS.sub("", w) for w in _load(self.banned_subwords)} - {""})
        self._lists = (domains, _load(self.blocked_urls), _load(banned), _load(self.soft_banned_words), subwords)
        self._longest = max(map(len, domains), default=0)

    def reject_rule(self, doc: Document) -> str | None:
        if self._lists is None:
            self.setup()
        domains, urls, banned, soft, subwords = self._lists
        if not doc.url:
            self._no_url += 1
            return None
        url = doc.url.strip().lower()
        if domains and in_domains(host_of(url), domains, self._longest):
            return "blocked_domain"
        if url in urls:
            return "blocked_url"
        words = set(_URL_WORDS.split(url))
        if not banned.isdisjoint(words):
            return "banned_word"
        if soft and len(soft & words) >= self.min_soft_banned_words:
            return "soft_banned_words"
        if subwords:
            letters = _URL_WORDS.sub("", url)
            if any(w in letters for w in subwords):
                return "banned_subword"
        return None

    def finish(self, stats: StepStats) -> None:
        if self._no_url:
            stats.extra["no_url"] = self._no_url
        self._no_url = 0
