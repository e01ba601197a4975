"""curate view: the real server (`curate view ... --port 0`, on 127.0.0.1) over runs made here, checked over HTTP
against brute force over the shards (pyarrow rows counted in Python), with hostile documents that must never
execute or inject, a damaged shard, a run still being written, and one pass in a real headless Chromium."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate import Pipeline, Step, dedup, extract, filters, readers
from curate.decontam import Decontaminate
from curate.demo.crawl import generate
from curate.view.app import PAGE_CSP, RAW_CSP

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = [  # (own id, url, text, raw html): each tries to run script, break out of its element, or fool the eye
    ('<b>x</b>"\'', "javascript:alert(1)", "</pre></td><script>window.__pwned=1</script> a long enough text here",
     "<script>parent.__pwned=2</script><img src=x onerror=\"parent.__pwned=3\"><a href=javascript:1>x</a>"),
    ("bidi", "https://evil.example/\u202egnp.exe", "plain \u202eevil\u202c and \x1b]0;retitled\x07 escapes, long",
     "<iframe src=\"https://evil.example/\"></iframe><form action=https://evil.example><input></form>"),
    ("frame", "https://ok.example/a", "</iframe><img src=x onerror=window.__pwned=4> breaking out of a frame",
     "<meta http-equiv=refresh content=\"0;url=https://evil.example\"><p>hello</p>"
     "<nav><a href=/>Home</a> <a href=/news>News</a> <a href=/about>About us</a></nav><article><p>The river rose "
     "by two metres overnight after three days of heavy rain, and the town closed the old bridge before dawn.</p>"
     "<p>&lt;/iframe&gt;&lt;script&gt;parent.__pwned=5&lt;/script&gt; \x1b]0;retitled\x07 \u202eevil: a block "
     "whose text is markup, escapes and a bidi override, kept or not.</p></article>"),
    ("short", "https://ok.example/b", "<script>1</script>", "<p>short</p>"),  # dropped: too short
]


class KeepRaw(Step):
    """Copies the page's raw HTML to an `html` column before extraction: a WARC run that kept it."""

    name = "keep_raw"
    columns = {"html": pa.string()}

    def apply(self, doc):
        doc.extra["html"] = doc.html
        return doc


class KeepHtml(Step):
    """Moves the input's `html` field (in metadata) to an `html` column: a run that kept the raw page."""

    name = "keep_html"
    columns = {"html": pa.string(), "dedup_cluster": pa.string()}

    def apply(self, doc):
        doc.extra["html"] = doc.metadata.pop("html", None)
        doc.extra["dedup_cluster"] = "c2" if "frame" in doc.id else "c1"  # a cluster column, as MinHash writes
        return doc


def _warc_steps(shared: Path, c4: bool) -> list:
    steps = [filters.HttpStatus(), *([] if c4 else [KeepRaw()]), extract.Main(),
             filters.Language(["en", "pt"], model_path=str(shared / "models/lid.176.ftz")), filters.GopherQuality()]
    return [*steps, *([filters.C4(bad_words_languages=())] if c4 else []), dedup.Exact()]


PLANTED = {}  # the benchmark item made of a line of one of run a's pages: run b's decontam step drops that page


