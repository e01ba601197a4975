"""Exact and MinHash dedup on real data: licence texts, web_cc pages with planted edited copies."""

from __future__ import annotations

import functools
import glob
import gzip
import json
import random
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from datasketch import MinHash as DsMinHash

from curate import Pipeline, dedup, readers
from curate.cli.main import main as cli_main
from curate.dedup import components as components_mod
from curate.dedup import exact as exact_mod
from curate.dedup import minhash as minhash_mod
from curate.dedup import sketch as sigmod
from curate.dedup.sketch import signatures
from curate.dedup.text import match_form, shingles
from curate.run.executors.base import TaskFailures
from curate.run.executors.local import LocalExecutor

WEB = "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
LICENCES = "text/cs336_fixtures/documents_with_fuzzy_duplicates"


def web_docs(shared: Path) -> list[dict]:
    with gzip.open(shared / WEB, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def edit(text: str, frac: float, rng: random.Random, scattered: bool) -> str:
    """Replace, delete or insert `frac` of the words, as pages drift between crawls.

    Scattered edits (typos, counters) touch up to 5 shingles each; a block edit (a rewritten
    paragraph, a new sidebar) touches few, so copies span true Jaccard from about 0.3 to 0.95.
    """
    words = text.split()
    if not scattered:
        n = max(1, int(frac * len(words)))
        at = rng.randrange(len(words) - n + 1)
        words[at:at + n] = [f"block{rng.randrange(10**6)}z" for _ in range(n)]
        return " ".join(words)
    for _ in range(max(1, int(frac * len(words)))):
        i = rng.randrange(len(words))
        op = rng.random()
        if op < 0.4:
            words[i] = f"edit{rng.randrange(10**6)}x"
        elif op < 0.7 and len(words) > 1:
            del words[i]
        else:
            words.insert(i, f"new{rng.randrange(10**6)}y")
    return " ".join(words)


@pytest.fixture(scope="module")
def planted(shared, tmp_path_factory) -> tuple[list[str], dict[str, str]]:
    """web_cc (697 docs) in 3 JSONL files, plus an edited copy of every 2nd document with 100+ words."""
    rng = random.Random(0)
    docs = web_docs(shared)
    rows = [{"id": d["id"], "text": d["text"]} for d in docs]
    for k, d in enumerate(docs[::2]):
        if len(d["text"].split()) >= 100:
            copy = edit(d["text"], rng.uniform(0.05, 0.30), rng, scattered=k % 2 == 0)
            rows.append({"id": f"{d['id']}~copy", "text": copy})
    rng.shuffle(rows)
    root = tmp_path_factory.mktemp("planted")
    files = []
    for k in range(3):
        path = root / f"part{k}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows[k::3]))
        files.append(str(path))
    return files, {r["id"]: r["text"] for r in rows}


def run(inputs, out, steps, workers=1, rejected=True):
    pipe = Pipeline(name="dedup", reader=readers.Jsonl(), steps=steps)
    return pipe.run(inputs=inputs, output=str(out), executor=LocalExecutor(workers, progress=False),
                    rejected=rejected, progress=False)


def own(run_id: str | None) -> str | None:
    """The input's id inside a run's id (`<own id>#<position digest>`, docs/data-contract.md)."""
    return run_id.rsplit("#", 1)[0] if run_id else run_id


def clusters_of(out) -> dict[str, tuple[str, bool]]:
    """own id -> (own id of its cluster, kept) over kept and rejected shards."""
    got = {}
    for sub, kept in (("data", True), ("rejected", False)):
        for p in glob.glob(f"{out}/{sub}/*.parquet"):
            t = pq.read_table(p).to_pylist()
            for r in t:
                if not kept and not r["drop_reason"].startswith("minhash"):
                    continue
                got[own(r["id"])] = (own(r["dedup_cluster"]), kept)
    return got


def kept_ids(out) -> set[str]:
    return {own(i) for p in glob.glob(f"{out}/data/*.parquet") for i in pq.read_table(p, columns=["id"])["id"].to_pylist()}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


# ---------------------------------------------------------------- normalisation and signatures


def test_normalize_folds_case_punctuation_digits_and_compatibility_forms():
    assert match_form("Hello, World!  The ﬁle_name  costs $1,234.50 — ２０２４") == "hello world the file name costs 0 000 00 0000"
    assert match_form("Café naïve") == "café naïve"  # letters with marks stay words
    assert match_form("  ...  ") == ""
    assert shingles("a b c d e f", 5) == [b"a b c d e", b"b c d e f"]
    assert shingles("Just three words", 5) == [b"just three words"]
    assert shingles("!!!", 5) == []


def test_signatures_equal_datasketch(shared):
    texts = [d["text"] for d in web_docs(shared)]
    texts += [p.read_text() for p in sorted((shared / LICENCES).iterdir())]
    texts += ["", "one", "Ünïcödé ﬁ ２０２４ test, test!", "x " * 5000]
    # shingles of every length around SHA-1's block and padding edges (55/56, 63/64, 119/120 bytes),
    # in the middle of the batch and at its very end (where the padding is built byte by byte)
    texts += ["y" * k for k in (1, 54, 55, 56, 57, 63, 64, 65, 118, 119, 120, 128, 300)]
    texts += [" ".join(f"w{i:0{k}d}" for i in range(9)) for k in (8, 9, 10, 11, 12, 20)]
    texts += ["z" * 64, "z" * 55, "z" * 63]
    impls = ["portable"] + (["sha-ni"] if sigmod.has_sha_ni() else [])
    for num_perm, seed, n in ((112, 1, 5), (128, 7, 3)):
        ref = np.empty((len(texts), num_perm), dtype=np.uint32)
        for i, t in enumerate(texts):
            m = DsMinHash(num_perm=num_perm, seed=seed)
            m.update_batch(shingles(t, n))
            ref[i] = m.hashvalues
        for impl in impls:
            ours, counts = signatures(texts, num_perm=num_perm, seed=seed, ngram=n, impl=impl)
            assert np.array_equal(ours, ref), f"{impl}: rows differ: {np.nonzero((ours != ref).any(axis=1))[0][:10]}"
            assert counts[texts.index("")] == 0 and counts[texts.index("one")] == 1
        last = signatures(texts[-1:], num_perm=num_perm, seed=seed, ngram=n)[0]  # a batch shorter than one block
        assert np.array_equal(last, ref[-1:])


def test_signature_implementation_choice(monkeypatch):
    assert sigmod.implementation() in sigmod.IMPLEMENTATIONS
    with pytest.raises(ValueError, match="impl must be"):
        signatures(["a b"], impl="md5")
    monkeypatch.setenv("PENEIRA_SHA_NI", "0")
    sigmod.has_sha_ni.cache_clear()
    try:
        assert sigmod.implementation() == "portable"
        with pytest.raises(ValueError, match="SHA extensions"):
            signatures(["a b"], impl="sha-ni")
    finally:
        monkeypatch.delenv("PENEIRA_SHA_NI")
        sigmod.has_sha_ni.cache_clear()


def test_for_threshold_uses_datasketch_optimum():
    from datasketch.lsh import _optimal_param

    step = dedup.MinHash.for_threshold(0.8, num_perm=128)
    assert (step.bands, step.rows) == _optimal_param(0.8, 128, 0.5, 0.5)
    assert step.threshold == 0.8
    assert dedup.MinHash().threshold == pytest.approx((1 / 14) ** (1 / 8), abs=1e-4)
    with pytest.raises(ValueError, match="keep"):
        dedup.MinHash(keep="random")
    for step in (dedup.MinHash, dedup.Exact):  # the old name: a clear error naming the new one
        with pytest.raises(ValueError, match='keep="smallest_id"'):
            step(keep="first")


# ---------------------------------------------------------------- near-duplicates that exist in nature


def test_licence_texts(shared, tmp_path):
    src = tmp_path / "licences.jsonl"
    src.write_text("".join(json.dumps({"id": p.stem, "text": p.read_text()}) + "\n"
                           for p in sorted((shared / LICENCES).iterdir())))
    run(str(src), tmp_path / "out", [dedup.MinHash()])
    got = clusters_of(tmp_path / "out")
    # rails and react are the same MIT licence (true Jaccard 0.92); pytorch's BSD text is unrelated
    assert got == {
        "pytorch_license": ("pytorch_license", True),
        "rails_mit_license": ("rails_mit_license", True),
        "react_mit_license": ("rails_mit_license", False),
    }
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())["steps"][-1]
    assert stats["dropped"] == {"minhash:duplicate": 1}
    assert {r["dedup_cluster_size"] for p in glob.glob(f"{tmp_path}/out/data/*.parquet")
            for r in pq.read_table(p).to_pylist()} == {1, 2}


