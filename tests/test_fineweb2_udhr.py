"""Issue 41.5: pipelines/fineweb2.py keeps the clean UDHR page of every language lid.176 identifies.

One page per language lid.176 has a UDHR translation for (`scripts/derive_languages.py`'s UDHR_FILE: the held-out
half of its paragraphs, as tests/test_fineweb2.py builds them), run through the whole pipeline. Every page whose
language the language step identified (kept by it, or labelled with its own language) must come out, but for the
two listed in NOT_YET (still dropped: not done). Every script's terminators now come from the
Unicode data (`curate.lang.units._unicode_stops`), which makes Tibetan's `།` a sentence end.
"""

from __future__ import annotations

import html
import io
import zipfile

import pyarrow.parquet as pq
import pytest
from test_fineweb2 import derive, load, page

from curate.lang import STOPS


def test_every_scripts_terminators_come_from_unicode():
    regex = pytest.importorskip("regex")
    for mark in "。।။።፧։។؟۔།๚׃":  # Chinese, Devanagari, Burmese, Ethiopic, Armenian, Khmer, Arabic, Urdu, Tibetan...
        assert mark in STOPS
    assert all(regex.match(r"[\p{Sentence_Terminal}\p{Terminal_Punctuation}]", m) for m in STOPS)
    assert "," not in STOPS and "፣" not in STOPS  # commas: terminal punctuation of scripts with a full stop


# Not done (issue 41.5). Tibetan, now cut into syllables at its tsheg (units-2) and so configured from its UDHR
# (curate/lang/data/filters.json), measures 0.302 of duplicated 5-gram characters on the held-out half against the
# derived cap of 0.30; udhr2's Pashto file holds one sentence (no configuration is derived from it) and its
# page trips Gopher's duplicated 5-grams on the fallback configuration. Amharic, dropped before, is kept now.
NOT_YET = [("bo", "gopher_repetition:dup_5_gram"), ("ps", "gopher_repetition:dup_5_gram")]


@pytest.mark.slow
def test_clean_udhr_page_of_every_identified_language_is_kept(shared, monkeypatch, tmp_path):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    monkeypatch.setenv("PENEIRA_LID_MODEL", str(shared / "models/lid.176.ftz"))
    crawl = tmp_path / "crawl.warc.gz"
    with zipfile.ZipFile(shared / "text/multilingual/nltk_udhr2.zip") as z, open(crawl, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for lang, stem in sorted(derive.UDHR_FILE.items()):
            held = derive.halves(derive.udhr_paragraphs(z, stem))[1]
            body = "".join(f"<p>{html.escape(p)}</p>" for p in held)
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(f"http://{lang}.example/clean", "response",
                                                payload=io.BytesIO(page(held[0][:60], body)), http_headers=headers))
    out = tmp_path / "out"
    load(monkeypatch).run(inputs=str(crawl), output=str(out), workers=1, rejected=True, progress=False)
    kept = pq.read_table(out / "data", columns=["url", "lang"]).to_pylist()
    rejected = pq.read_table(out / "rejected", columns=["url", "lang", "drop_reason"]).to_pylist()
    def host(r: dict) -> str:
        return r["url"].split("//")[1].split(".")[0]

    identified = {host(r) for r in kept if r["lang"] == host(r)}
    identified |= {host(r) for r in rejected if r["lang"] == host(r) and not r["drop_reason"].startswith("language:")}
    lost = sorted((host(r), r["drop_reason"]) for r in rejected if host(r) in identified)
    assert lost == NOT_YET and len(identified) >= 80, (lost, len(identified))