def _planted_index(run: Path, root: Path) -> Path:
    """A decontamination index of one benchmark item: 40 words of the first long line of a page run a kept (a
    line C4 keeps whole, so run b, without C4, has it too)."""
    from curate.decontam import Item, build_index

    for f in sorted((run / "data").glob("*.parquet")):
        for r in pq.read_table(f, columns=["id", "text"]).to_pylist():
            line = next((x for x in r["text"].splitlines() if len(x.split()) >= 40), None)
            if line:
                PLANTED.update(id=r["id"], text=" ".join(line.split()[:40]))
                build_index({"planted": ("test", [Item("item-7", (PLANTED["text"],))])}, root / "decontam")
                return root / "decontam"
    raise AssertionError("no page of run a has a line of 40 words")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, shared) -> dict[str, Path]:
    """a, b: the demo crawl with and without C4 (an ablation: same ids, C4 drops some and rewrites others; b keeps
    each page's raw HTML);
    h: hostile documents kept with their raw HTML; bad: a copy of h with a damaged shard; grow: being written."""
    root = tmp_path_factory.mktemp("view")
    generate(root / "warc", pages=120, seed=3, files=2)
    out = {}
    for name, c4 in (("a", True), ("b", False)):
        out[name] = root / name
        steps = _warc_steps(shared, c4) + ([] if c4 else [Decontaminate(str(_planted_index(out["a"], root)))])
        Pipeline(name=name, reader=readers.Warc(source="web"), steps=steps).run(
            inputs=str(root / "warc"), output=str(out[name]), rejected=True, progress=False)
    lines = [json.dumps({"id": i, "url": u, "text": t, "html": h}) for i, u, t, h in HOSTILE]
    (root / "h.jsonl").write_text("\n".join(lines) + "\n")
    out["h"] = root / "h"
    Pipeline(name="h", reader=readers.Jsonl(source="web"),  # Main: text already, so none extracted; recorded
             steps=[extract.Main(), KeepHtml(), lambda d: len(d.text) > 30]).run(
        inputs=str(root / "h.jsonl"), output=str(out["h"]), rejected=True, progress=False)
    out["bad"] = root / "bad"
    shutil.copytree(out["h"], out["bad"])
    shard = next((out["bad"] / "data").glob("*.parquet"))
    shard.write_bytes(shard.read_bytes()[:-20])  # the footer cut off
    out["grow"] = root / "grow"
    (out["grow"] / "data").mkdir(parents=True)
    shutil.copy(sorted((out["a"] / "data").glob("*.parquet"))[0], out["grow"] / "data")
    out["abl"] = root / "abl"  # an ablation folder (python -m train ablate): variants/NAME/curated
    for variant, run in (("with_c4", "a"), ("without_c4", "b")):
        shutil.copytree(out[run], out["abl"] / "variants" / variant / "curated")
    (out["abl"] / "variants" / "unfinished").mkdir()  # a variant not curated yet: left out
    from curate.cli.main import main as cli

    assert cli(["tokenizer", "train", str(out["a"]), "--vocab-size", "400", "--out", str(root / "tok.json"),
                "--no-progress"]) == 0
    out["tokens"] = root / "tokens"
    assert cli(["tokenize", str(out["a"]), "--tokenizer", str(root / "tok.json"), "--out", str(out["tokens"]),
                "--val-fraction", "0.2", "--no-progress"]) == 0
    return out