def test_planted_copies_recall_and_precision(planted, tmp_path):
    files, texts = planted
    run(files, tmp_path / "out", [dedup.MinHash()])
    got = clusters_of(tmp_path / "out")
    assert set(got) == set(texts)
    sets = {i: set(shingles(t)) for i, t in texts.items()}
    # every pair with true Jaccard >= 0.8 (only sizes within 0.8 of each other can reach it)
    ids = sorted((i for i in sets if sets[i]), key=lambda i: len(sets[i]))
    true_pairs = []
    for x, i in enumerate(ids):
        for j in ids[x + 1:]:
            if len(sets[i]) < 0.8 * len(sets[j]):
                break
            if jaccard(sets[i], sets[j]) >= 0.8:
                true_pairs.append((i, j))
    assert len(true_pairs) == 74  # 47 planted copies, the rest natural duplicates (one 27-page group of empty-ish pages)
    # recall: every one of them lands in one cluster (seeded permutations and edits: exact counts)
    assert [(i, j) for i, j in true_pairs if got[i][0] != got[j][0]] == []
    # precision: each dropped document against the one its cluster kept
    dropped = [(i, c) for i, (c, kept) in got.items() if not kept]
    assert len(dropped) == 86
    threshold = dedup.MinHash().threshold
    assert [(i, c) for i, c in dropped if jaccard(sets[i], sets[c]) < threshold - 0.1] == []
    # a planted copy edited at 5% is always caught
    light = [i for i in texts if i.endswith("~copy") and jaccard(sets[i], sets[i[:-5]]) >= 0.9]
    assert light and all(got[i][0] == got[i[:-5]][0] for i in light)


