"""dedup.Semantic (SemDeDup): groups against brute-force all-pairs cosine, blockwise = whole, the same output at any
workers and shards, resume after a killed phase, and a pipeline with a tiny encoder built here."""

from __future__ import annotations

import glob
import gzip
import json
import random
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from curate import Pipeline, readers
from curate.cli.main import main as cli_main
from curate.dedup import semantic as semantic_mod
from curate.dedup.semantic import Semantic, groups_in
from curate.run.executors.base import TaskFailures
from curate.run.executors.local import LocalExecutor

EPS = 0.02
DIM = 24


def components(n: int, pairs) -> list[int]:
    """Union-find over `pairs`: each item's smallest member (the reference, independent of scipy)."""
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return [root(i) for i in range(n)]


def brute_groups(vecs: np.ndarray, eps: float) -> list[set[int]]:
    """Groups of 2+ by every pair with cosine >= 1 - eps (float64, the whole matrix)."""
    x = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    a, b = np.nonzero(np.triu(x @ x.T >= 1 - eps, 1))
    roots = components(len(x), zip(a.tolist(), b.tolist(), strict=True))
    groups: dict[int, set[int]] = {}
    for i, r in enumerate(roots):
        groups.setdefault(r, set()).add(i)
    return [g for g in groups.values() if len(g) > 1]


def rotate(v: np.ndarray, cos: float, rng: np.random.Generator, away: np.ndarray | None = None) -> np.ndarray:
    """A unit vector at exactly `cos` from unit `v` (in the plane of v and `away`, or a random direction)."""
    w = rng.normal(size=v.shape) if away is None else away
    w = w - (w @ v) * v
    w /= np.linalg.norm(w)
    return cos * v + np.sqrt(1 - cos * cos) * w


@pytest.fixture(scope="module")
def planted() -> tuple[list[dict], np.ndarray]:
    """5 topics x 80 documents (same-topic cosine about 0.8), plus planted groups: exact copies, near-copies at
    cosine 0.99-0.999, and chains a-b-c with a-b and b-c at 0.985 but a-c at 0.94 (one group only by transitivity).
    Texts have distinct lengths, so keep="longest" names one keeper per group."""
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(5, DIM)) * 2
    vecs = [c + rng.normal(size=DIM) for c in centres for _ in range(80)]
    vecs = [v / np.linalg.norm(v) for v in vecs]
    base = len(vecs)
    for i in range(0, base, 7):  # copies and near-copies
        vecs.append(vecs[i] if i % 2 else rotate(vecs[i], rng.uniform(0.99, 0.999), rng))
    for i in range(3, base, 23):  # chains
        away = rng.normal(size=DIM)
        b = rotate(vecs[i], 0.985, rng, away)
        vecs += [b, rotate(b, 0.985, rng, away - (away @ vecs[i]) * vecs[i])]
    x = np.array(vecs)
    order = rng.permutation(len(x))
    x = x[order]
    docs = [{"id": f"doc{k:04d}", "text": "w " * (k + 1), "emb": x[k].tolist()} for k in range(len(x))]
    return docs, x


def carry(doc):
    """The embeddings travel in the JSONL records' metadata; this step puts them in the column Semantic reads."""
    doc.extra["emb"] = doc.metadata.pop("emb")
    return doc


def write(docs: list[dict], root: Path, files: int) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(files):
        p = root / f"in{k}.jsonl"
        p.write_text("".join(json.dumps(d) + "\n" for d in docs[k::files]))
        paths.append(str(p))
    return paths


def run(inputs, out, steps, workers=1, reader=None):
    pipe = Pipeline(name="semantic", reader=reader or readers.Jsonl(), steps=steps)
    return pipe.run(inputs=inputs, output=str(out), executor=LocalExecutor(workers, progress=False), rejected=True,
                    progress=False)


def own(run_id: str) -> str:
    return run_id.rsplit("#", 1)[0]


