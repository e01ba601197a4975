"""The HTTP layer of `curate view`: Starlette routes, Jinja2 templates, and the safety rules for crawled content.

Every byte a page shows from a run came from the web, so: every value from a run goes through the `shown` filter,
`curate.core.shown.for_html` (the one home for untrusted text: control characters, terminal escapes and bidi
overrides shown as `\\uNNNN`, not obeyed; markup escaped), and the templates autoescape anything else; URLs
are shown as text, never made links; raw HTML is served only by its own route with a Content Security Policy
that sandboxes it (no script, no network, no forms) and is embedded in an `<iframe sandbox>`. The app's own pages run no script either (`script-src` is not allowed at all). Requests name runs by their place on
the command line, never by path, so nothing outside the given folders can be read; only GET is served, and a Host
header other than the bound address is refused (a web page elsewhere cannot reach the server by DNS rebinding).
"""

from __future__ import annotations

from importlib import resources
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from curate.core.shown import for_html
from curate.io import fs
from curate.view import compare as cmp
from curate.view import query
from curate.view.blocks import MAX_BLOCK_CHARS, block_view
from curate.view.query import Filters, Run, ViewError
from curate.view.tokens import MAX_PIECES

PAGE_CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; frame-src 'self'; form-action 'self'; "
            "base-uri 'none'; frame-ancestors 'none'")
# The raw HTML of a page: a sandbox without allow-scripts (so also no forms, popups, top navigation, same origin),
# no source of any kind but inline style, embeddable only by this app's own pages.
RAW_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'"
HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}


def _env() -> Environment:
    folder = resources.files("curate.view") / "templates"
    env = Environment(loader=FileSystemLoader(str(folder)), autoescape=select_autoescape(["html"], default=True))
    env.filters["shown"] = lambda v: Markup("" if v is None else for_html(v))  # escaped once, by the one home
    env.filters["num"] = lambda v: "" if v is None else f"{v:,.3f}" if isinstance(v, float) else f"{v:,}"
    env.globals["qs"] = lambda pairs: urlencode(pairs)
    return env


class App:
    """The runs and the templates; one instance per `curate view` process."""

    def __init__(self, runs: list[Run]):
        self.runs = runs
        self.env = _env()

    def page(self, name: str, status: int = 200, **ctx) -> HTMLResponse:
        html = self.env.get_template(name).render(runs=self.runs, **ctx)
        return HTMLResponse(html, status_code=status, headers={**HEADERS, "Content-Security-Policy": PAGE_CSP})

    def run(self, request: Request, key: str = "i", kind: str = "run") -> tuple[int, Run]:
        raw = request.path_params.get(key, request.query_params.get(key, ""))
        try:
            i = int(raw)
            run = self.runs[i] if i >= 0 else self.runs[len(self.runs)]  # no counting from the end
        except (ValueError, IndexError):
            raise ViewError(f"no run {raw!r}: this server shows runs 0 to {len(self.runs) - 1}") from None
        if run.kind != kind:
            raise ViewError(f"{run.name} is a {'token folder' if run.kind == 'tokens' else 'run'}, not a "
                            f"{'token folder' if kind == 'tokens' else 'run'}")
        return i, run

    def index(self, request: Request):
        return self.page("index.html")

    def style(self, request: Request):
        css = (resources.files("curate.view") / "static" / "style.css").read_text(encoding="utf-8")
        return Response(css, media_type="text/css", headers=HEADERS)

    def run_page(self, request: Request):
        i, run = self.run(request)
        stats = run.stats()
        cols = run.columns()
        scores = [c for c in ("lang_score", "quality_score") if c in cols]
        figures = run.cached("run", lambda: {
            "langs": query.counts(run, "lang"), "sources": query.counts(run, "source"),
            "lengths": query.length_bars(run), "scores": {c: query.score_bars(run, c) for c in scores}})
        return self.page("run.html", i=i, run=run, stats=stats, **figures)

    def docs_page(self, request: Request):
        i, run = self.run(request)
        f = Filters.parse(request.query_params, run.numeric())
        result = query.documents(run, f)
        return self.page("docs.html", i=i, run=run, f=f, result=result, page_size=query.PAGE,
                         numeric=["length", *run.numeric()])

    def doc_page(self, request: Request):
        i, run = self.run(request)
        doc_id = request.query_params.get("id", "")
        doc = query.document(run, doc_id)
        if doc is None:
            raise HTTPException(404, f"run {run.name} has no document {doc_id!r}")
        signals = {k: v for k, v in doc.items() if k not in ("text", "html", "metadata", "snippet", "_shard")}
        if doc.get("_shard"):
            signals["shard"] = fs.relpath(doc["_shard"], run.path)
        meta = _metadata(doc)
        hits = decontam_hits(meta)
        has_html = isinstance(doc.get("html"), str)
        return self.page("doc.html", i=i, run=run, doc=doc, signals=signals, metadata=meta, hits=hits,
                         marked=_marked(doc.get("text") or "", hits, redacted="decontam_cuts" in meta),
                         has_html=has_html, warc=_is_warc(doc), bv=block_view(run, doc) if has_html else None,
                         cut=MAX_BLOCK_CHARS)

    def raw_html(self, request: Request):
        """A document's raw HTML, for the sandboxed frame of its Document page only."""
        i, run = self.run(request)
        doc = query.document(run, request.query_params.get("id", ""))
        if doc is None or not isinstance(doc.get("html"), str):
            raise HTTPException(404, "no raw HTML kept for this document")
        return HTMLResponse(doc["html"], headers={**HEADERS, "Content-Security-Policy": RAW_CSP})

    def compare_page(self, request: Request):
        (ia, a), (ib, b) = self.run(request, "a"), self.run(request, "b")
        kind = request.query_params.get("kind", "only_a")
        page = max(query.number(request.query_params.get("page"), "page", int) or 0, 0)
        result = cmp.compare(a, b, kind, page)
        return self.page("compare.html", ia=ia, ib=ib, a=a, b=b, result=result, kinds=cmp.KINDS, page=page,
                         page_size=query.PAGE)

    def diff_page(self, request: Request):
        (ia, a), (ib, b) = self.run(request, "a"), self.run(request, "b")
        doc_id = request.query_params.get("id", "")
        da, db = query.document(a, doc_id), query.document(b, doc_id)
        if da is None and db is None:
            raise HTTPException(404, f"neither run has a document {doc_id!r}")
        lines = cmp.text_diff(da["text"], db["text"]) if da and db else []
        return self.page("diff.html", ia=ia, ib=ib, a=a, b=b, id=doc_id, da=da, db=db, lines=lines)

    def tokens_page(self, request: Request):
        i, folder = self.run(request, kind="tokens")
        return self.page("tokens.html", i=i, folder=folder, m=folder.manifest)

    def token_doc_page(self, request: Request):
        i, folder = self.run(request, kind="tokens")
        q = request.query_params
        split = q.get("split", "train")
        shard, n = (query.number(q.get(k), k, int) or 0 for k in ("shard", "n"))
        return self.page("token_doc.html", i=i, folder=folder, d=folder.document(split, shard, n),
                         max_pieces=MAX_PIECES)

    def error(self, request: Request, e: Exception):
        """One message on the page, never a stack trace (the server logs those). Routes are plain functions:
        Starlette runs them in its thread pool, so a long query never stalls the other requests."""
        if isinstance(e, HTTPException):
            return self.page("error.html", status=e.status_code, message=e.detail)
        if isinstance(e, ViewError):
            return self.page("error.html", status=400, message=str(e))
        return self.page("error.html", status=500, message=f"internal error ({type(e).__name__}); see the log")


