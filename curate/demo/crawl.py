"""A seeded, deterministic generator of demo web crawls (gzipped WARC files) with planted ground truth.

The shared real crawls are small and nothing may be downloaded, so the demo corpus is generated:
articles in English and Portuguese wrapped in navigation/footer boilerplate, near-duplicate reposts,
exact duplicates, SEO spam, product lists, error pages, very short pages, non-HTML responses and pages
that quote benchmark questions. Next to the WARCs the generator writes `benchmark.jsonl` (the
questions it may plant) and `truth.json` (which page is what), so tests can check that each filter
finds what was planted. Same seed, same bytes: record ids, dates and gzip headers are all derived
from the seed, never from the clock.
"""

from __future__ import annotations

import html
import io
import json
import random
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path
from typing import Any

from curate.demo import words as T

# Share of pages per kind; plain articles take what is left. Tuned so that ~600 pages hold enough of
# every kind for tests while most of the corpus is still good text worth training on.
KIND_SHARES = {
    "near_duplicate": 0.08,
    "exact_duplicate": 0.05,
    "benchmark_quote": 0.05,
    "spam": 0.07,
    "seo_prose": 0.05,
    "product_list": 0.05,
    "error": 0.05,
    "short": 0.04,
    "non_html": 0.06,
    # articles with one flaw that a single step exists to catch (`FLAWS`), so every step of the demo removes
    # something and the report says why
    "placeholder": 0.01,
    "hashtags": 0.01,
    "repeated_line": 0.01,
    "blocked_url": 0.01,
    "profanity": 0.01,
    "contact": 0.01,
}
# The step (and reason) each flawed article is planted for; `contact` pages are kept with their e-mail redacted.
FLAWS = {
    "placeholder": "c4:lorem_ipsum",
    "hashtags": "gopher_quality:hash_ratio",
    "repeated_line": "fineweb:dup_line_chars",
    "blocked_url": "url:banned_word",
    "profanity": "bad_words:bad_words",
    "contact": "pii (redacted, kept)",
}
LOREM = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore."
CALL_TO_ACTION = "Subscribe to our weekly newsletter to get every local story delivered to your inbox on Friday."
HASHTAGS = ("#local", "#news", "#community", "#weekend", "#towncouncil", "#summer", "#volunteers", "#citylife")
PT_SHARE = 0.4  # of plain articles
BENCHMARK_ITEMS = 30
EDIT_RANGE = (0.05, 0.30)  # fraction of words rewritten in a near-duplicate repost
START = datetime(2024, 5, 1, tzinfo=timezone.utc)

SITES = (  # host, display name, language, layout
    ("www.millbrook-gazette.example", "The Millbrook Gazette", "en", 0),
    ("news.riverton-post.example", "Riverton Post", "en", 1),
    ("www.greenvale-herald.example", "Greenvale Herald", "en", 2),
    ("blog.northwood-notes.example", "Northwood Notes", "en", 1),
    ("www.lakeport-weekly.example", "Lakeport Weekly", "en", 0),
    ("www.jornal-do-vale.example", "Jornal do Vale", "pt", 0),
    ("noticias.folha-da-serra.example", "Folha da Serra", "pt", 1),
    ("www.diario-ribeirinho.example", "Diário Ribeirinho", "pt", 2),
    ("www.gazeta-do-litoral.example", "Gazeta do Litoral", "pt", 0),
)
SPAM_HOSTS = ("best-deals-4u.example", "top10-offers.example", "cheap-now.example", "win-big-today.example")
SHOP_HOSTS = ("shop.homegoods.example", "store.outdoor-gear.example", "www.kitchen-corner.example")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class Page:
    """One HTTP response to write, plus what the truth file says about it."""

    pid: str
    kind: str
    url: str
    body: bytes
    content_type: str
    status: int = 200
    lang: str | None = None
    charset: str | None = None
    words: list[str] = field(default_factory=list)  # normalised body words (articles only)
    info: dict[str, Any] = field(default_factory=dict)  # extra truth: dup_of, edit_frac, benchmark, …