def outcome(out) -> dict[str, tuple[str, int, bool]]:
    """own id -> (own id of its group, group size, kept), over kept and rejected shards."""
    got = {}
    for sub, kept in (("data", True), ("rejected", False)):
        for p in glob.glob(f"{out}/{sub}/*.parquet"):
            for r in pq.read_table(p, columns=["id", "semantic_cluster", "semantic_cluster_size"]).to_pylist():
                got[own(r["id"])] = (own(r["semantic_cluster"]), r["semantic_cluster_size"], kept)
    return got


def step_stats(out) -> dict:
    return json.loads((Path(out) / "stats.json").read_text())["steps"][-1]


def check_against_brute_force(got: dict, docs: list[dict], x: np.ndarray) -> None:
    groups = brute_groups(x, EPS)
    assert len(groups) > 40 and any(len(g) == 3 for g in groups)
    want_dropped = set()
    for g in groups:
        keeper = max(g, key=lambda i: len(docs[i]["text"]))  # keep="longest"
        want_dropped |= {docs[i]["id"] for i in g - {keeper}}
        for i in g:
            assert got[docs[i]["id"]][:2] == (docs[keeper]["id"], len(g))
    assert {i for i, (_, _, kept) in got.items() if not kept} == want_dropped
    in_groups = {docs[i]["id"] for g in groups for i in g}
    assert all(size == 1 for i, (_, size, _) in got.items() if i not in in_groups)


def test_groups_equal_brute_force_and_blocks_do_not_matter(planted, tmp_path):
    docs, x = planted
    files = write(docs, tmp_path / "in", 2)
    results = {}
    for name, block in (("whole", 1 << 24), ("blocks", 7)):  # 7 floats: one row against the rest at a time
        out = tmp_path / name
        run(files, out, [carry, Semantic(embeddings_column="emb", eps=EPS, keep="longest", clusters=5,
                                         block_floats=block, partitions=3)])
        results[name] = outcome(out)
        check_against_brute_force(results[name], docs, x)
        extra = step_stats(out)["extra"]
        assert extra["clusters"] == 5 and extra["pair_tasks"] == 3 and extra["largest_cluster"] < len(docs) / 2
    assert results["whole"] == results["blocks"]


def test_groups_in_against_union_find_at_any_block_size():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(60, 8))
    x[20:40] = x[:20] + 0.05 * rng.normal(size=(20, 8))  # near-copies, some chained through a third
    x[40:50] = x[20:30] + 0.05 * rng.normal(size=(10, 8))
    unit = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    want = components(60, [(a, b) for a in range(60) for b in range(a + 1, 60) if unit[a] @ unit[b] >= 0.99])
    for block in (1, 60, 200, 1 << 20):
        labels, pairs = groups_in(unit, 0.99, block)
        assert len(set(zip(labels.tolist(), want, strict=True))) == len(set(want))  # the same partition
        assert pairs == sum(unit[a] @ unit[b] >= 0.99 for a in range(60) for b in range(a + 1, 60))
    assert len(set(want)) < 50


def test_same_output_at_any_workers_and_shards_and_keep_rules(planted, tmp_path):
    docs, _ = planted
    ref = None
    for files, workers in ((1, 1), (3, 2), (4, 1)):
        out = tmp_path / f"f{files}w{workers}"
        run(write(docs, tmp_path / f"in{files}", files), out,
            [carry, Semantic(embeddings_column="emb", eps=EPS, clusters=5, sample=150)], workers=workers)
        got = outcome(out)
        assert step_stats(out)["extra"]["sample"] == 150  # k-means on a sample: the same one at any shards
        ref = ref or got
        assert got == ref
    # farthest (the default) and centroid keep one per group, the same groups, mostly different keepers
    out = tmp_path / "centroid"
    run(write(docs, tmp_path / "in1", 1), out, [carry, Semantic(embeddings_column="emb", eps=EPS, clusters=5,
                                                                 sample=150, keep="centroid")])
    near = outcome(out)
    members = lambda got: sorted(sorted(i for i, g in got.items() if g[0] == c) for c in  # noqa: E731
                                 {g[0] for g in got.values() if g[1] > 1})
    assert members(near) == members(ref)
    assert sum(near[i][2] != ref[i][2] for i in ref) > 10