def _metadata(doc: dict) -> dict:
    import json

    try:
        meta = json.loads(doc.get("metadata") or "{}")
    except ValueError:
        return {"(unparsed)": doc.get("metadata")}
    return meta if isinstance(meta, dict) else {"(value)": meta}


def decontam_hits(meta: dict) -> list[dict]:
    """The benchmark matches `decontam.Decontaminate` recorded in `metadata["decontam"]` (benchmark, item key,
    span in the text before any redaction, the matched n-grams' text), in text order; [] when none."""
    hits = meta.get("decontam")
    if not isinstance(hits, list):
        return []
    ok = [h for h in hits if isinstance(h, dict) and isinstance(h.get("span"), list) and len(h["span"]) == 2
          and all(isinstance(x, int) for x in h["span"])]
    return sorted(ok, key=lambda h: h["span"])


def _marked(text: str, hits: list[dict], redacted: bool) -> list[tuple[str, bool]]:
    """The text as (piece, matched) pieces, the benchmark matches marked; one unmarked piece when there are
    none or the text was redacted (the spans are of the text before the cut)."""
    from curate.decontam.index import merge_spans

    if not hits or redacted:
        return [(text, False)]
    out, prev = [], 0
    for s, e in merge_spans((max(0, h["span"][0]), min(len(text), h["span"][1])) for h in hits):
        if s >= e or s < prev:
            continue
        out += [(text[prev:s], False), (text[s:e], True)]
        prev = e
    return [p for p in [*out, (text[prev:], False)] if p[0]]


def _is_warc(doc: dict) -> bool:
    return "warc_record_id" in (doc.get("metadata") or "")


def make_app(runs: list[Run], hosts: list[str]) -> Starlette:
    """The ASGI app over `runs`, answering only requests addressed to one of `hosts`."""
    app = App(runs)
    routes = [Route("/", app.index), Route("/static/style.css", app.style),
              Route("/run/{i}", app.run_page), Route("/run/{i}/docs", app.docs_page),
              Route("/run/{i}/doc", app.doc_page), Route("/run/{i}/raw", app.raw_html),
              Route("/compare", app.compare_page), Route("/compare/doc", app.diff_page),
              Route("/tokens/{i}", app.tokens_page), Route("/tokens/{i}/doc", app.token_doc_page)]
    return Starlette(routes=routes, exception_handlers={Exception: app.error, ViewError: app.error, HTTPException: app.error},
                     middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts)])
