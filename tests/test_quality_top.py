"""quality.TopFraction: keep exactly round(fraction x N) of the corpus, the best-scoring, with a cut found from
bounded histograms (no score list in the driver); checked against sorting every score."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from test_quality import WEB_CC, _prepare

from curate import Pipeline, quality, readers
from curate.core.errors import UsageError
from curate.core.step import GlobalContext
from curate.quality import step as step_mod
from curate.run.executors.local import LocalExecutor


@pytest.fixture(scope="module")
def model(shared, tmp_path_factory) -> tuple[str, Path]:
    tmp = tmp_path_factory.mktemp("quality_top")
    _prepare(shared, tmp)  # writes sms.txt (one message a line)
    # a small model (a novel vs SMS) is enough: what is tested is the cut, against the model's own scores
    result = quality.train([str(shared / "text/clean_en/botchan_gutenberg8868.txt")], [str(tmp / "sms.txt")],
                           str(tmp / "quality.bin"))
    return result.model_path, tmp


def _rows(directory: Path) -> list[dict]:
    return [r for p in sorted(directory.glob("*.parquet")) for r in pq.read_table(p).to_pylist()]


def test_constructors_say_which_step_to_use():
    with pytest.raises(UsageError, match=r"^Classifier: top_fraction= .*quality.TopFraction\(model_path, fraction=0.1\)"):
        quality.Classifier("m.bin", top_fraction=0.1)
    with pytest.raises(UsageError, match="needs threshold=.*TopFraction"):
        quality.Classifier("m.bin")
    for bad in (0, 1.5, "0.1"):
        with pytest.raises(UsageError, match="^TopFraction: fraction"):
            quality.TopFraction("m.bin", fraction=bad)
    with pytest.raises(UsageError, match="^TopFraction: model_path"):
        quality.TopFraction(None, fraction=0.5)
    step = quality.TopFraction("m.bin", fraction=1)
    assert not isinstance(step, quality.Classifier) and not isinstance(quality.Classifier("m.bin", threshold=0.5),
                                                                        quality.TopFraction)


def test_keeps_the_exact_count_of_the_best_scored(model, shared, tmp_path):
    path, _ = model
    inputs = [str(shared / WEB_CC), str(shared / "text/pt/bosque_docs.jsonl")]  # 697 + 486 documents, two shards
    pipe = Pipeline(name="q", reader=readers.Jsonl(source="web"),
                    steps=[quality.TopFraction(path, fraction=0.1), lambda d: d.quality_score is not None])
    pipe.run(inputs=inputs, output=str(tmp_path / "out"), rejected=True, workers=2, progress=False)
    kept, rejected = _rows(tmp_path / "out/data"), _rows(tmp_path / "out/rejected")
    assert len(kept) == 118 and len(rejected) == 1183 - 118  # round(0.1 x 1183)
    # the reference: every text scored by the same model, sorted
    texts = {r["id"]: r["text"] for r in kept + rejected}
    ids = sorted(texts)
    scores = quality.QualityModel(path).score([texts[i] for i in ids]).astype(np.float32)
    kth = float(np.sort(scores)[::-1][117])
    assert {i for i, s in zip(ids, scores, strict=True) if s > kth} <= {r["id"] for r in kept}
    assert all(r["quality_score"] >= kth for r in kept) and all(r["quality_score"] <= kth for r in rejected)
    assert {r["drop_reason"] for r in rejected} == {"quality:below_threshold"}
    stats = {s["name"]: s for s in json.loads((tmp_path / "out/stats.json").read_text())["steps"]}
    cut = stats["quality"]["extra"]["cut"]
    assert (cut["scored"], cut["kept"], stats["quality"]["docs_out"]) == (1183, 118, 118)
    assert cut["score"] == pytest.approx(kth, abs=1e-6)
    ref = np.quantile(scores, [0.1, 0.25, 0.5, 0.75, 0.9], method="inverted_cdf")  # nearest rank
    got = np.array(list(cut["score_quantiles"].values()))
    assert np.all(got <= ref + 5e-5) and np.all(ref - got <= ref * 2.0**-11 + 5e-5)  # a bin's lower edge, rounded


def test_exact_under_tied_scores(model, tmp_path):
    """20 copies of one SMS score identically; the cut falls inside them and still keeps exactly k."""
    path, tmp = model
    sms = (tmp / "sms.txt").read_text(encoding="utf-8").splitlines()
    lines = [{"id": f"same{i}", "text": sms[0]} for i in range(20)] + [{"id": f"d{i}", "text": t} for i, t in enumerate(sms[1:11])]
    src = tmp_path / "ties.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in lines))
    scores = quality.QualityModel(path).score([x["text"] for x in lines])
    k = 15
    rank_of_tie = int((scores > scores[0]).sum())
    assert rank_of_tie < k < rank_of_tie + 20  # the tie straddles the cut: the case under test
    pipe = Pipeline(name="q", reader=readers.Jsonl(), steps=[quality.TopFraction(path, fraction=0.5)])
    pipe.run(inputs=str(src), output=str(tmp_path / "out"), progress=False)
    kept = _rows(tmp_path / "out/data")
    assert len(kept) == k
    own = sorted(r["id"].rsplit("#", 1)[0] for r in kept if r["id"].startswith("same"))  # run ids: "<own id>#<digest>"
    assert own == [f"same{i}" for i in range(k - rank_of_tie)]
    shutil.rmtree(tmp_path / "out")


def test_order_key_sorts_like_the_floats():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 1, 5000), [0.0, -0.0, 1.0, -1.0, 1e-30, -1e-30, 3e38, -3e38]]).astype(np.float32)
    keys = step_mod._key(x)
    assert np.array_equal(np.sort(x), x[np.argsort(keys)])
    assert all(step_mod._score(int(k)) == v for k, v in zip(keys.tolist(), x.tolist(), strict=True))


@pytest.mark.parametrize("k", [1, 777, 2500, 4000, 5999, 6000])
def test_two_level_cut_equals_sorting(tmp_path, k):
    """Three shards of scores crowded into few histogram bins (many distinct values per bin) and heavy ties."""
    rng = np.random.default_rng(k)
    shards = [
        np.float32(0.5) + rng.integers(0, 3000, 2500).astype(np.float32) * np.float32(2 ** -24),  # one or two bins
        np.repeat(np.float32(0.5) + np.float32(1000 * 2 ** -24), 1500),  # 1500 ties inside them
        rng.random(2000).astype(np.float32),
    ]
    jobs = []
    for i, s in enumerate(shards):
        job = step_mod.ScoreJob("m.bin", f"shard{i}", str(tmp_path / f"shard{i}"))
        np.save(job.scores_path, s)
        step_mod._save_hist(job.hist_path, step_mod._key(s) >> np.uint32(step_mod.LOW_BITS))
        jobs.append(job)
    counts = np.zeros(1 << step_mod.HIGH_BITS, dtype=np.int64)
    for j in jobs:
        bins, c = step_mod._load_hist(j.hist_path)
        np.add.at(counts, bins, c)
    ctx = GlobalContext(inputs=[], output_dir="", work_dir=str(tmp_path), executor=LocalExecutor(1, progress=False),
                        schema=None, writer=None)
    cut, quotas, above, tied = quality.TopFraction("m.bin", fraction=0.5)._find_cut(ctx, jobs, counts, k)
    every = np.concatenate(shards)
    kth = np.sort(every)[::-1][k - 1]
    assert cut == float(kth)
    assert above == int((every > kth).sum()) and tied == int((every == kth).sum())
    want, left = [], k - above  # ties go to the shards in order
    for s in shards:
        want.append(min(left, int((s == kth).sum())))
        left -= want[-1]
    assert quotas == want
