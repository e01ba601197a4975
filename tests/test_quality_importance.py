"""quality.Importance (DSIR): weights and selection against a brute-force computation over every document (pure
Python: Counter over n-gram strings, float sums, one sort), the same ids at any number of workers and shards,
resume after a killed phase, a planted target, hostile inputs."""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import xxhash

from curate import Pipeline, quality, readers
from curate.core.errors import UsageError
from curate.lang.units import words
from curate.quality import importance
from curate.quality.text import chunk_text

BOTCHAN = "text/clean_en/botchan_gutenberg8868.txt"
SMS = "text/low_quality/SMSSpamCollection.tsv"
BOSQUE = "text/pt/bosque_docs.jsonl"
M64 = (1 << 64) - 1


def _tag(d):
    """The language the record states (a stand-in for the language step); none where it states none."""
    d.lang = d.metadata.get("lang")
    return d


@pytest.fixture(scope="module")
def corpus(shared, tmp_path_factory) -> dict:
    """A pool of clean English (the second half of a novel), SMS messages (8 a document, no language) and
    Portuguese news, plus hostile documents; the target is the novel's first half, held apart, as plain text."""
    tmp = tmp_path_factory.mktemp("importance")
    book = (shared / BOTCHAN).read_text(encoding="utf-8")
    half = len(book) // 2
    cut = book.index("\n\n", half)
    (tmp / "target.txt").write_text(book[:cut], encoding="utf-8")
    docs = [{"id": f"clean-{i:03d}", "text": t, "lang": "en"} for i, t in enumerate(chunk_text(book[cut:], 150))]
    sms = [line.split("\t", 1)[1] for line in (shared / SMS).read_text(encoding="utf-8").splitlines()[1:801]]
    docs += [{"id": f"sms-{i:03d}", "text": "\n".join(sms[i:i + 8])} for i in range(0, len(sms), 8)]
    pt = [json.loads(line) for line in (shared / BOSQUE).read_text(encoding="utf-8").splitlines()[:150]]
    docs += [{"id": f"pt-{i:03d}", "text": r["text"], "lang": "pt"} for i, r in enumerate(pt)]
    docs += [{"id": "empty", "text": "", "lang": "en"}, {"id": "blank", "text": " \n\t ", "lang": "en"}]
    return {"tmp": tmp, "docs": docs, "target": str(tmp / "target.txt")}


