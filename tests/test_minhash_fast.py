"""MinHash's "fast" scheme (`sketch.fast_signatures`): its values against a plain-Python reading of its definition
over the reference shingles (`text.shingles`), and its Jaccard estimates against the exact Jaccard of the shingle
sets (brute force), no worse than datasketch's; the datasketch scheme stays the default."""

from __future__ import annotations

import gzip
import json
import random

import numpy as np
import pytest
from datasketch import MinHash as DsMinHash
from test_dedup import planted  # noqa: F401, F811  (the planted corpus fixture)

from curate import dedup
from curate.core.errors import UsageError
from curate.dedup import sketch
from curate.dedup.text import shingles

M64 = (1 << 64) - 1
POSITION = [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
            0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x27D4EB2F165667C5, 0x85EBCA77C2B2AE63]


def fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    return h ^ (h >> 33)


K0, K1, K2 = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9


def word_hash(word: bytes) -> int:
    """`sketch._word_hashes`' definition, read plainly: 8-byte little-endian pieces, the last padded with zeros."""
    pieces = [int.from_bytes(word[k:k + 8], "little") for k in range(0, max(len(word), 16), 8)]
    h = ((((len(word) * K0) & M64) ^ pieces[0]) * K1 + (pieces[1] ^ K0) * K2) & M64
    for c in pieces[2:]:
        h = ((((h << 31) | (h >> 33)) & M64 ^ c) * K1) & M64
    return fmix64(h)


def reference(text: str, num_perm: int = 112, ngram: int = 5) -> np.ndarray:
    """The fast scheme as its docstring defines it, one shingle at a time in Python ints."""
    a, b = (x.astype(np.uint64) for x in sketch.permutations(num_perm, 1))
    row = np.full(num_perm, 0xFFFFFFFF, dtype=np.uint64)
    for sh in shingles(text, ngram):
        x = sum(word_hash(w) * POSITION[j] for j, w in enumerate(sh.split(b" "))) & M64
        hv = np.uint64(fmix64(x) >> 32)
        row = np.minimum(row, (a * hv + b) & np.uint64(0xFFFFFFFF))
    return row.astype(np.uint32)


@pytest.fixture(scope="module")
def web(shared) -> list[str]:
    path = shared / "text" / "web_cc" / "dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


EDGES = ["", "   ...  ", "One", "Two words", "exactly five words here now", "ÉCOLE Straße ﬁne 12,5 €",
         "Tab\tand\nnewline_under_score 2024-01-02", "Ελληνικά ΚΕΙΜΕΝΑ ΣΑΣ", "नमस्ते दुनिया यह एक परीक्षण है",
         "a\u00a0b\u2014c \u201cquoted\u201d d e f g", "x" * 300]


def test_fast_signatures_follow_their_definition(web):
    texts = EDGES + web[:40] + [t for t in web if not t.isascii()][:20]
    got, counts = sketch.fast_signatures(texts)
    for t, row, n in zip(texts, got, counts, strict=True):
        assert n == len(shingles(t)), t[:40]
        assert np.array_equal(row, reference(t)), t[:40]


@pytest.mark.parametrize(("num_perm", "ngram"), [(16, 3), (1, 1), (7, 8), (200, 5), (256, 2)])
def test_fast_signatures_other_ngram_and_permutations(web, num_perm, ngram):
    """The minima are taken 16 permutations to a vector and up to 128 per pass (`sketch._min_affine`): counts that
    are not a multiple of 16, more than one pass, and every n-gram length."""
    texts = EDGES + web[:10]
    got, _ = sketch.fast_signatures(texts, num_perm=num_perm, ngram=ngram)
    assert got.shape == (len(texts), num_perm)
    for t, row in zip(texts, got, strict=True):
        assert np.array_equal(row, reference(t, num_perm=num_perm, ngram=ngram))
    with pytest.raises(ValueError):
        sketch.fast_signatures(texts, ngram=9)


def _near_copy(rng: random.Random, text: str, share: float) -> str:
    words = text.split()
    for i in rng.sample(range(len(words)), int(share * len(words))):
        words[i] = f"w{rng.randrange(10**6)}"
    return " ".join(words)


def test_fast_jaccard_estimates_as_good_as_datasketchs(web):
    rng = random.Random(7)
    docs = [t for t in web if 200 <= len(t.split()) <= 2000][:60]
    pairs = [(t, _near_copy(rng, t, rng.choice([0.02, 0.05, 0.1, 0.2, 0.4]))) for t in docs]
    fast_a, _ = sketch.fast_signatures([p[0] for p in pairs])
    fast_b, _ = sketch.fast_signatures([p[1] for p in pairs])
    err_fast, err_ds = [], []
    for k, (x, y) in enumerate(pairs):
        sx, sy = set(shingles(x)), set(shingles(y))
        exact = len(sx & sy) / len(sx | sy)
        mx, my = DsMinHash(112, seed=1), DsMinHash(112, seed=1)
        mx.update_batch(list(sx))
        my.update_batch(list(sy))
        err_ds.append(abs(mx.jaccard(my) - exact))
        err_fast.append(abs(float(np.mean(fast_a[k] == fast_b[k])) - exact))
    # the standard error of a 112-permutation estimate is at most 0.047; both are unbiased
    assert np.mean(err_fast) < 0.05 and np.mean(err_fast) < np.mean(err_ds) + 0.015
    assert max(err_fast) < 0.2