def test_a_run_killed_during_a_phase_resumes(planted, tmp_path, monkeypatch):
    docs, _ = planted
    files = write(docs, tmp_path / "in", 2)
    steps = [carry, Semantic(embeddings_column="emb", eps=EPS, clusters=5, partitions=2)]
    run(files, tmp_path / "clean", steps)
    for fn in ("embed_shard", "pairs_part"):
        real, calls = getattr(semantic_mod, fn), []

        def dies_first(arg, real=real, calls=calls):
            calls.append(arg)
            if len(calls) == 1:
                raise RuntimeError("killed")
            return real(arg)

        monkeypatch.setattr(semantic_mod, fn, dies_first)
        out = tmp_path / f"resumed-{fn}"
        with pytest.raises(TaskFailures, match="killed"):
            run(files, out, steps)
        before = len(calls)
        run(files, out, steps)
        assert len(calls) - before == 1  # only the task that died ran again
        assert outcome(out) == outcome(tmp_path / "clean")
        monkeypatch.setattr(semantic_mod, fn, real)


@pytest.fixture(scope="module")
def encoder(tmp_path_factory, shared) -> Path:
    from _models import bpe, clean_texts, hf_encoder

    return hf_encoder(bpe(clean_texts(shared)[:300], vocab=400), tmp_path_factory.mktemp("enc") / "bert", seed=3)


WEB = "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"


def test_pipeline_with_a_tiny_encoder_catches_copies_not_unrelated_pages(encoder, shared, tmp_path, capsys):
    """Real pages (distinct first 100 characters), plus identical copies and copies edited after the encoder's
    context (64 tokens: what it reads of a document). A random tiny encoder does not make paraphrases similar, so
    only what it cannot tell apart is asserted: those copies grouped with their page, no two unrelated pages."""
    with gzip.open(shared / WEB, "rt", encoding="utf-8") as f:
        pages = [json.loads(line) for line in f]
    seen, base = set(), []
    for p in pages:
        if len(p["text"]) > 1500 and p["text"][:100] not in seen:  # one page of a template (a site's search
            seen.add(p["text"][:100])                                # results) is a near-copy of the others
            base.append({"id": p["id"], "text": p["text"]})
    base = base[:120]
    rng = random.Random(0)
    copies = []
    for k, d in enumerate(base[:24]):
        text = d["text"]
        if k % 2:  # a light edit far into the page, and a line added at its end
            cut = len(text) // 2 + rng.randrange(len(text) // 4)
            text = text[:cut] + " (updated) " + text[cut:] + "\nShare this page."
        copies.append({"id": f"{d['id']}~copy", "text": text})
    files = write(base + copies, tmp_path / "in", 2)
    out = tmp_path / "out"
    run(files, out, [Semantic(encoder, eps=0.001, clusters=3, device="cpu")])
    got = outcome(out)
    groups = {}
    for i, (c, size, _) in got.items():
        if size > 1:
            groups.setdefault(c, set()).add(i)
    assert sorted(groups.values(), key=sorted) == sorted(({d["id"], f"{d['id']}~copy"} for d in base[:24]), key=sorted)
    st = step_stats(out)
    assert st["dropped"] == {"semantic:duplicate": 24}
    assert st["extra"]["throughput"]["docs"] == 144 and st["extra"]["dim"] == 64
    assert cli_main(["dedup-report", str(out), "--width", "30"]) == 0
    text = capsys.readouterr().out
    assert "semantic duplicates removed: 24" in text and "~copy" in text


def test_config_errors_name_the_parameter():
    from curate.core.errors import UsageError

    with pytest.raises(UsageError, match="exactly one of model"):
        Semantic()
    with pytest.raises(UsageError, match="exactly one of model"):
        Semantic("enc", embeddings_column="emb")
    with pytest.raises(UsageError, match="'farthest', 'centroid'"):
        Semantic(embeddings_column="emb", keep="nearest")
    with pytest.raises(UsageError, match="smallest_id"):
        Semantic(embeddings_column="emb", keep="first")
    with pytest.raises(UsageError, match="eps"):
        Semantic(embeddings_column="emb", eps=-0.1)
