"""quality.Perplexity and quality.PerplexityBuckets in pipelines: the scores are the inference layer's (which
tests/test_models.py checks against the trainer's held-out measure and transformers' loss), the buckets are numpy's
percentiles by brute force, and tasks are placed on GPUs by every executor (GPUs faked with PENEIRA_GPUS: the
placement decisions, not CUDA, are what a CPU machine can check)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from _models import bpe, clean_texts, hf_causal, train_gpt, web_texts

from curate import Pipeline, quality, readers, writers
from curate.core.errors import UsageError
from curate.core.resources import GPUS_ENV, stage_resources, visible_gpus
from curate.models import ModelSpec
from curate.models.inference import get_model
from curate.run.executors.local import LocalExecutor, gpu_groups
from curate.run.executors.slurm import SlurmExecutor


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def texts(shared) -> list[str]:
    web = [t[:4000] for t in web_texts(shared)]
    return clean_texts(shared)[:60] + web + ["", "spam spam spam buy now " * 20, "1 2 3 4 5 6 7 8 9 0 " * 30]


@pytest.fixture(scope="module")
def gpt_dir(texts, tmp_path_factory):
    tok = bpe(texts[:60])
    return train_gpt(texts[:60], tok, tmp_path_factory.mktemp("ref"), steps=40)


@pytest.fixture(scope="module")
def inputs(texts, tmp_path_factory) -> Path:
    """Three JSONL files of the texts (a few shards for the global step)."""
    d = tmp_path_factory.mktemp("in")
    for k in range(3):
        rows = [{"id": f"d{i}", "text": t} for i, t in enumerate(texts) if i % 3 == k]
        (d / f"part{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


def rows(out: Path, rejected: bool = False) -> list[dict]:
    files = sorted((out / ("rejected" if rejected else "data")).glob("*.parquet"))
    return [r for f in files for r in pq.read_table(f).to_pylist()]


def set_lang(doc):
    """Three groups for the buckets: en, pt and no language (und), by a hash of the id."""
    doc.lang = [None, "en", "pt"][int(hashlib.md5(doc.id.encode()).hexdigest(), 16) % 3]
    return doc


def test_perplexity_scores_every_document_and_keeps_by_threshold(gpt_dir, inputs, texts, tmp_path):
    model = get_model(ModelSpec(str(gpt_dir)))
    by_text = dict(zip(texts, model.bits_per_byte(texts), strict=True))
    cut = float(np.nanmedian(list(by_text.values())))
    p = Pipeline(name="ppl", reader=readers.Jsonl(), steps=[quality.Perplexity(gpt_dir, threshold=cut, threads=1)],
                 writer=writers.Parquet())
    p.run(inputs=str(inputs), output=str(tmp_path / "out"), workers=2, rejected=True, progress=False)
    kept, dropped = rows(tmp_path / "out"), rows(tmp_path / "out", rejected=True)
    assert len(kept) + len(dropped) == len(texts)
    for r in kept + dropped:
        want = by_text[r["text"]]
        if np.isnan(want):
            assert r["perplexity_bpb"] is None and r["drop_reason"] == "perplexity:empty"
        else:
            assert r["perplexity_bpb"] == pytest.approx(want, rel=1e-5)
            assert (r in kept) == (want <= cut)
            if r in dropped:  # the evidence of the drop: this document's score against the cut (issue 46)
                assert r["drop_measured"] == pytest.approx(want, rel=1e-5) and r["drop_limit"] == cut
    stats = {s["name"]: s for s in json.loads((tmp_path / "out" / "stats.json").read_text())["steps"]}["perplexity"]
    t = stats["extra"]["throughput"]
    assert t["docs"] == len(texts) and t["tokens"] > 0 and t["docs_per_s"] > 0 and 0 <= t["padding_share"] < 1
    assert stats["extra"]["cut"] == {"threshold": cut}


def test_perplexity_of_a_hugging_face_model_in_a_pipeline(texts, inputs, tmp_path):
    tok = bpe(texts[:60], vocab=400)
    hf = hf_causal(tok, tmp_path / "hf", arch="llama")
    want = dict(zip(texts, get_model(ModelSpec(str(hf))).bits_per_byte(texts, max_tokens=100), strict=True))
    p = Pipeline(name="ppl", reader=readers.Jsonl(), steps=[quality.Perplexity(hf, max_tokens=100)])
    p.run(inputs=str(inputs), output=str(tmp_path / "out"), progress=False)
    got = rows(tmp_path / "out")
    assert len(got) == len(texts)  # no threshold: every document kept, scored
    for r in got:
        assert r["perplexity_bpb"] == pytest.approx(want[r["text"]], rel=1e-5, nan_ok=True) or not r["text"]
    t = json.loads((tmp_path / "out" / "stats.json").read_text())["steps"][1]["extra"]["throughput"]
    assert t["truncated"] == sum(len(get_model(ModelSpec(str(hf))).tokens(x)[0]) > 100 for x in texts) > 0


def test_buckets_are_numpy_percentiles_per_language(gpt_dir, inputs, texts, tmp_path):
    steps = [set_lang, quality.PerplexityBuckets(gpt_dir, percentiles=(30, 60), keep=("head", "middle"), threads=1)]
    p = Pipeline(name="ccnet", reader=readers.Jsonl(), steps=steps, writer=writers.Parquet())
    out = tmp_path / "out"
    p.run(inputs=str(inputs), output=str(out), workers=2, rejected=True, progress=False)
    everything = rows(out) + rows(out, rejected=True)
    assert len(everything) == len(texts)
    model = get_model(ModelSpec(str(gpt_dir)))
    by_text = dict(zip(texts, model.bits_per_byte(texts), strict=True))
    groups: dict[str, list[float]] = {}
    for r in everything:  # brute force: every score of the group in memory, numpy's percentiles
        if not np.isnan(by_text[r["text"]]):
            groups.setdefault(r["lang"] or "und", []).append(by_text[r["text"]])
    assert set(groups) == {"en", "pt", "und"}
    for r in everything:
        s = by_text[r["text"]]
        p30, p60 = np.percentile(groups[r["lang"] or "und"], [30, 60])
        want = "tail" if np.isnan(s) else "head" if s <= p30 else "middle" if s <= p60 else "tail"
        assert r["perplexity_bucket"] == want
        assert (r.get("drop_reason") is None) == (want in ("head", "middle"))
        if r.get("drop_reason"):
            assert r["drop_reason"] == f"perplexity:bucket_{want}"
    stats = json.loads((out / "stats.json").read_text())["steps"][-1]
    assert stats["extra"]["buckets"]["en"]["percentiles"]["head"] == pytest.approx(np.percentile(groups["en"], 30),
                                                                                   abs=1e-5)
    assert sum(sum(b["docs"].values()) for b in stats["extra"]["buckets"].values()) == len(texts)
    assert stats["extra"]["throughput"]["docs"] == len(texts)
    # resumable: a rerun finds the run finished; scores are files of the work folder, read per shard
    assert p.run(inputs=str(inputs), output=str(out), workers=2, rejected=True, progress=False)
    assert sorted(r["id"] for r in rows(out)) == sorted(r["id"] for r in everything if not r.get("drop_reason"))


def test_parameters_are_checked(gpt_dir):
    with pytest.raises(UsageError, match="percentiles"):
        quality.PerplexityBuckets(gpt_dir, percentiles=(60, 30))
    with pytest.raises(UsageError, match="keep"):
        quality.PerplexityBuckets(gpt_dir, keep=("best",))
    with pytest.raises(UsageError, match="threshold"):
        quality.Perplexity(gpt_dir, threshold=-1.0)


# ---------------------------------------------------------------- placement: which tasks get which GPUs


def cuda_env(_item) -> tuple[str | None, int]:
    return os.environ.get("CUDA_VISIBLE_DEVICES"), os.getpid()


def test_visible_gpus_and_groups(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv(GPUS_ENV, "0")
    assert visible_gpus() == [] and gpu_groups({"gpus": 1}) == []
    monkeypatch.setenv(GPUS_ENV, "4")
    assert visible_gpus() == ["0", "1", "2", "3"]
    assert gpu_groups({"gpus": 1}) == ["0", "1", "2", "3"] and gpu_groups({"gpus": 2}) == ["0,1", "2,3"]
    assert gpu_groups({}) == gpu_groups(None) == []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")
    monkeypatch.setenv(GPUS_ENV, "2")
    assert visible_gpus() == ["5", "7"]
    monkeypatch.setenv(GPUS_ENV, "3,6")
    assert visible_gpus() == ["3", "6"]


def test_a_model_step_asks_for_a_gpu_only_where_it_runs_on_one(gpt_dir, monkeypatch):
    monkeypatch.setenv(GPUS_ENV, "0")
    assert quality.Perplexity(gpt_dir).resources() == {}  # auto, no GPU visible: CPU
    assert quality.Perplexity(gpt_dir, device="cpu").resources() == {}
    assert quality.Perplexity(gpt_dir, device="cuda").resources() == {"gpus": 1}
    monkeypatch.setenv(GPUS_ENV, "2")
    assert quality.Perplexity(gpt_dir).resources() == {"gpus": 1}
    assert quality.Perplexity(gpt_dir, device="cpu").resources() == {}
    from curate.filters import C4

    assert C4().resources() == {}  # nothing about models in a step that has none
    assert stage_resources([C4(), quality.Perplexity(gpt_dir)]) == {"gpus": 1}


def test_the_local_executor_runs_one_worker_per_visible_gpu(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv(GPUS_ENV, "2")
    with LocalExecutor(workers=1, progress=False) as ex:  # workers sizes CPU maps; a GPU map gets a worker per GPU
        got = ex.map(cuda_env, list(range(12)), resources={"gpus": 1})
        assert {g for g, _ in got} == {"0", "1"}
        assert len({pid for _, pid in got}) == 2 and os.getpid() not in {pid for _, pid in got}
        pairs = {pid: g for g, pid in got}
        assert len(set(pairs.values())) == 2  # each worker keeps its own device
        cpu = ex.map(cuda_env, list(range(3)))  # the CPU map: in this process, environment untouched
        assert {g for g, _ in cpu} == {None} and {pid for _, pid in cpu} == {os.getpid()}
    monkeypatch.setenv(GPUS_ENV, "1")
    with LocalExecutor(workers=1, progress=False) as ex:  # one GPU, one worker: this process
        assert {pid for _, pid in ex.map(cuda_env, [0, 1], resources={"gpus": 1})} == {os.getpid()}


def test_a_pipeline_on_faked_gpus_places_its_model_stage_on_the_gpu_workers(gpt_dir, inputs, texts, tmp_path,
                                                                           monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv(GPUS_ENV, "2")  # the workers see CUDA_VISIBLE_DEVICES 0 and 1; torch finds no CUDA: CPU
    p = Pipeline(name="ppl", reader=readers.Jsonl(), steps=[quality.Perplexity(gpt_dir, threads=1)])
    p.run(inputs=str(inputs), output=str(tmp_path / "out"), workers=1, progress=False)
    want = dict(zip(texts, get_model(ModelSpec(str(gpt_dir))).bits_per_byte(texts), strict=True))
    got = rows(tmp_path / "out")
    assert len(got) == len(texts)
    assert all(r["perplexity_bpb"] == pytest.approx(want[r["text"]], rel=1e-5) for r in got if r["text"])


def test_slurm_asks_for_gres(tmp_path):
    ex = SlurmExecutor(str(tmp_path), partition="gpu", progress=False)
    assert ex.placement({"gpus": 1}) == ["--gres=gpu:1"] and ex.placement({"gpus": 2}) == ["--gres=gpu:2"]
    assert ex.placement(None) == ex.placement({}) == []
    cmd = ex.sbatch_command("task.sh", "0-3", 0, "log", ex.placement({"gpus": 1}))
    assert "--gres=gpu:1" in cmd and "--partition=gpu" in cmd and cmd[-2:] == ["task.sh", "0"]
    assert not any(a.startswith("--gres") for a in ex.sbatch_command("task.sh", "0-3", 0, "log"))


def test_ray_gives_tasks_their_gpus(gpt_dir, inputs, texts, tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    from curate.run.executors.ray import RayExecutor

    ex = RayExecutor(workers=2, progress=False)
    assert ex.task_options({"gpus": 1})["num_gpus"] == 1 and "num_gpus" not in ex.task_options(None)
    tests_dir = str(Path(__file__).resolve().parent)
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False,  # one GPU as Ray's logical resource
             runtime_env={"env_vars": {"PYTHONPATH": tests_dir}})
    try:
        got = ex.map(cuda_env, [0, 1, 2], resources={"gpus": 1})
        assert {g for g, _ in got} == {"0"}  # Ray reserved the GPU and named it to each task
        monkeypatch.setenv(GPUS_ENV, "1")  # the driver sees a GPU: device auto asks for it
        p = Pipeline(name="ppl", reader=readers.Jsonl(), steps=[quality.Perplexity(gpt_dir, threads=1)])
        p.run(inputs=str(inputs), output=str(tmp_path / "out"), executor=ex, progress=False)
    finally:
        ray.shutdown()
    want = dict(zip(texts, get_model(ModelSpec(str(gpt_dir))).bits_per_byte(texts), strict=True))
    got_rows = rows(tmp_path / "out")
    assert len(got_rows) == len(texts)
    assert all(r["perplexity_bpb"] == pytest.approx(want[r["text"]], rel=1e-5) for r in got_rows if r["text"])


def test_the_ccnet_recipe(gpt_dir, monkeypatch):
    import runpy

    from curate import dedup, extract, filters

    monkeypatch.setenv("PENEIRA_REFERENCE", str(gpt_dir))
    p = runpy.run_path(str(Path(__file__).resolve().parents[1] / "pipelines" / "ccnet.py"))["pipeline"]
    assert [type(s) for s in p.steps] == [extract.Trafilatura, filters.Language, dedup.Exact, quality.PerplexityBuckets]
    buckets = p.steps[-1]
    assert (buckets.model, buckets.percentiles, buckets.keep) == (str(gpt_dir), (33.0, 66.0), ("head", "middle"))