@pytest.fixture(scope="module")
def server(runs):
    """`curate view a b h bad grow abl tokens --port 0` in its own process (runs 0-4, the ablation's two variants
    5 and 6, the token folder 7); yields its base URL."""
    cmd = [sys.executable, "-m", "curate", "view",
           *(str(runs[k]) for k in ("a", "b", "h", "bad", "grow", "abl", "tokens")),
           "--port", "0", "--cache", str(runs["a"].parent / "cache")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert m, f"no URL printed: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        yield m.group()
    finally:
        proc.terminate()
        proc.wait(timeout=10)




def get(server: str, path: str, **kw) -> httpx.Response:
    return httpx.get(server.rstrip("/") + path, timeout=60, **kw)


def rows(run: Path) -> list[dict]:
    """Every document of a run, kept and dropped, read by pyarrow: the reference every count is checked against."""
    out = []
    for part, status in (("data", "kept"), ("rejected", "dropped")):
        for f in sorted((run / part).glob("*.parquet")):
            for r in pq.read_table(f).to_pylist():
                out.append({**r, "status": status, "drop_reason": r.get("drop_reason")})
    return out


def total(page: str) -> int:
    assert "<span id=\"total\">" in page, page[-1500:]
    return int(re.search(r'<span id="total">([\d,]+)</span>', page).group(1).replace(",", ""))


def listed_ids(page: str) -> list[str]:
    return [html.unescape(m) for m in re.findall(r'<a class="doc" href="[^"]*">([^<]*)</a>', page)]


def test_every_page_is_served_under_the_strict_policy(server):
    for path in ("/", "/run/0", "/run/0/docs", "/compare?a=0&b=1", "/run/9", "/run/-1", "/static/style.css"):
        r = get(server, path)
        assert r.status_code == (400 if path in ("/run/9", "/run/-1") else 200), path
        assert r.headers["x-content-type-options"] == "nosniff"
        if path != "/static/style.css":
            assert r.headers["content-security-policy"] == PAGE_CSP
            assert "script-src" not in PAGE_CSP and "default-src 'none'" in PAGE_CSP
            assert "<script" not in r.text.lower()
    assert get(server, "/", headers={"host": "evil.example"}).status_code == 400  # DNS rebinding
    assert httpx.post(server + "run/0/docs").status_code == 405  # read-only


def test_run_page_funnel_and_each_drop_reason_lists_its_documents(server, runs):
    page = get(server, "/run/0").text
    stats = json.loads((runs["a"] / "stats.json").read_text())["steps"]
    ref = rows(runs["a"])
    for s in stats:
        assert f"<td>{s['name']}</td><td class=\"n\">{s['docs_in']:,}</td><td class=\"n\">{s['docs_out']:,}</td>" in page
    reasons = {r for s in stats[1:] for r in s["dropped"]}  # the reader's skips are records, never written
    assert "read:request" in stats[0]["dropped"] and "reason=read" not in page
    assert {"c4:lorem_ipsum", "exact:duplicate", "gopher_quality:too_few_words"} <= reasons
    for reason in reasons:
        assert f"reason={reason.replace(':', '%3A')}" in page
        want = sum(r["drop_reason"] == reason for r in ref)
        assert want == next(s["dropped"][reason] for s in stats if reason in s["dropped"])
        assert total(get(server, f"/run/0/docs?status=dropped&reason={reason}").text) == want
    langs = Counter(r["lang"] for r in ref if r["status"] == "kept")
    for lang, n in langs.items():
        assert re.search(rf"lang={lang}\">{lang}</a></td><td class=\"n\">{n:,}</td>", page), lang


FILTERS = [  # query string, the same selection as a predicate on a pyarrow row
    ("", lambda r: True),
    ("status=kept", lambda r: r["status"] == "kept"),
    ("status=dropped&step=gopher_quality", lambda r: (r["drop_reason"] or "").startswith("gopher_quality:")),
    ("lang=en", lambda r: r["lang"] == "en"),
    ("min:length=500&max:length=2000", lambda r: 500 <= len(r["text"]) < 2000),
    ("url=/NEWS", lambda r: "/news" in (r["url"] or "").lower()),
    ("q=the+council", lambda r: "the council" in r["text"].lower()),
    ("min:lang_score=0.9&status=kept", lambda r: r["status"] == "kept" and (r["lang_score"] or 0) >= 0.9),
    ("min:quality_score=0&lang=pt&min:length=100", lambda r: False),  # no quality_score column: nothing matches
    ("eq:lang=pt&eq:source=web", lambda r: r["lang"] == "pt" and r["source"] == "web"),
    ("eq:lang_score=1&eq:nope=1", lambda r: False),  # a column the run does not have: nothing matches
]


@pytest.mark.parametrize("qs,pred", FILTERS, ids=[q or "all" for q, _ in FILTERS])
def test_documents_filters_count_what_brute_force_counts(server, runs, qs, pred):
    ref = rows(runs["a"])
    want = sum(map(pred, ref))
    assert want or "nope" in qs or qs.startswith("min:quality"), f"{qs}: the reference selects nothing"
    assert total(get(server, f"/run/0/docs?{qs}").text) == want


def test_domain_filter_and_sorted_pages(server, runs):
    ref = rows(runs["a"])
    host = re.match(r"https?://([^/]+)", ref[0]["url"]).group(1)
    assert total(get(server, f"/run/0/docs?domain={host.upper()}").text) == sum(
        (r["url"] or "").lower().split("/")[2:3] == [host.lower()] for r in ref)
    ids = sorted(r["id"] for r in ref)
    assert len(ids) > 60
    assert listed_ids(get(server, "/run/0/docs?sort=id&page=1").text) == ids[50:100]
    assert listed_ids(get(server, "/run/0/docs?sort=id&desc=1").text) == ids[::-1][:50]
    longest = sorted((len(r["text"]) for r in ref), reverse=True)[:50]
    page = get(server, "/run/0/docs?sort=length&desc=1").text
    got = [len(r["text"]) for i in listed_ids(page) for r in ref if r["id"] == i]
    assert got == longest
    assert get(server, "/run/0/docs?sort=nope").status_code == 400
    assert get(server, "/run/0/docs?min:length=abc").status_code == 400


def test_document_page_shows_text_signals_and_says_html_not_kept(server, runs):
    doc = next(r for r in rows(runs["a"]) if r["status"] == "dropped" and r["drop_reason"] == "c4:lorem_ipsum")
    page = get(server, "/run/0/doc", params={"id": doc["id"]}).text
    assert html.escape(doc["text"][:200], quote=True) in page
    assert "dropped: c4:lorem_ipsum" in page and f"{doc['lang_score']:,.3f}" in page
    assert "Not kept: this run stored only the extracted text" in page and "<iframe" not in page
    assert get(server, "/run/0/doc", params={"id": "no-such-id"}).status_code == 404


def test_a_contaminated_document_shows_the_benchmark_item_and_its_ngrams(server, runs):
    """Run b's decontam step dropped the page the planted item came from: its Document page names the benchmark
    and the item, and marks in the text what matched, every marked piece part of the planted item."""
    ref = {r["id"]: r for r in rows(runs["b"])}
    doc = ref[PLANTED["id"]]
    assert doc["drop_reason"] == "decontam:contaminated"
    page = get(server, "/run/1/doc", params={"id": doc["id"]}).text
    assert "<h2 id=\"decontam\">Decontamination</h2>" in page and "<td>planted</td><td class=\"item\">item-7</td>" in page
    marked = [html.unescape(m) for m in re.findall(r"<mark>(.*?)</mark>", page, re.S)]
    assert marked and all(" ".join(m.split()) in PLANTED["text"] for m in marked)
    assert sum(len(m.split()) for m in marked) >= 20  # most of the 40 planted words are marked
    text = re.search(r'<pre class="text" id="text">(.*?)</pre>', page, re.S).group(1)
    assert html.unescape(re.sub("</?mark>", "", text)) == doc["text"]  # marking added no character and lost none
    clean = next(r for r in ref.values() if r["status"] == "kept")
    assert "Decontamination" not in get(server, "/run/1/doc", params={"id": clean["id"]}).text


def test_compare_counts_what_set_operations_count(server, runs):
    a = {r["id"]: r for r in rows(runs["a"]) if r["status"] == "kept"}
    b = {r["id"]: r for r in rows(runs["b"]) if r["status"] == "kept"}
    want = {"only_a": len(a.keys() - b.keys()), "only_b": len(b.keys() - a.keys()),
            "changed": sum(a[i]["text"] != b[i]["text"] for i in a.keys() & b.keys())}
    assert want["only_b"] and want["changed"], want  # C4 drops pages and rewrites lines: both kinds exist
    page = get(server, "/compare?a=0&b=1&kind=only_b").text
    for kind, n in want.items():
        assert f'<span id="n-{kind}">{n:,}</span>' in page
    assert sorted(listed_ids(page)) == sorted(b.keys() - a.keys())[:50]
    dropped_by_a = {r["id"]: r["drop_reason"] for r in rows(runs["a"]) if r["status"] == "dropped"}
    for i in listed_ids(page):
        assert f"dropped: {dropped_by_a[i]}" in page
    changed = sorted(i for i in a.keys() & b.keys() if a[i]["text"] != b[i]["text"])
    assert listed_ids(get(server, "/compare?a=0&b=1&kind=changed").text) == changed[:50]
    diff = get(server, "/compare/doc", params={"a": 0, "b": 1, "id": changed[0]}).text
    gone = set(b[changed[0]]["text"].splitlines()) - set(a[changed[0]]["text"].splitlines())
    assert gone and all(f"<ins>+ {html.escape(line, quote=True)}</ins>" in diff for line in gone)


def test_hostile_documents_are_shown_never_obeyed(server, runs):
    ref = {r["metadata"] and json.loads(r["metadata"]).get("id"): r for r in rows(runs["h"])}
    docs = get(server, "/run/2/docs").text
    assert total(docs) == 4 and "<script" not in docs.lower() and "&lt;script&gt;" in docs
    assert "javascript:" not in re.sub(r">[^<]*<", "><", docs)  # only in text, never in a tag or attribute
    assert "\u202e" not in docs and "\x1b" not in docs and "\\u202e" in docs and "\\x1b]0;retitled\\x07" in docs
    for own in ("<b>x</b>\"'", "bidi", "frame"):
        r = get(server, "/run/2/doc", params={"id": ref[own]["id"]})
        page = r.text
        assert r.headers["content-security-policy"] == PAGE_CSP
        low = page.lower()
        assert "<script" not in low and "<img" not in low and "<meta http-equiv" not in low and "<form" not in low
        visible = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in ref[own]["text"])
        assert f'<pre class="text" id="text">{html.escape(visible, quote=True)}</pre>' in page
        assert page.count("<iframe") == 1 and page.count("</iframe>") == 1  # ours; the text's is escaped
        assert re.search(r'<iframe sandbox="" referrerpolicy="no-referrer" src="/run/2/raw\?id=[^"]+"', page)
        raw = get(server, "/run/2/raw", params={"id": ref[own]["id"]})
        assert raw.headers["content-security-policy"] == RAW_CSP and RAW_CSP.startswith("sandbox;")
        assert raw.text == ref[own]["html"]  # served as is, but only under the sandbox policy
    assert "&lt;b&gt;x&lt;/b&gt;&quot;&#x27;#" in docs  # the hostile own id, at the front of the run's id
    page = get(server, "/run/2/doc", params={"id": ref["frame"]["id"]}).text  # its blocks, under run h's Main
    assert ("Home News About us", "div") in [(t, k) for k, t in _blocks(page, False)]  # the planted menu: dropped
    assert ("The river rose by two metres overnight after three days of heavy rain, and the town closed the old "
            "bridge before dawn.") in [t for _, t in _blocks(page, True)]
    shown = "&lt;/iframe&gt;&lt;script&gt;parent.__pwned=5&lt;/script&gt; \\x1b]0;retitled\\x07 \\u202eevil"
    assert f'<span class="btext">{shown}' in page  # the block's markup, escapes and bidi: text, never obeyed
    assert '<p class="verdict differs" id="verdict">' in page  # the run's text never came from this HTML