def word_shingles(words: list[str], n: int = 5) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(max(len(words) - n + 1, 1))}


def jaccard(a: list[str], b: list[str], n: int = 5) -> float:
    """Word n-gram Jaccard similarity: the quantity MinHash estimates, recorded so dedup tests know the target."""
    sa, sb = word_shingles(a, n), word_shingles(b, n)
    return len(sa & sb) / max(len(sa | sb), 1)


def normalise_words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _words(paragraphs: list[list[str]]) -> list[str]:
    return normalise_words(" ".join(s for p in paragraphs for s in p))


class DemoGenerator:
    """Builds the pages of one demo crawl from a single `random.Random(seed)`, in a fixed order."""

    def __init__(self, pages: int = 600, seed: int = 0, files: int = 4):
        if pages < 20:
            raise ValueError(f"pages must be >= 20 to hold every kind of page, got {pages}")
        if files < 1:
            raise ValueError(f"files must be >= 1, got {files}")
        self.n_pages, self.seed, self.n_files = pages, seed, files
        self.rng = random.Random(seed)
        self.pages: list[Page] = []
        self.benchmark = self._benchmark_items()

    # ------------------------------------------------------------------ text

    def _fill(self, template: str, lang: str, topic: tuple[str, ...]) -> str:
        r = self.rng
        first = r.choice(T.FIRST[lang])
        values = {
            "first": first,
            "name": f"{first} {r.choice(T.LAST[lang])}",
            "place": r.choice(T.PLACES[lang]),
            "org": r.choice(T.ORGS[lang]),
            "month": r.choice(T.MONTHS[lang]),
            "day": r.choice(T.DAYS[lang]),
            "adj": r.choice(T.ADJ[lang]),
            "n": r.randint(6, 60),
            "big": f"{r.randint(2, 95) * 100 + r.randint(0, 99):,}".replace(",", "." if lang == "pt" else ","),
            "year": r.randint(2009, 2023),
            "pct": r.randint(5, 40),
            "topic": topic[0],
            "things": topic[1],
            "item": topic[2],
            "activity": topic[3],
            "spot": topic[4],
        }
        s = template.format(**values)
        return s[0].upper() + s[1:]

    def article(self, lang: str) -> tuple[str, list[list[str]]]:
        """A title and 5-8 paragraphs of 3-5 sentences; no template is used twice, so no line repeats."""
        r = self.rng
        topic = r.choice(T.TOPICS[lang])
        title = self._title(lang, topic)
        sizes = [r.randint(3, 5) for _ in range(r.randint(5, 8))]
        templates = r.sample(T.SENTENCES[lang], min(sum(sizes), len(T.SENTENCES[lang])))
        paragraphs, i = [], 0
        for size in sizes:
            if templates[i : i + size]:
                paragraphs.append([self._fill(t, lang, topic) for t in templates[i : i + size]])
            i += size
        return title, paragraphs

    def _title(self, lang: str, topic: tuple[str, ...] | None = None) -> str:
        topic = topic or self.rng.choice(T.TOPICS[lang])
        cap = topic[0][0].upper() + topic[0][1:]
        return self.rng.choice(T.TITLES[lang]).format(place=self.rng.choice(T.PLACES[lang]), topic=topic[0], topic_cap=cap)

    def _benchmark_items(self) -> list[dict[str, str]]:
        r = self.rng
        items, seen = [], set()
        while len(items) < BENCHMARK_ITEMS - len(T.SCIENCE):
            template, solve = r.choice(T.WORD_PROBLEMS)
            a, b, c = r.randint(3, 40), r.randint(2, 25), r.randint(1, 30)
            q = template.format(a=a, b=b, c=c, who=r.choice(T.WHO))
            if q not in seen:
                seen.add(q)
                items.append({"question": q, "answer": str(solve(a, b, c))})
        items += [{"question": q, "answer": a} for q, a in T.SCIENCE]
        r.shuffle(items)
        return items

    # ------------------------------------------------------------------ html

    def _chrome(self, site: tuple, lang: str) -> tuple[str, str]:
        """Header/navigation and footer/cookie markup for a site: the boilerplate extractors must remove."""
        host, name, _, layout = site
        nav = "".join(f'<li><a href="https://{host}/{n.lower().replace(" ", "-")}">{html.escape(n)}</a></li>'
                      for n in T.NAV[lang])
        related = "".join(f'<li><a href="https://{host}/story/{self.rng.randint(1000, 9999)}">'
                          f"{html.escape(self._title(lang))}</a></li>" for _ in range(4))
        foot = " | ".join(html.escape(f.format(year=2024, site=name)) for f in T.FOOTER[lang])
        cookie = f'<div class="cookie-banner"><p>{html.escape(T.COOKIE[lang])}</p><button>OK</button></div>'
        if layout == 0:
            head = f'<header><div class="logo">{html.escape(name)}</div><nav><ul>{nav}</ul></nav></header>'
            tail = (f'<aside><h3>{T.RELATED[lang]}</h3><ul>{related}</ul></aside>'
                    f"<footer><p>{foot}</p></footer>{cookie}")
        elif layout == 1:
            head = f'<div id="top"><span class="brand">{html.escape(name)}</span><ul class="menu">{nav}</ul></div>'
            tail = (f'<div class="sidebar"><h4>{T.RELATED[lang]}</h4><ul>{related}</ul></div>'
                    f'<div id="footer">{foot}</div>{cookie}')
        else:
            head = (f'<table width="100%"><tr><td class="masthead">{html.escape(name)}</td></tr>'
                    f'<tr><td><ul class="nav">{nav}</ul></td></tr></table>')
            tail = f'<hr><div class="links"><b>{T.RELATED[lang]}</b><ul>{related}</ul></div><p class="copy">{foot}</p>'
        return head, tail

    def _document(self, title: str, body: str, lang: str, meta_charset: str | None, head: str = "",
                  tail: str = "") -> str:
        meta = f'<meta charset="{meta_charset}">' if meta_charset else ""
        return (f'<!DOCTYPE html>\n<html lang="{lang}"><head>{meta}<title>{html.escape(title)}</title>'
                f'<meta name="viewport" content="width=device-width, initial-scale=1">'
                f'<link rel="stylesheet" href="/static/site.css"><script src="/static/app.js"></script></head>\n'
                f"<body>{head}\n{body}\n{tail}</body></html>\n")

    def render_article(self, site: tuple, title: str, paragraphs: list[list[str]], lang: str,
                       meta_charset: str | None) -> str:
        host, _, _, layout = site
        r = self.rng
        author = f"{r.choice(T.FIRST[lang])} {r.choice(T.LAST[lang])}"
        date = (START - timedelta(days=r.randint(1, 900))).strftime("%d/%m/%Y")
        byline = f'<p class="byline">{"By" if lang == "en" else "Por"} {author} — {date}</p>'
        paras = "\n".join(f"<p>{html.escape(' '.join(p))}</p>" for p in paragraphs)
        wrap = ("<main><article>{}</article></main>", '<div class="post-content">{}</div>',
                '<div id="content"><div class="text">{}</div></div>')[layout]
        head, tail = self._chrome(site, lang)
        return self._document(title, wrap.format(f"<h1>{html.escape(title)}</h1>{byline}\n{paras}"), lang,
                              meta_charset, head, tail)

    # ------------------------------------------------------------------ pages

    def _url(self, host: str, kind: str) -> str:
        slug = f"{kind}-{len(self.pages):05d}-{self.rng.randint(100, 999)}"
        return f"https://{host}/{self.rng.choice(('news', 'local', 'stories', 'blog'))}/{slug}"

    def _encode(self, doc: str, lang: str) -> tuple[bytes, str, str]:
        """Pick a charset the way real sites vary: HTTP header, a <meta> only, or nothing at all.

        Returns (bytes, Content-Type header, charset actually used). Latin-1 pages declare it only in
        <meta>, so a reader that trusted a UTF-8 default would garble them.
        """
        roll = self.rng.random()
        if lang == "pt" and roll < 0.2:
            doc = doc.replace("<head>", '<head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">')
            return doc.encode("latin-1", "xmlcharrefreplace"), "text/html", "iso-8859-1"
        if lang == "en" and roll < 0.1:
            return doc.encode("cp1252", "xmlcharrefreplace"), "text/html; charset=windows-1252", "windows-1252"
        if roll > 0.9:
            return doc.encode("utf-8"), "text/html", "utf-8"  # no declaration: found by detection
        return doc.encode("utf-8"), "text/html; charset=utf-8", "utf-8"

    def _add(self, kind: str, url: str, doc: str | bytes, lang: str | None, content_type: str | None = None,
             status: int = 200, words: list[str] | None = None, **info: Any) -> Page:
        charset = None
        if isinstance(doc, str):
            body, ctype, charset = self._encode(doc, lang or "en")
            content_type = content_type or ctype
        else:
            body = doc
        page = Page(f"p{len(self.pages):05d}", kind, url, body, content_type or "text/html", status, lang,
                    charset, words or [], info)
        self.pages.append(page)
        return page

    def add_article(self, lang: str, kind: str = "article", planted: list[int] | None = None) -> Page:
        site = self.rng.choice([s for s in SITES if s[2] == lang])
        title, paragraphs = self.article(lang)
        for idx in planted or []:
            item = self.benchmark[idx]
            at = self.rng.randint(1, len(paragraphs))
            paragraphs[at:at] = [[f"One reader sent us this question from a practice test: {item['question']}"],
                                 [f"The expected answer is {item['answer']}."]]
        meta = "utf-8" if self.rng.random() < 0.5 else None
        page = self._add(kind, self._url(site[0], "article"), self.render_article(site, title, paragraphs, lang, meta),
                         lang, words=_words(paragraphs))
        page.info["title"] = title
        page.info["paragraphs"] = paragraphs
        page.info["site"] = site[0]
        if planted:
            page.info["benchmark"] = planted
        return page

    def add_near_duplicate(self, orig: Page) -> Page:
        """Repost an article on another site with 5-30% of its words in rewritten sentences.

        Real reposts reword whole sentences, not scattered words, so whole sentences are replaced by
        fresh ones until the target share of words is reached. The resulting word 5-gram Jaccard
        (`jaccard5`, recorded) spans the range where MinHash dedup should and should not fire.
        """
        r = self.rng
        paragraphs = [list(p) for p in orig.info["paragraphs"]]
        slots = [(i, j) for i, p in enumerate(paragraphs) for j in range(len(p))]
        r.shuffle(slots)
        total = len(orig.words)
        target = r.uniform(*EDIT_RANGE) * total
        edited = 0
        for i, j in slots:
            if edited >= target:
                break
            edited += len(normalise_words(paragraphs[i][j]))
            paragraphs[i][j] = self.article(orig.lang or "en")[1][0][0]
        site = r.choice([s for s in SITES if s[2] == orig.lang and s[0] != orig.info["site"]])
        words = _words(paragraphs)
        doc = self.render_article(site, orig.info["title"], paragraphs, orig.lang or "en", "utf-8")
        return self._add("near_duplicate", self._url(site[0], "repost"), doc, orig.lang, words=words,
                         dup_of=orig.pid, edit_frac=round(edited / total, 4),
                         jaccard5=round(jaccard(orig.words, words), 4), paragraphs=paragraphs, site=site[0])

    def add_exact_duplicate(self, orig: Page) -> Page:
        """The same bytes at another URL: a mirror or a tracking-parameter variant of the original."""
        url = orig.url + "?utm_source=newsletter" if self.rng.random() < 0.5 else orig.url.replace(
            "https://", "https://mirror.", 1)
        page = Page(f"p{len(self.pages):05d}", "exact_duplicate", url, orig.body, orig.content_type, 200,
                    orig.lang, orig.charset, orig.words, {"dup_of": orig.pid})
        self.pages.append(page)
        return page

    def add_spam(self) -> Page:
        r = self.rng
        adult = r.random() < 0.2
        keys = T.ADULT_KEYWORDS if adult else r.choice(T.SPAM_KEYWORDS)
        host = r.choice(SPAM_HOSTS)
        title = " | ".join(r.sample(keys, 3)).title()
        lines = [" ".join(r.choice(keys) for _ in range(r.randint(6, 14))) for _ in range(r.randint(5, 12))]
        lines += ["Click here now!!!"] * r.randint(2, 4)
        links = "".join(f'<li><a href="https://{host}/go/{k.replace(" ", "-")}">{k}</a></li>' for k in keys * 3)
        body = f"<h1>{html.escape(title)}</h1>" + "".join(f"<p>{html.escape(x)}</p>" for x in lines)
        doc = self._document(title, body + f"<ul>{links}</ul>", "en", "utf-8")
        return self._add("spam", self._url(host, "offer"), doc, "en", adult=adult)

    def seo_paragraphs(self, lang: str = "en") -> tuple[str, list[list[str]]]:
        """A title and 4-6 paragraphs of keyword-stuffed marketing sentences, none used twice."""
        r = self.rng
        keys = r.choice(T.SPAM_KEYWORDS if lang == "en" else T.SPAM_KEYWORDS_PT)
        sentences = T.SEO_SENTENCES if lang == "en" else T.SEO_SENTENCES_PT
        sizes = [r.randint(3, 4) for _ in range(r.randint(4, 6))]
        templates = r.sample(sentences, min(sum(sizes), len(sentences)))
        paragraphs, i = [], 0
        for size in sizes:
            if templates[i : i + size]:
                paragraphs.append([t.format(kw=r.choice(keys), n=r.randint(3, 20), year=r.randint(2019, 2024),
                                            pct=r.randint(10, 70)) for t in templates[i : i + size]])
            i += size
        return (f"The Best {keys[0].title()} Guide" if lang == "en" else f"O Melhor Guia de {keys[0].title()}"), paragraphs

    def add_seo_prose(self) -> Page:
        """Low-quality prose that reads like sentences: what the heuristics keep and a classifier must drop."""
        title, paragraphs = self.seo_paragraphs()
        host = self.rng.choice(SPAM_HOSTS)
        body = f"<h1>{html.escape(title)}</h1>" + "".join(f"<p>{html.escape(' '.join(p))}</p>" for p in paragraphs)
        page = self._add("seo_prose", self._url(host, "guide"), self._document(title, f"<article>{body}</article>",
                                                                                "en", "utf-8"), "en",
                         words=_words(paragraphs))
        page.info["title"] = title
        return page

    def add_product_list(self) -> Page:
        r = self.rng
        host = r.choice(SHOP_HOSTS)
        items = r.sample(T.PRODUCTS, r.randint(8, 16))
        lis = "".join(f'<li class="product"><h3>{html.escape(p)}</h3><span class="price">${r.randint(3, 120)}.'
                      f'{r.choice(("99", "49", "90", "00"))}</span><button>Add to cart</button></li>' for p in items)
        body = f'<h1>Shop all products</h1><p>Showing {len(items)} items</p><ul class="products">{lis}</ul>'
        return self._add("product_list", self._url(host, "catalog"), self._document("Shop", body, "en", "utf-8"), "en")

    def add_error(self) -> Page:
        status, title, heading, text = self.rng.choice(T.ERROR_PAGES)
        lang = "pt" if "ã" in title + text else "en"
        site = self.rng.choice([s for s in SITES if s[2] == lang])
        body = f'<h1>{html.escape(heading)}</h1><p>{html.escape(text)}</p><a href="/">Home</a>'
        return self._add("error", self._url(site[0], "missing"), self._document(title, body, lang, "utf-8"), lang,
                         status=status)

    def add_short(self) -> Page:
        text = self.rng.choice(T.SHORT_PAGES)
        site = self.rng.choice(SITES)
        doc = self._document(text, f"<p>{html.escape(text)}</p>", site[2], None)
        return self._add("short", self._url(site[0], "page"), doc, site[2])

    def add_non_html(self) -> Page:
        r = self.rng
        kind = r.choice(("jpeg", "pdf", "json", "css", "js", "txt"))
        host = r.choice(SITES)[0]
        body = {
            "jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + r.randbytes(r.randint(300, 3000)),
            "pdf": b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj << /Type /Catalog >> endobj\n" + r.randbytes(400),
            "json": json.dumps({"status": "ok", "items": [r.randint(0, 99) for _ in range(20)]}).encode(),
            "css": b"body { margin: 0; font-family: sans-serif; }\n.nav li { display: inline; }\n",
            "js": b"window.dataLayer = window.dataLayer || []; function gtag(){dataLayer.push(arguments);}\n",
            "txt": b"User-agent: *\nDisallow: /admin/\n",
        }[kind]
        ctype = {"jpeg": "image/jpeg", "pdf": "application/pdf", "json": "application/json",
                 "css": "text/css", "js": "application/javascript", "txt": "text/plain"}[kind]
        return self._add("non_html", f"https://{host}/static/{len(self.pages):05d}.{kind}", body, None, ctype)

    def build(self) -> list[Page]:
        """Create every page (originals before their copies), in an order fixed by the seed."""
        r = self.rng
        counts = {k: max(1, round(share * self.n_pages)) for k, share in KIND_SHARES.items()}
        n_articles = self.n_pages - sum(counts.values())
        n_pt = round(n_articles * PT_SHARE)
        articles = [self.add_article("pt" if i < n_pt else "en") for i in range(n_articles)]
        planted_items = list(range(len(self.benchmark) // 2))  # the other half is never planted
        for i in range(counts["benchmark_quote"]):
            self.add_article("en", "benchmark_quote", [planted_items[i % len(planted_items)]])
        for orig in r.sample(articles, counts["near_duplicate"]):
            self.add_near_duplicate(orig)
        for orig in r.sample(articles, counts["exact_duplicate"]):
            self.add_exact_duplicate(orig)
        for kind in ("spam", "seo_prose", "product_list", "error", "short", "non_html"):
            for _ in range(counts[kind]):
                getattr(self, f"add_{kind}")()
        for kind in FLAWS:
            for _ in range(counts[kind]):
                self.add_flawed(kind)
        return self.pages

    def add_flawed(self, kind: str) -> Page:
        """An English article with the one flaw of `kind` (see `FLAWS`): a leftover placeholder paragraph, a
        hashtag after every sentence, a call to action repeated between paragraphs, a host whose name holds a
        blocklisted word, one listed word in a quote, or a contact e-mail address."""
        r = self.rng
        site = r.choice([s for s in SITES if s[2] == "en"])
        title, paragraphs = self.article("en")
        if kind == "placeholder":
            paragraphs.insert(r.randint(1, len(paragraphs)), [LOREM])
        elif kind == "hashtags":
            paragraphs = [[f"{x[:-1]} {' '.join(r.sample(HASHTAGS, 3))}{x[-1]}" for x in p] for p in paragraphs]
        elif kind == "repeated_line":
            for at in sorted(r.sample(range(1, len(paragraphs)), 2), reverse=True):
                paragraphs.insert(at, [CALL_TO_ACTION])
            paragraphs.append([CALL_TO_ACTION])
        elif kind == "blocked_url":
            site = ("www.xxx-news-mirror.example", "News Mirror", "en", 1)
        elif kind == "profanity":
            paragraphs[-1].append("One fan said the crowd went apeshit when the final whistle blew.")
        elif kind == "contact":
            paragraphs.append([f"Send tips and corrections to newsroom@{site[0].removeprefix('www.')} at any time."])
        page = self._add(kind, self._url(site[0], "article"), self.render_article(site, title, paragraphs, "en", "utf-8"),
                         "en", words=_words(paragraphs), flaw=FLAWS[kind])
        page.info["title"] = title
        return page




# ---------------------------------------------------------------------- WARC writing

def _uuid(rng: random.Random) -> str:
    return f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128), version=4)}>"