def test_workers_and_input_order_do_not_change_the_result(planted, tmp_path):
    files, _ = planted
    run(files, tmp_path / "a", [dedup.MinHash()], workers=1)
    run(list(reversed(files)), tmp_path / "b", [dedup.MinHash()], workers=2)
    assert clusters_of(tmp_path / "a") == clusters_of(tmp_path / "b")
    assert kept_ids(tmp_path / "a") == kept_ids(tmp_path / "b")


def test_a_collider_with_the_smallest_id_hash_cannot_hide_true_pairs(planted, tmp_path, monkeypatch):
    """Issue 13 case 6: a dissimilar document forced into every bucket of a planted copy's original, with the
    smallest id hash (so it is each bucket's first centre), changes no cluster; verified against the first
    centre only (the old rule), the same run loses the planted pairs."""
    files, texts = planted
    run(files, tmp_path / "clean", [dedup.MinHash()])
    clean = clusters_of(tmp_path / "clean")
    originals = sorted(i[:-5] for i in texts if i.endswith("~copy"))
    step = dedup.MinHash()
    forced = {}  # collider signature -> the band hashes of the original it collides with
    colliders = []
    for k, orig in enumerate(originals):
        text = " ".join(reversed(texts[orig].split()))  # the same words, reversed: hardly a shingle in common
        colliders.append({"id": f"collider{k:03d}", "text": text})
        sig = signatures([text])[0][0]
        forced[sig.tobytes()] = minhash_mod.band_hashes(signatures([texts[orig]])[0], step.bands, step.rows)[0]
    extra = tmp_path / "colliders.jsonl"
    extra.write_text("".join(json.dumps(c) + "\n" for c in colliders))
    real_bands, real_ids = minhash_mod.band_hashes, minhash_mod.id_hashes

    def colliding_bands(sig, bands, rows):
        out = real_bands(sig, bands, rows)
        for r in range(len(sig)):
            if sig[r].tobytes() in forced:
                out[r] = forced[sig[r].tobytes()]
        return out

    def smallest_for_colliders(ids):
        h = real_ids(ids)
        h[[i.startswith("collider") for i in ids]] = 0
        return h

    monkeypatch.setattr(minhash_mod, "band_hashes", colliding_bands)
    monkeypatch.setattr(minhash_mod, "id_hashes", smallest_for_colliders)
    run([*files, str(extra)], tmp_path / "attacked", [dedup.MinHash()])
    got = clusters_of(tmp_path / "attacked")
    stats = json.loads((tmp_path / "attacked" / "stats.json").read_text())["steps"][-1]["extra"]
    # no collider joins a real document (two colliders may: reversed near-duplicates are near-duplicates)
    assert [c["id"] for c in colliders if not got[c["id"]][0].startswith("collider")] == []
    assert {i: got[i] for i in clean} == clean  # every cluster as without colliders
    assert stats["unresolved_members"] == 0

    first_only = functools.partial(minhash_mod.verify_buckets, max_centres=1)
    monkeypatch.setattr(minhash_mod, "verify_buckets", lambda *a, **kw: first_only(*a))
    run([*files, str(extra)], tmp_path / "old-rule", [dedup.MinHash()])
    old = clusters_of(tmp_path / "old-rule")
    close = [o for o in originals if jaccard(set(shingles(texts[o])), set(shingles(texts[o + "~copy"]))) >= 0.8]
    assert len(close) == 47 and all(got[o][0] == got[o + "~copy"][0] for o in close)  # found despite colliders
    assert [o for o in close if old[o][0] == old[o + "~copy"][0]] == []  # the old rule loses every one


