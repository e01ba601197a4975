"""dedup.Lines against brute force: a dictionary of spans (exact mode) and of n-gram sets (Bloom mode), on real lines."""

from __future__ import annotations

import glob
import gzip
import json
import random
import re

import numpy as np
import pyarrow.parquet as pq
import pytest

from curate import Pipeline, dedup, readers
from curate.core.errors import UsageError
from curate.dedup import lines as lines_mod
from curate.dedup.bloom import Filter
from curate.dedup.text import match_form
from curate.dedup.units import units
from curate.run.executors.base import TaskFailures
from curate.run.executors.local import LocalExecutor

WEB = "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"


def web_texts(shared) -> list[str]:
    with gzip.open(shared / WEB, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def corpus(shared, seed: int = 0, docs: int = 80) -> list[dict]:
    """Documents of real lines: each draws from a pool of 30 boilerplate lines (some in upper case or with
    other digits, equal in match form) and from unique lines, so lines, paragraphs and spans repeat."""
    rng = random.Random(seed)
    real = [ln for t in web_texts(shared) for ln in t.split("\n") if len(ln.split()) >= 4]
    pool, unique = real[:30], real[30:]
    blocks = ["\n".join(real[30 + 3 * b:33 + 3 * b]) for b in range(5)]  # boilerplate paragraphs
    unique = unique[15:]
    rows = []
    for d in range(docs):
        out = []
        for _ in range(rng.randint(2, 12)):
            r = rng.random()
            line = rng.choice(pool) if r < 0.45 else unique.pop()
            if r < 0.05:
                line = line.upper()
            out.append(line)
            if rng.random() < 0.2:
                out.append("")  # a blank line: paragraph breaks
            if rng.random() < 0.1:
                out.extend(["", rng.choice(blocks), ""])
        rows.append({"id": f"doc{rng.randrange(10**6):06d}-{d}", "text": "\n".join(out) + "\n" * rng.randint(0, 2)})
    return rows


def run(rows_or_files, out, step, workers=1, rejected=True, files=1):
    if isinstance(rows_or_files, list) and rows_or_files and isinstance(rows_or_files[0], dict):
        paths = []
        for k in range(files):
            p = out.parent / f"{out.name}-in{k}.jsonl"
            p.write_text("".join(json.dumps(r) + "\n" for r in rows_or_files[k::files]))
            paths.append(str(p))
    else:
        paths = rows_or_files
    pipe = Pipeline(name="lines", reader=readers.Jsonl(), steps=[step])
    pipe.run(inputs=paths, output=str(out), executor=LocalExecutor(workers, progress=False), rejected=rejected,
             progress=False)
    return paths


def own(run_id: str) -> str:
    return run_id.rsplit("#", 1)[0]


def kept(out) -> dict[str, str]:
    return {own(r["id"]): r["text"] for p in glob.glob(f"{out}/data/*.parquet")
            for r in pq.read_table(p, columns=["id", "text"]).to_pylist()}


def stats(out) -> dict:
    return json.loads((out / "stats.json").read_text())["steps"][-1]


# ---------------------------------------------------------------- brute force


def split_units(text: str, unit: str) -> tuple[list[str], str]:
    """Units (each with the separator before it) and the trailing whitespace, written independently of
    curate.dedup.units for lines and paragraphs; sentences come from it (their rules are tested apart)."""
    body = text.rstrip()
    tail = text[len(body):]
    if not body:
        return [], tail
    if unit == "line":
        parts = body.split("\n")
        return [parts[0], *("\n" + p for p in parts[1:])], tail
    if unit == "paragraph":
        pieces = re.split(r"(\n[^\S\n]*\n\s*)", body)
        return [pieces[0], *(pieces[i] + pieces[i + 1] for i in range(1, len(pieces), 2))], tail
    return units(body, "sentence"), tail


def brute_force(rows: list[dict], unit: str, span: int, min_words: int = 0, min_units: int = 0) -> dict[str, str]:
    """Every span of `span` units seen before, in documents by id and units by position, is removed."""
    seen, out = set(), {}
    for row in sorted(rows, key=lambda r: r["id"]):
        us, tail = split_units(row["text"], unit)
        forms = [match_form(u) for u in us]
        gone = [False] * len(us)
        for i in range(len(us) - span + 1):
            key = tuple(forms[i:i + span])
            if not any(key):
                continue
            if key in seen:
                gone[i:i + span] = [True] * span
            seen.add(key)
        if not any(gone):
            out[row["id"]] = row["text"]
            continue
        text = ("".join(u for u, g in zip(us, gone, strict=True) if not g) + tail).lstrip()
        left = sum(not g and u.strip() != "" for u, g in zip(us, gone, strict=True))
        if text.strip() and len(text.split()) >= min_words and left >= min_units:
            out[row["id"]] = text
    return out


def bff_brute_force(rows: list[dict], unit: str, ngram: int, min_ngram: int, threshold: float) -> dict[str, str]:
    """DCLM's old-both BFF rule with a Python set of n-grams in place of the Bloom filter, documents in file order."""
    seen, out = set(), {}
    for row in rows:
        us, tail = split_units(row["text"], unit)
        gone, total, found = [], 0, 0
        for u in us:
            words = match_form(u).split()
            if len(words) >= ngram:
                grams = [tuple(words[i:i + ngram]) for i in range(len(words) - ngram + 1)]
            else:
                grams = [tuple(words)] if words and len(words) >= min_ngram else []
            hit = sum(g in seen for g in grams)
            total, found = total + len(grams), found + hit
            drop = bool(grams) and hit > threshold * len(grams)
            gone.append(drop)
            if not drop:
                seen.update(grams)
        if total and found > threshold * total:
            continue
        if not any(gone):
            out[row["id"]] = row["text"]
            continue
        text = ("".join(u for u, g in zip(us, gone, strict=True) if not g) + tail).lstrip()
        if text.strip():
            out[row["id"]] = text
    return out


# ---------------------------------------------------------------- exact mode


@pytest.mark.parametrize("unit,span", [("line", 1), ("line", 2), ("paragraph", 1), ("sentence", 3)])
def test_exact_mode_equals_a_brute_force_dictionary_of_spans(shared, tmp_path, unit, span):
    rows = corpus(shared)
    run(rows, tmp_path / "out", dedup.Lines(unit=unit, span=span), files=3)
    want = brute_force(rows, unit, span)
    got = kept(tmp_path / "out")
    assert got == want
    st = stats(tmp_path / "out")
    assert st["extra"]["docs_changed"] > 5 and st["docs_out"] == len(want)
    assert st["dropped"].get("lines:emptied", 0) == len(rows) - len(want) == st["extra"]["docs_emptied"]


def test_min_words_drops_changed_documents_only_and_rejected_keeps_every_cut(shared, tmp_path):
    rows = corpus(shared, seed=1)
    run(rows, tmp_path / "out", dedup.Lines(min_words=25))
    want = brute_force(rows, "line", 1, min_words=25)
    got = kept(tmp_path / "out")
    assert got == want
    short_unchanged = [r for r in rows if r["id"] in got and len(r["text"].split()) < 25]
    assert short_unchanged  # untouched documents are never judged by length
    rejected = [r for p in glob.glob(f"{tmp_path}/out/rejected/*.parquet") for r in pq.read_table(p).to_pylist()]
    cut = {}
    for r in rejected:
        if r["drop_reason"] == "lines:duplicate":
            cut[own(r["id"])] = r["text"]
    # nothing lost: every changed document's lines are its kept lines plus its cut lines
    by_id = {r["id"]: r for r in rows}
    for doc_id, removed in cut.items():
        original = [ln.strip() for ln in by_id[doc_id]["text"].split("\n") if ln.strip()]
        remaining = [ln.strip() for ln in (got.get(doc_id) or "").split("\n") if ln.strip()]
        emptied = [r["text"] for r in rejected if own(r["id"]) == doc_id and r["drop_reason"] == "lines:emptied"]
        if emptied:
            remaining = [ln.strip() for ln in emptied[0].split("\n") if ln.strip()]
        assert sorted(original) == sorted(remaining + [ln.strip() for ln in removed.split("\n") if ln.strip()])
    assert stats(tmp_path / "out")["extra"]["docs_emptied"] == sum(r["drop_reason"] == "lines:emptied"
                                                                    for r in rejected)


def test_min_units_drops_changed_documents_left_with_fewer_sentences(shared, tmp_path):
    rows = corpus(shared, seed=7)
    run(rows, tmp_path / "out", dedup.Lines(unit="sentence", span=3, min_units=3))
    want = brute_force(rows, "sentence", 3, min_units=3)
    assert kept(tmp_path / "out") == want
    assert len(want) < len(brute_force(rows, "sentence", 3))  # the rule dropped some


def test_workers_partitions_and_input_order_do_not_change_the_result(shared, tmp_path):
    rows = corpus(shared, seed=2)
    run(rows, tmp_path / "a", dedup.Lines(unit="sentence", span=3), files=1)
    shuffled = rows[:]
    random.Random(5).shuffle(shuffled)
    run(shuffled, tmp_path / "b", dedup.Lines(unit="sentence", span=3, partitions=4, batch_docs=7), workers=2,
        files=4)
    assert kept(tmp_path / "a") == kept(tmp_path / "b")


@pytest.mark.parametrize("fn", ["unit_shard", "span_part", "rewrite_shard"])
def test_a_run_killed_during_a_phase_resumes(shared, tmp_path, monkeypatch, fn):
    rows = corpus(shared, seed=3)
    files = run(rows, tmp_path / "clean", dedup.Lines(partitions=2), files=2)
    real, calls = getattr(lines_mod, fn), []

    def dies_on_first_task(arg):
        calls.append(arg)
        if len(calls) == 1:
            raise RuntimeError("killed")
        return real(arg)

    monkeypatch.setattr(lines_mod, fn, dies_on_first_task)
    with pytest.raises(TaskFailures, match="killed"):
        run(files, tmp_path / "resumed", dedup.Lines(partitions=2))
    before = len(calls)
    run(files, tmp_path / "resumed", dedup.Lines(partitions=2))
    assert len(calls) - before == 1  # only the task that died runs again
    assert kept(tmp_path / "clean") == kept(tmp_path / "resumed")


def test_lines_on_s3_is_the_local_run(shared, tmp_path, s3_bucket):
    from curate.io import fs

    rows = corpus(shared, seed=4)
    files = run(rows, tmp_path / "local", dedup.Lines(partitions=2), files=2)
    pipe = Pipeline(name="lines", reader=readers.Jsonl(), steps=[dedup.Lines(partitions=2)])
    pipe.run(inputs=files, output=f"{s3_bucket}/out", executor=LocalExecutor(1, progress=False), rejected=True,
             progress=False)
    got = {own(r["id"]): r["text"] for p in fs.glob(f"{s3_bucket}/out/data/*.parquet")
           for r in fs.read_table(p, columns=["id", "text"]).to_pylist()}
    assert got == kept(tmp_path / "local")
    assert fs.glob(f"{s3_bucket}/out/_work/*/spans/*.parquet")


# ---------------------------------------------------------------- the Bloom mode


@pytest.mark.parametrize("unit,ngram,min_ngram,threshold", [("line", 13, 13, 0.8), ("line", 3, 1, 0.5),
                                                            ("paragraph", 5, 2, 0.8)])
def test_bloom_mode_equals_the_rule_with_an_exact_set(shared, tmp_path, unit, ngram, min_ngram, threshold):
    rows = corpus(shared, seed=6)
    step = dedup.Lines(method="bloom", unit=unit, ngram=ngram, min_ngram=min_ngram, threshold=threshold,
                       fp_rate=1e-9)  # a filter with ~no false positive is the set
    run(rows, tmp_path / "out", step, files=2)
    want = bff_brute_force(rows[0::2] + rows[1::2], unit, ngram, min_ngram, threshold)  # the files, in order
    assert kept(tmp_path / "out") == want
    extra = stats(tmp_path / "out")["extra"]
    assert extra["docs_changed"] > 5 and extra["fp_rate_end"] < 1e-9


@pytest.mark.parametrize("fp_rate", [0.01, 0.001])
def test_bloom_filter_false_positive_rate_is_the_target(fp_rate):
    n = 100_000
    f = Filter.sized(n, fp_rate)
    rng = np.random.default_rng(0)
    f.insert(rng.integers(0, 2**63, n, dtype=np.uint64))
    fresh = rng.integers(0, 2**63, 400_000, dtype=np.uint64)
    measured = f.contains(fresh).mean()
    assert 0.75 * fp_rate < measured < 1.25 * fp_rate  # binomial spread at 400k draws is < 5% (1%) / 16% (0.1%)
    assert abs(f.fp_rate() - fp_rate) < 0.1 * fp_rate
    assert f.bytes == dedup.Lines.bloom_bytes(n, fp_rate) < 2 * n


def test_bloom_mode_states_its_memory_and_reports_the_filters_rate(shared, tmp_path):
    """The filter is the size `bloom_bytes` says before the run; sized from the text (the default) it ends
    under its target rate, and an overfull one (sized for far fewer n-grams than it gets) reports more."""
    rows = [{"id": f"d{i:04d}", "text": t} for i, t in enumerate(web_texts(shared)[:300])]
    run(rows, tmp_path / "sized", dedup.Lines(method="bloom", fp_rate=0.01))
    extra = stats(tmp_path / "sized")["extra"]
    assert extra["ngrams"] < extra["expected_ngrams"] and extra["fp_rate_end"] < 0.01
    assert extra["bloom_bytes"] == dedup.Lines.bloom_bytes(extra["expected_ngrams"], 0.01)
    run(rows, tmp_path / "overfull", dedup.Lines(method="bloom", expected_ngrams=2000, fp_rate=0.01))
    extra = stats(tmp_path / "overfull")["extra"]
    assert extra["fp_rate_end"] > 0.01 and extra["bloom_bytes"] == dedup.Lines.bloom_bytes(2000, 0.01)


def test_configuration_errors():
    with pytest.raises(UsageError, match="bloom"):
        dedup.Lines(method="bloom", unit="sentence", span=3)
    with pytest.raises(UsageError, match="unit"):
        dedup.Lines(unit="word")


# ---------------------------------------------------------------- sentences


@pytest.mark.parametrize("lang,text,want", [
    ("en", "Mr. Smith went to Washington. He said \"stop.\" Then left... and ran! U.S. troops e.g. here. Done",
     ["Mr. Smith went to Washington.", " He said \"stop.\"", " Then left... and ran!", " U.S. troops e.g. here.",
      " Done"]),
    ("de", "Das ist z.B. gut. Dr. Müller kam ca. 3 Std. später. Ende.",
     ["Das ist z.B. gut.", " Dr. Müller kam ca. 3 Std. später.", " Ende."]),
    ("fr", "M. Dupont est arrivé. Il a vu Mme. Martin etc. Et après ?  Fin.",  # etc. is an exception in French
     ["M. Dupont est arrivé.", " Il a vu Mme. Martin etc. Et après ?", "  Fin."]),
    ("es", "El Sr. García llegó. Vive en EE.UU. desde 2010. ¿Qué pasa? Nada.",  # ¿ stays with the stop before it
     ["El Sr. García llegó.", " Vive en EE.UU. desde 2010. ¿", "Qué pasa?", " Nada."]),
    ("pt", "A Sra. Silva chegou. Mora na av. Paulista etc. e depois foi embora. Fim.",
     ["A Sra. Silva chegou.", " Mora na av. Paulista etc. e depois foi embora.", " Fim."]),
])
def test_sentences_split_where_spacys_sentencizer_does(lang, text, want):
    assert units(text, "sentence", lang) == want
    spacy = pytest.importorskip("spacy")
    nlp = spacy.blank(lang)
    nlp.add_pipe("sentencizer")
    ends = [s.end_char for s in nlp(text).sents]
    assert ends == list(np.cumsum([len(u) for u in want]))


def test_the_filters_rate_is_counted_without_copying_it():
    """fp_rate() counts set bits in place: unpacking them took 8 bytes a bit (+460 MiB at 1 M documents)."""
    import tracemalloc

    f = Filter.sized(2_000_000, 0.01)
    f.insert(np.arange(500_000, dtype=np.uint64))
    f.fp_rate()  # compiled before measuring
    tracemalloc.start()
    rate = f.fp_rate()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < f.bytes / 4
    fill = [np.unpackbits(p.view(np.uint8)).mean() for p in f.words.reshape(f.hashes, -1)]
    assert rate == pytest.approx(float(np.prod(fill)))