def _blocks(page: str, kept: bool) -> list[tuple[str, str]]:
    """(kind, text) of the listed blocks marked kept (or dropped), in page order, as the page shows them."""
    li = rf'<li class="block {"kept" if kept else "dropped"}"[^>]*>.*?<code>(.*?)</code>.*?<span class="btext">(.*?)</span>'
    return [(k, html.unescape(t)) for k, t in re.findall(li, page, re.S)]


def test_a_warc_documents_page_marks_the_blocks_the_extractor_kept(server, runs):
    """Run b kept each page's raw HTML: beside it, extract.Main's blocks, re-run with the settings its manifest
    records. The kept ones, one a line, are the text the run stored (pages without table rows, whose cells share
    a line), and the page says the re-extraction reproduces it; every page's boilerplate is marked dropped."""
    from curate.extract.main import Main

    kept, joined = [r for r in rows(runs["b"]) if r["status"] == "kept"][:6], 0
    for doc in kept:
        page = get(server, "/run/1/doc", params={"id": doc["id"]}).text
        assert f"as the run recorded it: {html.escape(repr(Main()), quote=True)}" in page
        assert '<p class="verdict same" id="verdict">re-extracting the raw HTML' in page
        blocks = _blocks(page, True)
        assert blocks and _blocks(page, False)
        if all(k != "td" for k, _ in blocks):
            assert "\n".join(t for _, t in blocks) == doc["text"]
            joined += 1
    assert joined
    page = get(server, "/run/0/doc", params={"id": kept[0]["id"]}).text  # run a kept no HTML: no blocks
    assert 'id="blocks"' not in page


