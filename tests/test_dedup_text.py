"""`match_form_batch` (compiled, per-character NFKC and lowercase) equals the definition, computed by
Python's `unicodedata` one document at a time, on real text in many scripts and on random text."""

from __future__ import annotations

import gzip
import json
import random
import re
import zipfile
from pathlib import Path

import pytest

from curate.dedup import text as text_mod
from curate.dedup.text import match_form_batch

_classes: dict[str, str] = {}


def reference(t: str) -> str:
    """The module docstring's definition, literally: NFKC, lower, Nd to 0, runs of non-L/M/N to one space."""
    s = text_mod.unicodedata.normalize("NFKC", t).lower()
    table = {}
    for ch in set(s):
        if ch not in _classes:
            cat = text_mod.unicodedata.category(ch)
            _classes[ch] = "0" if cat == "Nd" else ch if cat[0] in "LMN" else " "
        table[ord(ch)] = _classes[ch]
    return " ".join(w for w in s.translate(table).split(" ") if w)


def check(texts: list[str]) -> None:
    data, offsets = match_form_batch(texts)
    assert offsets.shape == (len(texts) + 1,) and offsets[0] == 0 and offsets[-1] == len(data)
    got = [data[offsets[d] : offsets[d + 1]].tobytes().decode("utf-8") for d in range(len(texts))]
    want = [reference(t) for t in texts]
    bad = [(t, g, w) for t, g, w in zip(texts, got, want, strict=True) if g != w]
    assert not bad, f"{len(bad)} of {len(texts)} differ, first: {bad[0]!r}"


def warc_pages(path: Path) -> list[str]:
    """HTML of the responses in a WARC, decoded by its declared charset (gzipped bodies unpacked)."""
    out = []
    with gzip.open(path) as f:
        records = f.read().split(b"\r\n\r\nHTTP/")[1:]
    for rec in records:
        head, _, body = rec.partition(b"\r\n\r\n")
        if body[:2] == b"\x1f\x8b":
            try:
                body = gzip.decompress(body)
            except (OSError, EOFError):
                continue
        m = re.search(rb"charset=([\w-]+)", head + body[:2000], re.I)
        try:
            out.append(body.decode(m.group(1).decode() if m else "utf-8", errors="replace"))
        except LookupError:
            out.append(body.decode("utf-8", errors="replace"))
    return out


def real_texts(shared: Path) -> list[str]:
    texts = []
    for p in sorted((shared / "text/web_cc").glob("*.jsonl.gz")):
        with gzip.open(p, "rt", encoding="utf-8") as f:
            texts += [json.loads(line)["text"] for line in f]
    with open(shared / "text/pt/bosque_docs.jsonl", encoding="utf-8") as f:
        texts += [json.loads(line)["text"] for line in f]
    with zipfile.ZipFile(shared / "text/multilingual/nltk_udhr2.zip") as z:
        texts += [z.read(n).decode("utf-8", errors="replace")[:4000] for n in z.namelist() if n.endswith(".txt")]
    lines = (shared / "text/multilingual/tatoeba_long.tsv").read_text(encoding="utf-8").splitlines()[1:]
    texts += [line.split("\t")[-1] for line in lines]
    texts += warc_pages(shared / "warc/clueweb09/clueweb09-ja-quirk.warc.gz")
    return texts


def test_equal_to_the_definition_on_real_text(shared):
    texts = real_texts(shared)
    assert len(texts) > 2000 and any("\uff71" <= ch <= "\uff9f" for t in texts for ch in t)  # half-width kana
    check(texts)
    check(texts[::-1][:500])  # other batch boundaries


def test_every_code_point_alone_and_in_context():
    chars = [chr(c) for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000]
    check(chars)
    rng = random.Random(1)
    marks = ["\u0301", "\u0308", "\u0323", "\u3099", "\uff9e", "\u1161", "\u11a8", "\u0bbe", "\u1039", "\u05b4"]
    check(["A" + c + rng.choice(marks) + "Σ x" + c + c for c in chars[::7]])


# Characters where per-character NFKC and lowercasing could go wrong, and some plain ones to join them.
TRICKY = (
    "aAzZ0 9_.,-\n\t\u00a0\u00b2\u00bd\u00c5\u00e9\u0130\u0131\u03a3\u03c3\u03c2\u1e9e\u212a\u2126\u03f9"
    "\u0300\u0301\u0308\u0327\u0345\u0323\u031b\u0b47\u0b3e\u0b57\u0bc6\u0bbe\u0cbf\u0cd5\u0e48\u0e38"
    "\u1039\u103a\u0937\u093c\u094d\u05b4\u05bc\u0653\u0654\u0655"
    "\u1100\u1112\u1161\u1175\u11a8\u11c2\uac00\uac01\ud7a3\u3131\u314e\u314f\u3163\u3164\uffa1\uffc2"
    "\u304b\u3099\u309a\u309b\u30cf\uff76\uff8a\uff9e\uff9f\uff21\uff41\uff10\uff19\u3000\ufb01\ufb03\ufdfa"
    "\u2460\u2474\u2488\u3250\u32ff\u3300\u337f\u33ff\u2160\u216f\u24b6\u24d0\u0660\u0669\u0966\u096f"
    "\u0f73\u0f75\u0f81\u0344\u0340\u1f71\u1fee\u2000\u2024\u2026\u2122\u1d400\u1d7ce\u1f100\u1f130"
    "\U0001d15e\U0001d165\U0001d16e\U0002f800\U00010000\U000e0001\U000e0100\U00011099\U000110ba\U0001133e\U00011347"
)


def random_text(rng: random.Random) -> str:
    """Up to 40 characters, each tricky, any code point, or a word of a real-looking text."""
    out = []
    for _ in range(rng.randrange(41)):
        r = rng.random()
        if r < 0.6:
            out.append(rng.choice(TRICKY))
        elif r < 0.8:
            c = rng.randrange(1, 0x30000)
            out.append(chr(c) if not 0xD800 <= c < 0xE000 else " ")
        else:
            out.append(rng.choice(["Ação ", "ÉTÉ ", "ΟΔΟΣ ", "日本語の", "ｶﾞｷﾞ", "한국어 ", "ﬁnal ", " 2024 ", "ß"]))
    return "".join(out)


@pytest.mark.parametrize("seed", range(4))
def test_equal_to_the_definition_on_random_text(seed):
    rng = random.Random(seed)
    for _ in range(50):
        check([random_text(rng) for _ in range(rng.randrange(1, 60))])


def test_replacements_longer_than_the_text_grow_the_buffer():
    texts = ["", "\ufdfa" * 3000, "x", "\u3300 \u33ff" * 500, "\u0130" * 10, ""]
    check(texts)
    assert len(match_form_batch(texts)[0]) > 3 * sum(len(t.encode()) for t in texts)


@pytest.mark.parametrize("texts", [[], [""], ["", "Σ"], ["Ab1"] * 3])
def test_small_batches(texts):
    check(texts)