def test_components_equal_scipy_on_chains_stars_and_random_graphs(tmp_path):
    """The partitioned large-star / small-star labels equal scipy's connected components (label = smallest vertex)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components as reference

    from curate.core.step import GlobalContext

    rng = np.random.default_rng(0)
    n = 3000
    vertices = np.unique((rng.integers(0, 40, n * 2).astype(np.uint64) << np.uint64(32))
                         | rng.integers(0, 1 << 20, n * 2).astype(np.uint64))[:n]
    rng.shuffle(vertices)
    a = [np.arange(0, 400), rng.integers(1000, 1500, 300), rng.integers(1500, 3000, 900)]
    b = [np.arange(1, 401), np.full(300, 1600), rng.integers(1500, 3000, 900)]  # a path, a star, random
    a, b = np.concatenate(a), np.concatenate(b)
    a, b = a[a != b], b[a != b]
    for parts in (1, 4):
        work = tmp_path / f"p{parts}"
        edges = str(work / "edges.parquet")
        work.mkdir()
        components_mod.write_edges(components_mod.edge_table(vertices[a], vertices[b], parts, both=True), edges)
        ctx = GlobalContext(inputs=[], output_dir=str(work / "out"), work_dir=str(work), executor=LocalExecutor(1, progress=False),
                            schema=None, writer=None)
        labels, figures = components_mod.components(ctx, [edges], parts, str(work))
        got = {}
        for p in labels:
            t = pq.read_table(p)
            assert t["shard"].to_pylist() == sorted(t["shard"].to_pylist())
            got.update(zip(t["vertex"].to_pylist(), t["label"].to_pylist(), strict=True))
        _, comp = reference(coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n)), directed=False)
        used = np.unique(np.concatenate([a, b]))
        smallest = {}
        for v in used.tolist():
            c = comp[v]
            smallest[c] = min(smallest.get(c, vertices[v]), vertices[v])
        assert got == {int(vertices[v]): int(smallest[comp[v]]) for v in used.tolist()}
        assert 2 <= figures["rounds"] <= 12


def test_a_buckets_task_reads_only_its_own_rows_whatever_the_number_of_shards(planted, tmp_path, monkeypatch):
    """Each (band, partition) task reads its rows of each shard and nothing else: no footer, no other segment."""
    files, texts = planted
    step = dedup.MinHash(partitions=4)
    # reference: the rows of every (band, partition), from the documents themselves (no work files)
    sig, counts = signatures(list(texts.values()))
    bh = minhash_mod.band_hashes(sig[counts > 0], step.bands, step.rows)
    want = {(b, p): int((minhash_mod.common.partition_of(bh[:, b], 4) == p).sum())
            for b in range(step.bands) for p in range(4)}
    real_task, real_range, real_pf = minhash_mod.bucket_band, minhash_mod.common.read_range, minhash_mod.fs.parquet_file
    reads, footers, current = {}, [], []

    def task(arg):
        current[:] = [(arg.band, arg.part)]
        return real_task(arg)

    def read_range(path, start, length):  # band-file reads (signature rows for verification are another file)
        if "/bands/" in str(path):
            reads.setdefault(current[0], []).append((path, start, length))
        return real_range(path, start, length)

    def parquet_file(path):
        footers.append(str(path))
        return real_pf(path)

    monkeypatch.setattr(minhash_mod, "bucket_band", task)
    monkeypatch.setattr(minhash_mod.common, "read_range", read_range)
    monkeypatch.setattr(minhash_mod.fs, "parquet_file", parquet_file)
    rows = [line for f in files for line in Path(f).read_text().splitlines(keepends=True)]
    for n in (3, 6):
        shards = []
        for k in range(n):
            shards.append(tmp_path / f"{n}" / f"in{k}.jsonl")
            shards[-1].parent.mkdir(exist_ok=True)
            shards[-1].write_text("".join(rows[k::n]))
        reads.clear()
        footers.clear()
        run([str(s) for s in shards], tmp_path / f"out{n}", [step])
        got = {k: sum(r[2] for r in v) for k, v in reads.items()}
        wordless = sum(got.pop((0, p), 0) for p in range(4)) - 24 * sum(want[0, p] for p in range(4))
        assert wordless == 24 * int((counts == 0).sum())  # band 0 also holds one row per wordless document (issue 29)
        assert {k: 24 * c for k, c in want.items() if c and k[0]} == got
        for v in reads.values():  # one read per shard, never twice the same bytes
            assert len(v) <= n and len({r[0] for r in v}) == len(v)
        assert [f for f in footers if "/bands/" in f] == []
    assert clusters_of(tmp_path / "out3") == clusters_of(tmp_path / "out6")


def test_minhash_on_s3_is_the_local_run_with_ranged_band_reads(planted, tmp_path, s3_bucket, s3_server):
    from curate.io import fs

    files, _ = planted
    step = dedup.MinHash(partitions=2)
    run(files, tmp_path / "local", [step])
    start = len(s3_server.requests())
    run(files, f"{s3_bucket}/out", [step])
    band_gets = [r for r in s3_server.requests()[start:] if r[0] == "GET" and "/bands/" in r[1]]
    s3_ids = {own(i) for p in fs.glob(f"{s3_bucket}/out/data/*.parquet")
              for i in fs.read_table(p, columns=["id"])["id"].to_pylist()}
    assert s3_ids == kept_ids(tmp_path / "local")
    assert 0 < len(band_gets) <= step.bands * 2 * len(files)  # at most one ranged GET per task and shard


# ---------------------------------------------------------------- resuming


@pytest.mark.parametrize("module,fn", [
    (minhash_mod, "signature_shard"), (minhash_mod, "bucket_band"), (components_mod, "large_star"),
    (components_mod, "small_star"), (minhash_mod, "member_shard"), (minhash_mod, "keep_part"),
    (exact_mod, "group_part"), (minhash_mod.common, "filter_shard"),
])
def test_a_run_killed_during_a_phase_resumes(shared, tmp_path, monkeypatch, module, fn):
    docs = web_docs(shared)[:120]
    rows = docs + [{"id": d["id"] + "~copy", "text": d["text"] + " trailing words"} for d in docs[:30]]
    files = []
    for k in range(2):
        path = tmp_path / f"in{k}.jsonl"
        path.write_text("".join(json.dumps({"id": r["id"], "text": r["text"]}) + "\n" for r in rows[k::2]))
        files.append(str(path))
    steps = [dedup.Exact(), dedup.MinHash()]
    run(files, tmp_path / "clean", steps)

    real, calls = getattr(module, fn), []

    def dies_on_first_task(arg):
        calls.append(arg)
        if len(calls) == 1:
            raise RuntimeError("killed")
        return real(arg)

    monkeypatch.setattr(module, fn, dies_on_first_task)
    with pytest.raises(TaskFailures, match="killed"):
        run(files, tmp_path / "resumed", steps)
    before = len(calls)
    run(files, tmp_path / "resumed", steps)
    # only the task that died runs again (the filter phase: the dead Exact task, then MinHash's two;
    # a components phase: the dead round-0 task, then the same phase of every later round)
    rounds = json.loads((tmp_path / "clean" / "stats.json").read_text())["steps"][-1]["extra"]["component_rounds"]
    later = {"filter_shard": 3, "large_star": rounds, "small_star": rounds - 1}
    assert len(calls) - before == later.get(fn, 1)
    assert clusters_of(tmp_path / "clean") == clusters_of(tmp_path / "resumed")
    assert kept_ids(tmp_path / "clean") == kept_ids(tmp_path / "resumed")


# ---------------------------------------------------------------- exact dedup and the whole pipeline


def test_exact_and_minhash_end_to_end(shared, tmp_path):
    docs = web_docs(shared)
    rows = [{"id": d["id"], "text": d["text"]} for d in docs]
    # exact copies up to case, punctuation and digits, and one longer one for keep="longest"
    rows.append({"id": "zz-upper", "text": docs[5]["text"].upper()})
    rows.append({"id": "zz-digits", "text": docs[5]["text"].replace("0", "7") + " !!"})
    src = tmp_path / "web.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run(str(src), tmp_path / "out", [dedup.Exact(), dedup.MinHash()])
    steps = {s["name"]: s for s in json.loads((tmp_path / "out" / "stats.json").read_text())["steps"]}
    ex, mh = steps["exact"], steps["minhash"]
    # web_cc itself has 10 exact duplicates in 4 groups (and 27 pages with no word, never grouped)
    assert ex["docs_in"] == 699 and ex["dropped"] == {"exact:duplicate": 12}
    assert ex["extra"]["groups"] == 5 and ex["extra"]["unkeyed"] == 27
    assert mh["docs_in"] == 687 and mh["docs_out"] == 687 - mh["dropped"].get("minhash:duplicate", 0)
    assert mh["dropped"] == {"minhash:duplicate": 1}
    kept = kept_ids(tmp_path / "out")
    assert docs[5]["id"] in kept and "zz-upper" not in kept and "zz-digits" not in kept
    rej = {own(r["id"]): r["drop_reason"] for p in glob.glob(f"{tmp_path}/out/rejected/*.parquet")
           for r in pq.read_table(p).to_pylist()}
    assert rej["zz-upper"] == rej["zz-digits"] == "exact:duplicate"
    assert sum(r == "exact:duplicate" for r in rej.values()) == 12

    run(str(src), tmp_path / "longest", [dedup.Exact(keep="longest")], rejected=False)
    kept = kept_ids(tmp_path / "longest")
    assert "zz-digits" in kept and docs[5]["id"] not in kept


def test_dedup_report(shared, tmp_path, capsys):
    src = tmp_path / "licences.jsonl"
    src.write_text("".join(json.dumps({"id": p.stem, "text": p.read_text()}) + "\n"
                           for p in sorted((shared / LICENCES).iterdir())))
    run(str(src), tmp_path / "out", [dedup.MinHash()])
    assert cli_main(["dedup-report", str(tmp_path / "out"), "--width", "40"]) == 0
    text = capsys.readouterr().out
    assert "near-duplicates removed: 1" in text
    assert "kept rails_mit_license" in text and "dropped react_mit_license" in text
    assert cli_main(["dedup-report", str(tmp_path / "missing")]) == 2
