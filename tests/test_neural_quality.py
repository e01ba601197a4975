"""quality.NeuralClassifier and quality.MaxScore against the models' own outputs computed with transformers in the
test (tiny random BERT-layout models with a tokenizer trained on shared text, tests/_models.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _models import bpe, clean_texts, hf_encoder, web_texts

from curate import Pipeline, Step, quality, readers
from curate.quality.neural import int_scores, reduce_outputs

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def models(shared, tmp_path_factory):
    tok = bpe(clean_texts(shared)[:300], vocab=400)
    root = tmp_path_factory.mktemp("neural")
    return {"reg": hf_encoder(tok, root / "reg", labels=1, seed=1), "cls": hf_encoder(tok, root / "cls", labels=6, seed=2)}


@pytest.fixture(scope="module")
def texts(shared):
    return web_texts(shared, 12) + clean_texts(shared)[:12] + ["a"]


def _reference(path, texts: list[str]) -> np.ndarray:
    """Each text alone through transformers' own tokenizer call and model: the logits."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    out = []
    with torch.no_grad():
        for t in texts:
            enc = tok(t, truncation=True, max_length=model.config.max_position_embeddings, return_tensors="pt")
            out.append(model(**enc).logits[0].numpy())
    return np.stack(out)


@pytest.fixture(scope="module")
def logits(models, texts):
    return {k: _reference(path, texts) for k, path in models.items()}


def test_regression_scores_equal_the_models_logits_whatever_the_batching(models, texts, logits):
    ref = logits["reg"][:, 0]
    small = quality.NeuralClassifier(str(models["reg"]), token_budget=96, device="cpu").scores(texts)
    large = quality.NeuralClassifier(str(models["reg"]), device="cpu").scores(texts)
    np.testing.assert_allclose(small, ref, atol=2e-5)
    np.testing.assert_allclose(large, ref, atol=2e-5)
    assert len(set(np.round(ref, 4))) > 5  # the texts do get different scores