def write_warc(path: Path, pages: list[Page], rng: random.Random, first_index: int) -> int:
    """Write warcinfo, then a request and a response record per page. Returns the number of records."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    info = b"software: peneira curate demo\r\nformat: WARC File Format 1.0\r\nrobots: classic\r\n"
    writer.write_record(writer.create_warc_record(
        "", "warcinfo", payload=io.BytesIO(info), length=len(info), warc_content_type="application/warc-fields",
        warc_headers_dict={"WARC-Record-ID": _uuid(rng), "WARC-Date": START.strftime("%Y-%m-%dT%H:%M:%SZ"),
                           "WARC-Filename": path.name}))
    for k, page in enumerate(pages):
        when = START + timedelta(seconds=37 * (first_index + k))
        warc_date = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        host = page.url.split("/")[2]
        path_q = "/" + page.url.split("/", 3)[3]
        req = StatusAndHeaders(f"GET {path_q} HTTP/1.1", [
            ("Host", host), ("User-Agent", "PeneiraDemoBot/1.0 (+https://peneira.example/bot)"),
            ("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"), ("Accept-Encoding", "identity"),
        ], is_http_request=True)
        reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error", 503: "Service Unavailable"}[page.status]
        resp = StatusAndHeaders(f"{page.status} {reason}", [
            ("Date", format_datetime(when, usegmt=True)), ("Server", rng.choice(("nginx", "Apache", "cloudflare"))),
            ("Content-Type", page.content_type), ("Content-Length", str(len(page.body))), ("Connection", "close"),
        ], protocol="HTTP/1.1")
        page.info["record_id"] = rid = _uuid(rng)
        response = writer.create_warc_record(
            page.url, "response", payload=io.BytesIO(page.body), length=len(page.body), http_headers=resp,
            warc_headers_dict={"WARC-Record-ID": rid, "WARC-Date": warc_date,
                               "WARC-IP-Address": f"192.0.2.{rng.randint(1, 254)}"})
        request = writer.create_warc_record(
            page.url, "request", http_headers=req,
            warc_headers_dict={"WARC-Record-ID": _uuid(rng), "WARC-Date": warc_date, "WARC-Concurrent-To": rid})
        writer.write_record(request)
        writer.write_record(response)
    path.write_bytes(buf.getvalue())
    return 1 + 2 * len(pages)


def generate(out: str | Path, pages: int = 600, seed: int = 0, files: int = 4) -> dict:
    """Write `demo-NNNNN.warc.gz` files, `benchmark.jsonl` and `truth.json` into `out`; return the truth.

    Pages are keyed by their WARC-Record-ID (`record_id`), which readers keep as `metadata.warc_record_id`
    (document ids also depend on where the files are read from, so the truth cannot name them).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    gen = DemoGenerator(pages, seed, files)
    all_pages = gen.build()
    order = list(all_pages)
    gen.rng.shuffle(order)
    truth_files: dict[str, dict[str, int]] = {}
    for f in range(files):
        name = f"demo-{f:05d}.warc.gz"
        chunk = order[f::files]
        records = write_warc(out / name, chunk, gen.rng, f * len(order))
        html_n = sum(p.content_type.startswith("text/html") for p in chunk)
        truth_files[name] = {"records": records, "responses": len(chunk), "html": html_n,
                             "non_html": len(chunk) - html_n}
        for p in chunk:
            p.info["file"] = name
    with open(out / "benchmark.jsonl", "w", encoding="utf-8") as fh:
        for item in gen.benchmark:
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
    truth = _truth(gen, all_pages, truth_files)
    (out / "truth.json").write_text(json.dumps(truth, indent=1, ensure_ascii=False, sort_keys=True) + "\n",
                                    encoding="utf-8")
    return truth