def _run(corpus: dict, out: Path, step, shards: int = 1, workers: int = 1) -> dict:
    """Run the step over the pool cut into `shards` JSONL files; every row (kept and rejected) and the stats."""
    docs = corpus["docs"]
    files = []
    for s in range(shards):  # contiguous pieces: another layout at every shard count
        part = docs[s * len(docs) // shards:(s + 1) * len(docs) // shards]
        path = out.parent / f"{out.name}-pool-{s}.jsonl"
        if not path.exists():  # a rerun reads the same files (a rewritten input is another run)
            path.write_text("".join(json.dumps(d) + "\n" for d in part), encoding="utf-8")
        files.append(str(path))
    pipe = Pipeline(name="dsir", reader=readers.Jsonl(source="web", unique_ids=False), steps=[_tag, step])
    pipe.run(inputs=files, output=str(out), rejected=True, workers=workers, progress=False)
    rows = lambda d: [r for p in sorted((out / d).glob("*.parquet")) for r in pq.read_table(p).to_pylist()]  # noqa: E731
    stats = {s["name"]: s for s in json.loads((out / "stats.json").read_text())["steps"]}["importance"]
    return {"kept": rows("data"), "rejected": rows("rejected"), "stats": stats}


# ---------------------------------------------------------------- the reference, written out by hand


def _grams(text: str, lang: str | None, buckets: int) -> list[int]:
    """Buckets of a text's unigrams and bigrams by the documented hash, in Python integers."""
    ws = words(text.lower(), lang)
    h = [xxhash.xxh3_64_intdigest(w.encode()) for w in ws]
    out = [x % buckets for x in h]
    for a, b in zip(h, h[1:], strict=False):
        x = (a * 0x9E3779B97F4A7C15 + b) & M64
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
        out.append((x ^ (x >> 31)) % buckets)
    return out


def _reference(target: list[tuple[str, str | None]], pool: list[dict], buckets: int = 10_000, seed: int = 0,
               smoothing: float = 1.0) -> tuple[dict[str, float], list[tuple[float, str, int]]]:
    """Every pool document's log weight, and the candidates as (key, id, words) sorted by key, best first."""
    ct, cp = Counter(), Counter()
    for text, lang in target:
        ct.update(_grams(text, lang, buckets))
    grams = {r["id"]: _grams(r["text"], r["lang"], buckets) for r in pool}
    for g in grams.values():
        cp.update(g)
    nt, np_ = sum(ct.values()), sum(cp.values())
    diff = {b: math.log((ct[b] + smoothing) / (nt + smoothing * buckets))
            - math.log((cp[b] + smoothing) / (np_ + smoothing * buckets)) for b in range(buckets)}
    lw = {i: math.fsum(diff[b] for b in g) for i, g in grams.items()}
    keys = []
    for r in pool:
        if grams[r["id"]]:
            u = ((xxhash.xxh3_64_intdigest(r["id"].encode(), seed=seed) >> 11) + 0.5) / 2.0**53
            keys.append((lw[r["id"]] - math.log(-math.log(u)), r["id"], len(words(r["text"].lower(), r["lang"]))))
    return lw, sorted(keys, reverse=True)


def _top(keys: list[tuple[float, str, int]], budget: int, by_tokens: bool) -> set[str]:
    """The shortest prefix of the sorted candidates that reaches the budget."""
    out, total = set(), 0
    for _, doc_id, n in keys:
        if total >= budget:
            break
        out.add(doc_id)
        total += n if by_tokens else 1
    return out


def _target_lines(corpus: dict) -> list[tuple[str, str | None]]:
    return [(line, "en") for line in Path(corpus["target"]).read_text(encoding="utf-8").splitlines(True) if line.strip()]


@pytest.fixture(scope="module")
def by_tokens(corpus) -> dict:
    run = _run(corpus, corpus["tmp"] / "tokens", quality.Importance(corpus["target"], tokens=20_000, target_lang="en"))
    lw, keys = _reference(_target_lines(corpus), run["kept"] + [{**r} for r in run["rejected"]])
    return {**run, "lw": lw, "keys": keys}


def test_weights_and_token_budget_equal_brute_force(corpus, by_tokens):
    kept, rejected, st = by_tokens["kept"], by_tokens["rejected"], by_tokens["stats"]
    n = len(corpus["docs"])
    assert len(kept) + len(rejected) == n
    for r in kept + rejected:
        got = r[importance.COLUMN]
        if r["id"] in ("empty", "blank"):
            assert got is None and r["drop_reason"] == "importance:no_words"
        else:
            assert got == pytest.approx(by_tokens["lw"][r["id"]], rel=1e-9, abs=1e-9)
    want = _top(by_tokens["keys"], 20_000, by_tokens=True)
    assert {r["id"] for r in kept} == want
    kept_words = sum(n for _, i, n in by_tokens["keys"] if i in want)
    assert 20_000 <= kept_words < 20_000 + max(n for _, i, n in by_tokens["keys"] if i in want)
    assert st["extra"]["kept"] == {"docs": len(want), "tokens": kept_words}
    assert st["extra"]["budget"] == {"tokens": 20_000} and st["extra"]["pool"]["candidates"] == n - 2
    assert st["dropped"] == {"importance:no_words": 2, "importance:not_sampled": n - 2 - len(want)}
    # the cut is the key of the last document taken
    last = min(k for k, i, _ in by_tokens["keys"] if i in want)
    assert st["extra"]["threshold"]["key"] == pytest.approx(last, rel=1e-12)
    assert st["extra"]["pool"]["no_lang"] == 100 and st["extra"]["target"]["no_lang"] == 0


def test_planted_target_selects_the_clean_part(corpus, by_tokens):
    """The pool is a third clean English (116 documents of 150 words from the novel's second half), the rest SMS and
    Portuguese news; the target is the novel's first half. A uniform sample would be about a third clean. Measured:
    74 of the 75 documents kept are clean (98.7%): the median clean document's log weight is -7 nats, the highest
    SMS one's -33 and the median Portuguese one's -118, and the cut key is near -16, so another document enters only
    on Gumbel noise of +17 nats or more (probability about e^-17 each). The floor, 90%, is nearly three times the
    uniform share and leaves room for a different hash of the same rule."""
    kept = by_tokens["kept"]
    clean = sum(r["id"].startswith("clean-") for r in kept)
    pool_share = sum(d["id"].startswith("clean-") for d in corpus["docs"]) / len(corpus["docs"])
    assert pool_share < 0.4 and clean / len(kept) >= 0.9, (clean, len(kept))
    lw = by_tokens["lw"]
    median = lambda p: statistics.median(v for k, v in lw.items() if k.startswith(p))  # noqa: E731
    assert median("clean-") > max(v for k, v in lw.items() if k.startswith("sms-"))
    assert median("clean-") > median("pt-")


@pytest.mark.parametrize(("workers", "shards"), [(1, 1), (2, 3), (3, 5)])
def test_same_ids_at_any_workers_and_shards(corpus, by_tokens, tmp_path, workers, shards):
    """A document count this time (a key of every candidate is compared too): the same ids as the brute force."""
    run = _run(corpus, tmp_path / "out", quality.Importance(corpus["target"], docs=57, target_lang="en", seed=7),
               shards=shards, workers=workers)
    _, keys = _reference(_target_lines(corpus), run["kept"] + run["rejected"], seed=7)
    assert {r["id"] for r in run["kept"]} == _top(keys, 57, by_tokens=False)
    assert len(run["kept"]) == 57


@pytest.mark.parametrize("phase", ["count_pool", "weigh_shard", "select_shard", "filter_shard"])
def test_resume_after_a_killed_phase(corpus, by_tokens, tmp_path, monkeypatch, phase):
    """A phase task dies on the second of three shards; the rerun does only what is left (the finished shards'
    tasks are not run again) and ends with the ids of an uninterrupted run."""
    real = getattr(importance, phase)
    calls: list[str] = []

    def dying(task):
        calls.append(str(task))
        if len(calls) == 2:
            raise OSError("killed")
        return real(task)

    monkeypatch.setattr(importance, phase, dying)
    step = quality.Importance(corpus["target"], tokens=20_000, target_lang="en")
    with pytest.raises(Exception, match="killed"):
        _run(corpus, tmp_path / "out", step, shards=3)
    first = len(calls)
    calls.clear()
    monkeypatch.setattr(importance, phase, lambda task: (calls.append(str(task)), real(task))[1])
    run = _run(corpus, tmp_path / "out", step, shards=3)
    passes = run["stats"]["extra"]["threshold"]["passes"]
    assert first == 3 and len(calls) == (1 if phase != "select_shard" else 1 + 3 * (passes - 1)), calls
    assert {r["id"] for r in run["kept"]} == {r["id"] for r in by_tokens["kept"]}
    assert run["stats"]["extra"]["kept"] == by_tokens["stats"]["extra"]["kept"]


def test_hostile_target_and_pool(corpus, tmp_path):
    """Bad records of the target are counted by reason (the JSONL reader's own), and so are records with no word;
    the pool's empty and blank documents are never candidates (checked in the brute-force test)."""
    lines = [json.dumps({"text": "the cat sat on the mat"}), "{not json", json.dumps({"body": "no text"}),
             json.dumps({"text": 5}), json.dumps({"text": ""}), json.dumps({"text": "  \n "}),
             json.dumps({"text": "a dog ran", "lang": "en"})]
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "t.txt").write_bytes(b"caf\xe9 au lait\n\nplain words here\n")
    run = _run(corpus, tmp_path / "out", quality.Importance([str(tmp_path / "t.jsonl"), str(tmp_path / "t.txt")],
                                                            fraction=0.5))
    target = run["stats"]["extra"]["target"]
    assert target["skipped"] == {"read:bad_json": 1, "read:no_text": 2, "no_words": 2, "invalid_utf8": 1}
    assert target["records"] == 4 + 2 and target["no_lang"] == 5 and target["files"] == 2
    assert len(run["kept"]) == round(0.5 * (len(corpus["docs"]) - 2))
    (tmp_path / "blank.jsonl").write_text(json.dumps({"text": " "}) + "\n{bad\n", encoding="utf-8")
    with pytest.raises(Exception, match="holds no word"):
        _run(corpus, tmp_path / "out2", quality.Importance(str(tmp_path / "blank.jsonl"), docs=3))
    (tmp_path / "t.csv").write_text("a,b\n", encoding="utf-8")
    with pytest.raises(UsageError, match="not .txt"):
        _run(corpus, tmp_path / "out3", quality.Importance(str(tmp_path / "t.csv"), docs=3))


