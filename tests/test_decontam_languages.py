"""Issue 41.2: decontamination in every script.

Benchmark items in Chinese, Japanese, Thai, Lao, Khmer and Burmese are n-grams of characters, with n and the floor
scaled from English words by the units each language needs per English word on the UDHR (`curate.lang.scale`,
recomputed here from ../shared/data); the index counts, per item language, the items indexed and too short, in
`curate decontam index`'s output and index.json. Tatweel, numeric character references and Traditional characters
are folded. False positives are measured on text no benchmark holds (every UDHR translation and nltk's Genesis)
against unrelated benchmarks (Tatoeba's long sentences in 83 languages, GSM8K): none is flagged.
"""

from __future__ import annotations

import json
import zipfile

import pytest

from curate.cli.main import main as cli
from curate.decontam.index import NgramIndex, build_index
from curate.decontam.loaders import Item
from curate.decontam.text import words
from curate.lang.scale import UNITS_PER_ENGLISH_WORD, derive, scaled

UDHR = "text/multilingual/nltk_udhr2.zip"

# Answer choices that are short in any language (issue 41): 8 and 9 characters, "Article 9 of the Constitution of
# Japan" and "core socialist values" (7 and 3 English words, under the floor of 8 words).
SHORT = ["日本国憲法第九条", "社会主义核心价值观"]
PAGES_WITH_SHORT = [
    "今日のニュースです。政府は日本国憲法第九条の解釈について、国会で長い議論を続けています。専門家の意見も分かれています。",
    "学校在周一举行了升旗仪式，校长在讲话中提到了社会主义核心价值观，并鼓励同学们认真学习，努力成为对社会有用的人。",
]
ARTICLE_1_HANS = "人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。"
ARTICLE_1_HANT = "人人生而自由，在尊嚴和權利上一律平等。他們賦有理性和良心，並應以兄弟關係的精神相對待。"  # typed, not converted
ARABIC = "يولد جميع الناس أحرارًا متساوين في الكرامة والحقوق وقد وهبوا عقلاً وضميرًا وعليهم أن يعامل بعضهم بعضًا بروح الإخاء"


def _udhr_lines(shared, name: str) -> list[str]:
    with zipfile.ZipFile(shared / UDHR) as z:
        return [s.strip() for s in z.read(f"udhr2/{name}.txt").decode("utf-8").splitlines() if s.strip()]


def test_units_per_english_word_are_derived_from_the_udhr(shared):
    assert derive(str(shared / UDHR), words) == UNITS_PER_ENGLISH_WORD
    assert (scaled(13, "zh"), scaled(8, "zh"), scaled(8, "th"), scaled(8, None)) == (20, 12, 33, 8)


def _paragraph(shared, name: str, lo: int, hi: int) -> str:
    """The first UDHR line of `name` with lo..hi units: a benchmark-sized paragraph."""
    return next(s for s in _udhr_lines(shared, name) if lo <= len(words(s)) <= hi)


@pytest.fixture(scope="module")
def index(shared, tmp_path_factory):
    out = tmp_path_factory.mktemp("idx") / "index"
    paragraphs = {lang: _paragraph(shared, name, 40, 120) for lang, name in
                  (("th", "tha"), ("lo", "lao"), ("km", "khm"), ("my", "mya"))}
    items = [Item(f"short{i}", (s,)) for i, s in enumerate(SHORT)]
    items += [Item(f"para-{lang}", (p,)) for lang, p in paragraphs.items()]
    items += [Item("article1", (ARTICLE_1_HANS,)), Item("arabic", (ARABIC,))]
    build_index({"ml": ("test", items)}, out)
    return NgramIndex.load(out), paragraphs, out


def _found(index: NgramIndex, text: str) -> set[str]:
    return {index.key_of(m.item) for m in index.scan([text])[0]}


def test_short_choices_are_not_indexed_and_pages_using_them_pass(index):
    idx, _, out = index
    meta = json.loads((out / "index.json").read_text())
    langs = meta["benchmarks"]["ml"]["languages"]
    assert langs["zh"] == {"items": 3, "indexed": 1, "too_short": 2}  # the two short ones, and Article 1
    assert "ja" not in langs and langs["spaced"] == {"items": 1, "indexed": 1, "too_short": 0}  # Arabic
    assert [_found(idx, p) for p in PAGES_WITH_SHORT] == [set(), set()]