def test_a_documents_cluster_is_one_click_away(server, runs):
    ref = rows(runs["h"])
    doc = next(r for r in ref if "frame" not in r["id"])
    page = get(server, "/run/2/doc", params={"id": doc["id"]}).text
    link = html.unescape(re.search(r'<a class="cluster" href="([^"]+)">', page).group(1))
    assert link == "/run/2/docs?eq%3Adedup_cluster=c1"
    assert total(get(server, link).text) == sum(r["dedup_cluster"] == "c1" for r in ref) == 3


def test_a_damaged_shard_is_one_message(server):
    r = get(server, "/run/3/docs")
    assert r.status_code == 400 and "could not read" in r.text and "damaged shard" in r.text
    assert "Traceback" not in r.text and 'File "' not in r.text


def test_a_run_being_written_shows_what_is_published(server, runs):
    page = get(server, "/run/4").text
    assert "No stats.json yet" in page
    first = sorted((runs["a"] / "data").glob("*.parquet"))
    assert total(get(server, "/run/4/docs").text) == pq.read_metadata(first[0]).num_rows
    tmp = runs["grow"] / "data" / ".part.tmp"  # published as a writer does: a hidden name, then a rename
    shutil.copy(first[1], tmp)
    os.replace(tmp, runs["grow"] / "data" / first[1].name)
    want = sum(pq.read_metadata(f).num_rows for f in first[:2])
    assert total(get(server, "/run/4/docs").text) == want
    from curate.view.index import ShardIndex

    index = ShardIndex(str(runs["a"].parent / "cache"), background=False)  # the server's --cache
    new = str(runs["grow"] / "data" / first[1].name)
    for _ in range(300):  # the server's thread indexes the new shard; until then the shard itself is read
        if index.current(new):
            break
        time.sleep(0.1)
    assert index.current(new) and total(get(server, "/run/4/docs?min:length=0").text) == want