def test_classification_reductions(models, texts, logits):
    p = np.exp(logits["cls"] - logits["cls"].max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    step = quality.NeuralClassifier(str(models["cls"]), device="cpu")
    np.testing.assert_allclose(step.scores(texts), p @ np.arange(6), atol=1e-5)
    step = quality.NeuralClassifier(str(models["cls"]), device="cpu", reduce="argmax")
    assert step.scores(texts).tolist() == p.argmax(1).astype(float).tolist()
    step = quality.NeuralClassifier(str(models["cls"]), device="cpu", reduce="LABEL_5")
    np.testing.assert_allclose(step.scores(texts), p[:, 5], atol=1e-5)


def test_integer_scores_round_half_to_even_and_clamp_as_fineweb_edu():
    s = np.array([-0.7, 0.5, 1.5, 2.49, 2.5, 3.51, 7.2])
    assert int_scores(s, 0, 5).tolist() == [int(round(max(0, min(x, 5)))) for x in s]
    assert reduce_outputs(np.array([[0.0, 0.0]]), ["a", "b"], "expected").tolist() == [0.5]


def test_steps_in_a_pipeline_keep_by_threshold_and_max_score(models, texts, logits, tmp_path):
    docs = [{"id": f"t{i}", "text": t} for i, t in enumerate(texts)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    reg = logits["reg"][:, 0]
    p = np.exp(logits["cls"] - logits["cls"].max(1, keepdims=True))
    cls = (p / p.sum(1, keepdims=True)) @ np.arange(6)
    # a random head scores in a narrow band: stretched around its median so both sides of the cut are populated
    shift, spread = float(np.median(reg)), float(reg.max() - reg.min()) / 4

    def stretch(x):
        return int(np.clip(np.rint((x - shift) / spread + 3), 0, 5))

    bucket = np.maximum([stretch(x) for x in reg], np.clip(np.rint(cls), 0, 5))
    assert 0 < (bucket >= 3).sum() < len(docs)
    steps = [quality.NeuralClassifier(str(models["reg"]), column="a", device="cpu"),
             lambda d: d.extra.__setitem__("a_int", stretch(d.extra["a"])) or True,
             quality.NeuralClassifier(str(models["cls"]), column="b", device="cpu"),
             quality.MaxScore(["a_int", "b_int"], column="bucket", threshold=3)]
    pipe = Pipeline(name="n", reader=readers.Jsonl(source="web", unique_ids=False), steps=steps)
    pipe.run(inputs=str(tmp_path / "in.jsonl"), output=str(tmp_path / "out"), progress=False)
    rows = pq.read_table(tmp_path / "out/data").to_pylist()
    assert sorted(r["id"] for r in rows) == sorted(d["id"] for d, b in zip(docs, bucket, strict=True) if b >= 3)
    want = dict(zip((d["id"] for d in docs), bucket.tolist(), strict=True))
    assert all(r["bucket"] == want[r["id"]] for r in rows)
    stats = {s["name"]: s for s in json.loads((tmp_path / "out/stats.json").read_text())["steps"]}
    assert stats["a"]["extra"]["throughput"]["docs"] == stats["b"]["extra"]["throughput"]["docs"] == len(docs)
    assert stats["bucket"]["dropped"] == {"bucket:below_threshold": int((bucket < 3).sum())}


class Plant(Step):
    """Two planted score columns from the document id (`"<i>"`): a permutation each, so every score is distinct."""

    name = "plant"
    columns = {"s1": pa.float32(), "s2": pa.float32()}

    def __init__(self, s1: dict, s2: dict):
        self.s1, self.s2 = s1, s2

    def apply(self, doc):
        doc.extra["s1"], doc.extra["s2"] = self.s1[doc.id], self.s2[doc.id]
        return doc


def test_percentile_buckets_against_brute_force(tmp_path, shared):
    texts = clean_texts(shared)[:300]
    n = len(texts)
    rng = np.random.default_rng(3)
    s1, s2 = rng.permutation(n).astype(float) * 0.37 - 20, rng.permutation(n).astype(float) ** 1.5
    ids = [str(i) for i in range(n)]
    for k, part in enumerate((range(0, 170), range(170, n))):  # two input files: two shards to count over
        (tmp_path / f"in{k}.jsonl").write_text("".join(json.dumps({"id": ids[i], "text": texts[i]}) + "\n" for i in part))

    def pct(s):  # each score's share of the run strictly below it, in 20 bins
        return np.array([min(19, int(np.floor(20 * (s < x).sum() / n))) for x in s])

    want = np.maximum(pct(s1), pct(s2))
    steps = [Plant(dict(zip(ids, s1.tolist(), strict=True)), dict(zip(ids, s2.tolist(), strict=True))),
             quality.PercentileBuckets(["s1", "s2"], bins=20, threshold=15, keep_ints=True)]
    pipe = Pipeline(name="b", reader=readers.Jsonl(source="web", unique_ids=False), steps=steps)
    pipe.run(inputs=str(tmp_path / "in*.jsonl"), output=str(tmp_path / "out"), rejected=True, progress=False)
    rows = pq.read_table(tmp_path / "out/data").to_pylist()
    assert sorted(int(r["id"]) for r in rows) == [i for i in range(n) if want[i] >= 15]
    assert all(r["quality_bucket"] == want[int(r["id"])] and r["s1_pct"] == pct(s1)[int(r["id"])] for r in rows)
    assert (pct(s1) == np.repeat(np.arange(20), 15)[np.argsort(np.argsort(s1))]).all()  # 5% a bin, as intended


@pytest.mark.slow
def test_on_ray_as_locally(models, texts, tmp_path):
    """A classifier (loaded in each Ray worker) and the percentile buckets' phases as Ray tasks: a local run's rows."""
    ray = pytest.importorskip("ray")
    from curate.run.executors.ray import RayExecutor

    for k in range(2):
        (tmp_path / f"in{k}.jsonl").write_text("".join(json.dumps({"id": f"t{i}", "text": t}) + "\n"
                                                       for i, t in enumerate(texts) if i % 2 == k))
    p = Pipeline(name="n", reader=readers.Jsonl(), steps=[
        quality.NeuralClassifier(str(models["cls"]), column="b", device="cpu", threads=1),
        quality.PercentileBuckets(["b"], bins=4, threshold=2)])
    inputs = [str(tmp_path / f"in{k}.jsonl") for k in range(2)]
    p.run(inputs=inputs, output=str(tmp_path / "local"), progress=False)
    ray.init(num_cpus=2, include_dashboard=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).resolve().parent)}})
    try:
        p.run(inputs=inputs, output=str(tmp_path / "ray"), executor=RayExecutor(workers=2, progress=False),
              progress=False)
    finally:
        ray.shutdown()

    def read(out):
        return sorted((r["id"], r["quality_bucket"], round(r["b"], 5)) for r in pq.read_table(out / "data").to_pylist())

    assert read(tmp_path / "ray") == read(tmp_path / "local") and 0 < len(read(tmp_path / "local")) < len(texts)