def test_parameters_are_checked():
    for kwargs, msg in [({}, "exactly one budget"), ({"tokens": 5, "docs": 3}, "exactly one budget"),
                        ({"fraction": 0.0}, "fraction"), ({"tokens": 0}, "tokens"), ({"docs": 1, "buckets": 1}, "buckets"),
                        ({"docs": 1, "smoothing": 0.0}, "smoothing"), ({"docs": 1, "seed": -1}, "seed")]:
        with pytest.raises(UsageError, match=msg):
            quality.Importance("t.txt", **kwargs)
    with pytest.raises(UsageError, match="target"):
        quality.Importance(None, docs=1)


def test_weights_equal_the_authors_featurizer(corpus, by_tokens, monkeypatch):
    """The authors' package (`data-selection`, PyPI) as the reference: its `get_ngram_counts` enumerates and counts
    each text's unigrams and bigrams (lower-cased, then cut, bigrams joined by a space), given curate.lang's words as
    its tokenizer and this step's bucket hash in place of its sha256 (the only two parts swapped: the step hashes
    with xxh3 for speed). Its fit is unsmoothed (`log(p + 1e-8)`), so the step's add-1 smoothing is applied to its
    counts here; each weight is then its `importance_estimator`, a dot product of counts and log ratios."""
    ds = pytest.importorskip("data_selection.hashed_ngram_dsir")
    monkeypatch.setattr(ds, "hash_buckets", _their_hash)
    counts = lambda text, lang, acc=None: ds.get_ngram_counts(  # noqa: E731
        text, n=2, num_buckets=10_000, counts=acc, tokenizer=lambda s: words(s, lang))
    target = None
    for line, lang in _target_lines(corpus):
        target = counts(line, lang, target)
    rows = by_tokens["kept"] + by_tokens["rejected"]
    feats = {r["id"]: counts(r["text"], r["lang"]) for r in rows}
    pool = sum(feats.values())
    smooth = lambda c: np.log(c + 1.0) - np.log(c.sum() + 10_000.0)  # noqa: E731
    log_diff = smooth(target) - smooth(pool)
    for r in rows:
        want = float(np.dot(log_diff, feats[r["id"]]))
        got = r[importance.COLUMN]
        assert (got is None and not feats[r["id"]].any()) or got == pytest.approx(want, rel=1e-9, abs=1e-9), r["id"]