# ---------------------------------------------------------------- a real browser: Debian's Chromium, by Selenium


def _browser_available() -> bool:
    return bool(shutil.which("chromium") and shutil.which("chromedriver"))


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium driven by its chromedriver. Missing: installed by scripts/chromium-setup.sh where this
    may (root and apt-get, as in CI); elsewhere skipped with the reason, except under CI, where it fails."""
    if not _browser_available():
        if os.geteuid() == 0 and shutil.which("apt-get"):
            p = subprocess.run(["bash", str(ROOT / "scripts" / "chromium-setup.sh")], capture_output=True,
                               text=True, timeout=900, check=False)
            assert p.returncode == 0, f"scripts/chromium-setup.sh failed:\n{p.stdout}\n{p.stderr}"
        elif os.environ.get("CI"):
            pytest.fail("no chromium/chromedriver under CI: run scripts/chromium-setup.sh as root")
        else:
            pytest.skip("no chromium and chromedriver (Debian: sudo scripts/chromium-setup.sh)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must not look for a driver on the network
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(options=opts, service=Service(shutil.which("chromedriver")))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def test_in_a_browser_click_a_document_and_nothing_hostile_runs(server, browser, runs, tmp_path):
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By

    browser.get(server + "run/0/docs?status=kept&sort=length&desc=1")
    n = sum(1 for r in rows(runs["a"]) if r["status"] == "kept")
    assert browser.find_element(By.ID, "total").text == f"{n:,}"
    link = browser.find_elements(By.CSS_SELECTOR, "a.doc")[0]
    doc_id = link.text
    link.click()
    assert browser.find_element(By.CSS_SELECTOR, "h1 code").text == doc_id
    assert browser.find_element(By.ID, "text").text.strip()
    shot = Path(os.environ.get("PENEIRA_VIEW_SCREENSHOT", tmp_path / "document.png"))
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    doc = next(r for r in rows(runs["b"]) if r["status"] == "kept")  # a page kept with its HTML: its blocks
    browser.get(server + f"run/1/doc?id={doc['id']}")
    assert browser.find_elements(By.CSS_SELECTOR, "li.block.kept") and \
        browser.find_elements(By.CSS_SELECTOR, "li.block.dropped")
    browser.execute_script("const s = document.getElementById('blocks'); s.scrollIntoView(); "  # to the first kept
                           "s.scrollTop = s.querySelector('li.block.kept').offsetTop - s.offsetTop - 60")
    browser.save_screenshot(str(shot.with_name("blocks.png")))
    browser.get(server + "run/2/docs")  # hostile texts, ids and URLs, then each hostile document with its frame
    blocks = []
    for href in [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "a.doc")]:
        browser.get(href)
        blocks += [b.text for b in browser.find_elements(By.CSS_SELECTOR, "li.block .btext")]
        frame = browser.find_element(By.TAG_NAME, "iframe")
        assert frame.get_attribute("sandbox") == ""
        assert browser.execute_script("return [window.__pwned, document.title.startsWith('retitled')]") == \
            [None, False]
        time.sleep(0.5)  # time for a meta refresh to the network (blocked: frame-src 'self', and the sandbox)
        browser.switch_to.frame(frame)  # the frame's own page: its scripts never ran, its meta refresh never left
        assert browser.execute_script("return [window.__pwned, origin]") == [None, "null"]  # an opaque origin
        with pytest.raises(WebDriverException, match="cross-origin"):  # so it cannot reach the page around it
            browser.execute_script("return parent.__pwned")
        assert browser.execute_script("return location.pathname") == "/run/2/raw"
        browser.switch_to.default_content()
    browser.save_screenshot(str(shot.with_name("hostile.png")))
    assert any(b.startswith("</iframe><script>parent.__pwned=5</script>") for b in blocks)  # shown as text


def test_cli_refuses_what_is_not_a_run_and_a_taken_port(tmp_path, runs, capsys):
    from curate.cli.main import main as cli

    assert cli(["view", str(tmp_path)]) == 2
    assert "is not a run folder (no data/ and no stats.json)" in capsys.readouterr().err
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        assert cli(["view", str(runs["a"]), "--port", str(taken.getsockname()[1])]) == 2
    assert "cannot listen on 127.0.0.1:" in capsys.readouterr().err


def test_an_ablation_folder_is_its_variants_runs(server):
    index = get(server, "/").text
    assert '<a href="/run/5">with_c4</a>' in index and '<a href="/run/6">without_c4</a>' in index
    assert "unfinished" not in index and '<a href="/run/7">' not in index
    counts = [re.findall(r'<span id="n-\w+">([\d,]+)</span>', get(server, f"/compare?a={a}&b={b}").text)
              for a, b in ((0, 1), (5, 6))]
    assert counts[0] == counts[1] and len(counts[0]) == 3


def test_a_token_folder_decodes_each_document_with_its_tokenizer(server, runs):
    """Against the format's definition (data-contract.md: ends in the .idx, ids in the .bin, read with numpy here)
    and the original run: byte-level BPE is lossless, so each decoded document is a kept text of run a + EOS."""
    from tokenizers import Tokenizer

    m = json.loads((runs["tokens"] / "manifest.json").read_text())
    tok = Tokenizer.from_file(str(runs["tokens"] / "tokenizer.json"))
    kept = {r["text"] for r in rows(runs["a"]) if r["status"] == "kept"}
    page = get(server, "/tokens/7").text
    assert f"{m['splits']['train']['docs']:,} documents" in page
    entry = m["splits"]["train"]["shards"][0]
    ids = np.fromfile(runs["tokens"] / entry["file"], np.dtype(m["dtype"]).newbyteorder("<"))
    raw = (runs["tokens"] / entry["index"]).read_bytes()
    n = int(np.frombuffer(raw, "<u8", 1, 8)[0])
    ends = np.frombuffer(raw, "<i8", n, 16)
    for k in (0, n // 2, n - 1):
        doc = ids[(ends[k - 1] if k else 0):ends[k]]
        page = get(server, "/tokens/7/doc", params={"split": "train", "shard": 0, "n": k}).text
        assert f'<span id="ntokens">{len(doc)}</span>' in page
        text = tok.decode(doc.tolist(), skip_special_tokens=False)
        assert text.endswith(m["tokenizer"]["eos_token"]) and text[:-len(m["tokenizer"]["eos_token"])] in kept
        assert f'<pre class="text" id="text">{html.escape(text, quote=True)}</pre>' in page
    assert get(server, "/tokens/7/doc", params={"shard": 0, "n": n}).status_code == 400
    assert get(server, "/run/7").status_code == 400 and get(server, "/tokens/0").status_code == 400


def test_a_run_on_an_object_store_gives_the_same_pages(runs):
    """memory:// through curate/io/fs.py (a pyarrow dataset over fsspec): the same counts and pages as on disk."""
    import fsspec

    from curate.view import compare, query

    mem = fsspec.filesystem("memory")
    for f in runs["a"].rglob("*"):
        if f.is_file() and f.suffix in (".parquet", ".json"):
            mem.pipe(f"/view-a/{f.relative_to(runs['a'])}", f.read_bytes())
    local, remote = query.Run(str(runs["a"])), query.Run("memory://view-a")
    for qs in ({}, {"status": "dropped", "step": "gopher_quality"}, {"lang": "pt", "sort": "length", "desc": "1"}):
        got = [query.documents(r, query.Filters.parse(qs, r.numeric())) for r in (local, remote)]
        assert got[0].total == got[1].total > 0
        assert [(r["id"], r["length"], r["snippet"]) for r in got[0].rows] == \
            [(r["id"], r["length"], r["snippet"]) for r in got[1].rows]
    doc = got[0].rows[0]["id"]
    assert query.document(remote, doc)["text"] == query.document(local, doc)["text"]
    assert compare.compare(remote, local, "changed", 0).counts == {"only_a": 0, "only_b": 0, "changed": 0}