def test_minhash_step_scheme(web):
    assert dedup.MinHash().scheme == "datasketch"
    assert dedup.MinHash(scheme="fast").scheme == "fast"
    with pytest.raises(UsageError):
        dedup.MinHash(scheme="sha256")
    with pytest.raises(UsageError):
        dedup.MinHash(scheme="fast", ngram=9)
    same, _ = sketch.signatures_by_scheme(web[:5])
    assert np.array_equal(same, sketch.signatures(web[:5])[0])


def test_the_fast_schemes_version_is_in_the_steps_fingerprint():
    """The fast scheme's values changed once (`sketch.FAST_VERSION`): a run of the old values must not be resumed with
    the new ones, so the version is part of what a run's fingerprint reads; the datasketch scheme's is unchanged."""
    from curate.run.fingerprint import Fingerprinter

    fp = Fingerprinter()
    step = dedup.MinHash(scheme="fast")
    now = fp.component(step)[0]
    step.fast_version = sketch.FAST_VERSION - 1
    assert fp.component(step)[0] != now
    assert "fast_version" not in fp.component(dedup.MinHash())[0]


def test_fast_scheme_end_to_end_finds_the_planted_copies(planted, tmp_path):  # noqa: F811
    """The step with scheme="fast" on test_dedup's planted corpus, against brute-force Jaccard: every pair of true
    Jaccard >= 0.9 in one cluster and at least 90% of those >= 0.8 (14 bands of 8 rows miss a pair at 0.8 about
    8% of the time, whatever the hash: the default scheme's test counts exactly because its seed is fixed), and
    no dropped document under the threshold by more than 0.1."""
    from test_dedup import clusters_of, jaccard, run

    files, texts = planted
    run(files, tmp_path / "out", [dedup.MinHash(scheme="fast")])
    got = clusters_of(tmp_path / "out")
    sets = {i: set(shingles(t)) for i, t in texts.items()}
    ids = sorted((i for i in sets if sets[i]), key=lambda i: len(sets[i]))
    true_pairs = [(i, j) for x, i in enumerate(ids) for j in ids[x + 1:]
                  if len(sets[i]) >= 0.8 * len(sets[j]) and jaccard(sets[i], sets[j]) >= 0.8]
    assert len(true_pairs) == 74
    missed = [(i, j) for i, j in true_pairs if got[i][0] != got[j][0]]
    assert len(missed) <= 7 and [p for p in missed if jaccard(sets[p[0]], sets[p[1]]) >= 0.9] == []
    dropped = [(i, c) for i, (c, kept) in got.items() if not kept]
    threshold = dedup.MinHash().threshold
    assert dropped and [(i, c) for i, c in dropped if jaccard(sets[i], sets[c]) < threshold - 0.1] == []


def _python_kind_chars() -> list[str]:
    from curate.dedup.text import PYTHON, _tables

    return [chr(c) for c in np.flatnonzero(_tables()[0] == PYTHON).tolist()]


def test_fast_signatures_with_characters_only_python_normalises(web):
    """Documents holding characters that need Python's NFKC in context (combining marks, jamo, `Σ`, ...), whose
    stretches around them go through Python and the rest through the tables, against the reference, whose shingles
    come from NFKC of the whole text (`unicodedata`): such characters inserted at random into real documents, in
    random strings of every general category, next to a NUL, and a `Σ` whose final-sigma form depends on its
    neighbours outside any stretch."""
    import unicodedata

    rng = random.Random(3)
    python = _python_kind_chars()
    assigned = [chr(c) for c in range(1, 0x110000) if unicodedata.category(chr(c)) not in ("Cn", "Cs", "Co")]
    by_category: dict[str, list[str]] = {}
    for c in assigned:
        by_category.setdefault(unicodedata.category(c), []).append(c)
    texts = ["a\u0301 e\u0301\u0323 \u0301lead", "\u1100\u1161\u11a8 \ud55c\uad6d\uc5b4", "x\x00\u0301y z", "ΣΑΣ σ Σ. ΌΣΟΣ",
             "İstanbul\u0301 ΣΊΣΥΦΟΣ ﬁ\u0301 ①\u0301 ﷺ\u0301", "\u0345" * 7, "ά\u0345Σ a b c d e f"]
    for t in web[:30]:
        chars = list(t)
        for _ in range(25):
            chars.insert(rng.randrange(len(chars) + 1), rng.choice(python))
        texts.append("".join(chars))
    for _ in range(200):
        pools = [python, assigned, list(" ,.Σσß0a")] + list(by_category.values())
        texts.append("".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(1, 50))))
    got, counts = sketch.fast_signatures(texts)
    for t, row, n in zip(texts, got, counts, strict=True):
        assert n == len(shingles(t)), ascii(t[:40])
        assert np.array_equal(row, reference(t)), ascii(t[:40])