def test_thai_lao_khmer_burmese_paragraphs_are_indexed_and_found_in_a_page(index):
    idx, paragraphs, out = index
    langs = json.loads((out / "index.json").read_text())["benchmarks"]["ml"]["languages"]
    for lang, p in paragraphs.items():
        assert langs[lang] == {"items": 1, "indexed": 1, "too_short": 0}, lang
        page = f"ข่าววันนี้ {p} ขอบคุณที่อ่าน"
        got = idx.scan([page])[0]
        assert {idx.key_of(m.item) for m in got} == {f"para-{lang}"}, lang
        assert words(page[got[0].start:got[0].end]) == words(p)  # the span is the copied paragraph


def test_tatweel_numeric_references_and_traditional_copies_are_found(index):
    idx, _, _ = index
    stretched = ARABIC.replace("الكرامة", "الكـــرامة").replace("بروح", "بــروح")
    assert _found(idx, f"مقدمة. {stretched}. خاتمة") == {"arabic"}
    encoded = "".join(f"&#{ord(c)};" if i % 2 else f"&#x{ord(c):x};" for i, c in enumerate(ARTICLE_1_HANS))
    page = f"<p>{encoded}</p>"
    (m,) = idx.scan([page])[0]
    assert idx.key_of(m.item) == "article1" and page[m.start:m.end].startswith("&#") and page[m.end - 1] == ";"
    assert _found(idx, f"世界人權宣言第一條：{ARTICLE_1_HANT}") == {"article1"}


def test_decontam_index_names_counts_per_language(shared, tmp_path, capsys):
    bench = tmp_path / "b.jsonl"
    rows = [{"text": s} for s in [*SHORT, ARTICLE_1_HANS, _paragraph(shared, "tha", 40, 120)]]
    bench.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    assert cli(["decontam", "index", "--benchmark", f"ml={bench}:text", "--out", str(tmp_path / "i")]) == 0
    out = capsys.readouterr().out
    assert any(line.split()[:5] == ["ml", "zh", "3", "1", "2"] for line in out.splitlines()), out
    assert any(line.split()[:5] == ["ml", "th", "1", "1", "0"] for line in out.splitlines()), out
    meta = json.loads((tmp_path / "i" / "index.json").read_text())
    assert meta["benchmarks"]["ml"]["languages"]["zh"]["too_short"] == 2 and "udhr" in meta["scale"]


@pytest.mark.slow
def test_no_false_positive_in_any_language(shared, tmp_path):
    """Every UDHR translation (388) and Genesis in 8 versions, scanned against Tatoeba's 462 long sentences in 83
    languages and GSM8K. Tatoeba holds some UDHR sentences (Albanian, Basque, Hindi... article 1): a flag is a true
    copy when the item and the flagged span share a verbatim stretch of half the span (difflib, on the raw
    texts); every other flag is a false positive. Goal (as in English): none, in every language."""
    rows = (shared / "text/multilingual/tatoeba_long.tsv").read_text(encoding="utf-8").splitlines()[1:]
    tatoeba = [Item(f"tatoeba{i}:{r.split(chr(9))[0]}", (r.split("\t")[3],)) for i, r in enumerate(rows)]
    gsm = [Item(f"gsm{i}", (json.loads(line)["question"],)) for i, line in
           enumerate((shared / "benchmarks/gsm8k/test.jsonl").read_text().splitlines())]
    meta = build_index({"tatoeba": ("tsv", tatoeba), "gsm8k": ("jsonl", gsm)}, tmp_path / "i")
    langs = meta["benchmarks"]["tatoeba"]["languages"]
    # Tatoeba's long sentences are 7-20 English words: most are indexed, a few fall under the scaled floor
    assert all(langs[lang]["indexed"] >= 2 for lang in ("zh", "ja", "th", "lo", "km", "my")), langs
    idx = NgramIndex.load(tmp_path / "i")
    pages = []
    for zname in ("nltk_udhr2.zip", "nltk_genesis.zip"):
        with zipfile.ZipFile(shared / "text/multilingual" / zname) as z:
            pages += [(n, z.read(n).decode("utf-8", "replace")) for n in z.namelist() if n.endswith(".txt")]
    from difflib import SequenceMatcher

    items = {it.key: it.segments[0] for it in tatoeba + gsm}
    false, true = {}, 0
    for lo in range(0, len(pages), 64):
        chunk = pages[lo:lo + 64]
        for (name, text), ms in zip(chunk, idx.scan([t for _, t in chunk]), strict=True):
            for m in ms:
                span, item = " ".join(text[m.start:m.end].split()), " ".join(items[idx.key_of(m.item)].split())
                common = SequenceMatcher(None, span, item, autojunk=False).find_longest_match().size
                if common >= len(span) / 2:
                    true += 1
                else:
                    false.setdefault(name, []).append(idx.key_of(m.item))
    assert len(pages) > 390 and false == {} and true >= 10