def _truth(gen: DemoGenerator, pages: list[Page], files: dict) -> dict:
    def groups(kind: str) -> list[list[str]]:
        by_orig: dict[str, list[str]] = {}
        for p in pages:
            if p.kind == kind:
                by_orig.setdefault(p.info["dup_of"], []).append(p.pid)
        return [[orig, *copies] for orig, copies in sorted(by_orig.items())]

    kinds: dict[str, int] = {}
    for p in pages:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    quotes = {p.pid: p.info["benchmark"] for p in pages if "benchmark" in p.info}
    return {
        "seed": gen.seed,
        "pages": len(pages),
        "files": files,
        "html_responses": sum(f["html"] for f in files.values()),
        "kinds": dict(sorted(kinds.items())),
        "exact_duplicates": groups("exact_duplicate"),
        "near_duplicates": groups("near_duplicate"),
        "spam": [p.pid for p in pages if p.kind == "spam"],
        "seo_prose": [p.pid for p in pages if p.kind == "seo_prose"],
        "adult": [p.pid for p in pages if p.info.get("adult")],
        "benchmark_quotes": quotes,
        "benchmark_planted": sorted({i for v in quotes.values() for i in v}),
        "page": {p.pid: _page_truth(p) for p in pages},
    }


def _page_truth(p: Page) -> dict:
    keep = ("file", "record_id", "dup_of", "edit_frac", "jaccard5", "benchmark", "adult", "title", "flaw")
    rec = {"kind": p.kind, "url": p.url, "status": p.status, "content_type": p.content_type, "lang": p.lang,
           "charset": p.charset}
    rec.update({k: p.info[k] for k in keep if k in p.info})
    return rec