def test_fast_signatures_hostile_inputs():
    """A 10 MB document without a space (one word: one shingle, its hash from all its 8-byte pieces), combining
    marks throughout so it takes the Python route; lone surrogates are refused as by the datasketch scheme (their
    UTF-8 does not exist)."""
    big = "ab\u0301" * (10_000_000 // 4)
    got, counts = sketch.fast_signatures([big, "short one"])
    assert counts.tolist() == [1, 1]
    assert np.array_equal(got[0], reference(big)) and np.array_equal(got[1], reference("short one"))
    with pytest.raises(UnicodeEncodeError):
        sketch.fast_signatures(["lone \ud800 surrogate"])
    with pytest.raises(UnicodeEncodeError):
        sketch.signatures(["lone \ud800 surrogate"])


def test_fast_signatures_at_every_chunk_edge(web):
    """`sketch._fold_text` folds 32 ASCII bytes at a time and the rest character by character, and hashes words by
    8-byte pieces: words of every length from 1 to 40 bytes, a non-ASCII letter, a mapped character (`ﬁ`, `①`, full
    width digits), a separator and a digit at every offset around the 32-byte edges, words across them, and a text
    of characters that expand 18-fold (`ﷺ`, past the scratch space a document starts with), against the reference."""
    rng = random.Random(11)
    texts = [t.encode("ascii", "ignore").decode() for t in web[:10]]
    texts += [" ".join("x" * n for n in range(1, 41)), "y" * 8 + " " + "z" * 16 + " " + "w" * 17 + " " + "v" * 24]
    for odd in ("é", "ß", "ﬁ", "①", "１２", " ", "7", "—", "Ж", "中", "😀"):
        for at in range(24, 72):
            texts.append("ab cdefgh " * 3 + "q" * (at - 30) + odd + " tail words here " * 3)
    texts += ["ﷺ" * 3000, "a ﷺ b " * 700, ("abc " * 9 + "ﷺ") * 50]
    for _ in range(40):
        n = rng.randint(30, 300)
        texts.append("".join(rng.choice("abcXYZ019 .,-_\t\néßЖ中ﬁ①") for _ in range(n)))
    got, counts = sketch.fast_signatures(texts)
    for t, row, n in zip(texts, got, counts, strict=True):
        assert n == len(shingles(t)), t[:40]
        assert np.array_equal(row, reference(t)), t[:40]


def test_fast_signatures_marks_and_composers_in_every_context():
    """The fast scheme folds combining marks and composing vowel signs itself where NFKC leaves them as they are
    (`sketch._fast_tables`: MARK, COMPOSER) and sends them to Python where it does not: every COMPOSER after each of
    its first parts (`ெ` + `ா` is `ொ`), after characters whose NFD ends in one, after a MARK, a MAPPED character, a
    PYTHON one and nothing; MARKs of different combining classes in both orders, after a letter, after a MAPPED
    character whose replacement ends in a mark (`יִ`), after a composing mark; each also across a 32-byte edge, and
    against the reference (NFKC of the whole text); runs of three MARKs in every order (canonical ordering)."""
    import itertools
    import unicodedata

    kind, *_, pairs = sketch._fast_tables()
    composers = [chr(c) for c in np.flatnonzero(kind == sketch.COMPOSER).tolist()]
    marks = [chr(c) for c in np.flatnonzero(kind == sketch.MARK).tolist()]
    assert "\u0bbe" in composers and "\u094d" in marks and len(pairs) > 20
    firsts = {chr(int(k) // 0x110000) for k in pairs.tolist()}
    by_class: dict[int, str] = {}
    for m in marks:
        by_class.setdefault(unicodedata.combining(m), m)
    spread = list(by_class.values())
    before = sorted(firsts) + ["a", "\u0b95", "\u094d", "\ufb1d", "\u2460", "\u0301", "\u0bca", " ", ""]
    texts = []
    for c in composers:
        for p in before:
            texts += [f"x {p}{c} y", f"{p}{c}", f"{p}\u094d{c}", f"{p}{c}{c}\u0301"]
    for m1 in spread:
        for m2 in spread:
            for base in ("a", "\ufb1d", "\u0915", "e\u0301", "\u2460", ""):
                texts.append(f"w {base}{m1}{m2} z")
    for trio in itertools.permutations(["\u1037", "\u1039", "\u0e48", "\u0bcd"], 3):  # classes 7, 9, 107, 9
        texts += ["\u1000" + "".join(trio) + " x", "".join(trio) + "\u1000" + "".join(reversed(trio))]
    for t in texts[:400]:
        texts.append("q" * (31 - len(t) % 7) + t + " tail")
    got, counts = sketch.fast_signatures(texts)
    for t, row, n in zip(texts, got, counts, strict=True):
        assert n == len(shingles(t)), ascii(t)
        assert np.array_equal(row, reference(t)), ascii(t)