def _their_hash(text: str, num_buckets: int = 10_000) -> int:
    """This step's bucket of an n-gram string as the authors' code passes it (a bigram is "w1 w2")."""
    parts = text.split(" ")
    h = [xxhash.xxh3_64_intdigest(p.encode()) for p in parts]
    if len(h) == 1:
        return h[0] % num_buckets
    x = (h[0] * 0x9E3779B97F4A7C15 + h[1]) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return (x ^ (x >> 31)) % num_buckets


def test_targets_from_an_object_store_and_from_a_runs_shards(corpus, by_tokens, tmp_path):
    """The same target as gzip text on an fsspec store (memory://) selects what the local file selected; a run's
    Parquet shards are read as a target with their `lang` column."""
    import gzip

    import fsspec

    with fsspec.open("memory://dsir-target/target.txt.gz", "wb") as f:
        f.write(gzip.compress(Path(corpus["target"]).read_bytes()))
    run = _run(corpus, tmp_path / "mem", quality.Importance("memory://dsir-target/*.txt.gz", tokens=20_000,
                                                            target_lang="en"))
    assert {r["id"] for r in run["kept"]} == {r["id"] for r in by_tokens["kept"]}
    assert run["stats"]["extra"]["target"] == by_tokens["stats"]["extra"]["target"]
    shards = corpus["tmp"] / "tokens" / "data"
    run = _run(corpus, tmp_path / "pq", quality.Importance(str(shards), docs=10))
    target = run["stats"]["extra"]["target"]
    assert target["records"] == len(by_tokens["kept"]) and len(run["kept"]) == 10
    assert target["no_lang"] == sum(r["lang"] is None for r in by_tokens["kept"])


@pytest.mark.parametrize("budget", [1, 7, 500, 1999, 2500])
def test_the_cut_descends_every_pass_and_keeps_ties(tmp_path, budget):
    """Keys packed so close that they share their top 32 bits (log weights 1 + i * 1e-13) and repeat in pairs, over
    three key files: the cut takes the selection passes down to the last 16 bits, and the documents at or above it
    are the shortest prefix of the sorted keys that reaches the budget, with both of a tied pair kept."""
    import pyarrow as pa

    from curate.core.step import GlobalContext
    from curate.run.executors.local import LocalExecutor

    rng = np.random.default_rng(budget)
    values = 1.0 + np.repeat(np.arange(1000), 2) * 1e-13
    tokens = rng.integers(1, 5, len(values))
    files = []
    for i, part in enumerate(np.array_split(rng.permutation(len(values)), 3)):
        files.append(str(tmp_path / f"{i}.npz"))
        np.savez(files[-1], log_weight=values[part], key=importance.order_key(values[part]), tokens=tokens[part])
    ctx = GlobalContext(inputs=[], output_dir=str(tmp_path / "out"), work_dir=str(tmp_path / "work"),
                        executor=LocalExecutor(1), schema=pa.schema([]), writer=None)
    cut, passes = importance.find_cut(ctx, files, budget, by_tokens=True)
    order = np.argsort(-values, kind="stable")
    reach = int(np.searchsorted(np.cumsum(tokens[order]), budget))  # the last document the prefix needs
    last = values[order[reach]]
    assert importance.key_value(cut) == last and passes == 4  # a tied pair never resolves early
    assert set(np.flatnonzero(importance.order_key(values) >= np.uint64(cut))) == set(np.flatnonzero(values >= last))