def write_quality_samples(out: str | Path, per_class: int = 300, seed: int = 0) -> tuple[Path, Path]:
    """Write `quality/positive.jsonl` and `quality/negative.jsonl`: training data for the demo's classifier.

    Positives are articles from a generator seeded apart from the crawl (so no crawl page is in the
    training set); negatives are the text of the kinds of page a quality filter exists to remove:
    keyword-stuffed marketing prose (the crawl's `seo_prose` pages, which pass every heuristic rule, so
    only this classifier removes them), spam, product lists, error pages, short pages and site chrome.
    Half the negatives are marketing prose, so both classes hold comparable amounts of running text, a third of
    it in Portuguese as a third of the positives are, so that language is no shortcut for the classifier.
    """
    gen = DemoGenerator(pages=20, seed=seed + 10_007)
    qdir = Path(out) / "quality"
    qdir.mkdir(parents=True, exist_ok=True)
    positive, negative = qdir / "positive.jsonl", qdir / "negative.jsonl"
    with open(positive, "w", encoding="utf-8") as fh:
        for i in range(per_class):
            title, paragraphs = gen.article("pt" if i % 3 == 0 else "en")
            text = title + "\n\n" + "\n\n".join(" ".join(p) for p in paragraphs)
            fh.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
    makers = (gen.add_spam, gen.add_product_list, gen.add_error, gen.add_short, lambda: _chrome_page(gen))
    with open(negative, "w", encoding="utf-8") as fh:
        for i in range(per_class):
            if i % 2 == 0:  # a third of the marketing prose in Portuguese: the positives' language mix
                title, paragraphs = gen.seo_paragraphs("pt" if i % 6 == 0 else "en")
                text = title + "\n\n" + "\n\n".join(" ".join(p) for p in paragraphs)
            else:
                text = _visible_text(makers[i // 2 % len(makers)]().body)
            fh.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
    return positive, negative


def _chrome_page(gen: DemoGenerator) -> Page:
    site = gen.rng.choice(SITES)
    head, tail = gen._chrome(site, site[2])
    return gen._add("chrome", gen._url(site[0], "index"), gen._document(site[1], "", site[2], "utf-8", head, tail),
                    site[2])


def _visible_text(body: bytes) -> str:
    """Tag-stripped text of a generated page (its markup is simple and known, so a regex is enough)."""
    text = body.decode("utf-8", errors="replace")
    text = re.sub(r"(?s)<(script|style|title)[^>]*>.*?</\1>", " ", text)
    text = re.sub(r"<(br|p|li|h\d|div|tr|footer|header)\b[^>]*>", "\n", text)
    text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    return "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())
