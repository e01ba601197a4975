"""curate.models: the inference layer against independent computations (the trainer's held-out bits per byte,
transformers' own loss), batching that changes no score, truncation counted, one model per process."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch
from _models import bpe, clean_texts, hf_causal, hf_encoder, train_gpt, web_texts

from curate.core.errors import UsageError
from curate.core.stats import StepStats
from curate.models import ModelSpec
from curate.models.checkpoint import load_checkpoint
from curate.models.inference import Throughput, clear_cache, get_model, plan_batches
from train.evaluate.heldout import HeldoutSet, bits_per_byte


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
    clear_cache()


@pytest.fixture(scope="module")
def texts(shared) -> list[str]:
    return clean_texts(shared)[:40] + [t[:3000] for t in web_texts(shared)]


@pytest.fixture(scope="module")
def tok(texts):
    return bpe(texts)


@pytest.fixture(scope="module")
def gpt_dir(texts, tok, tmp_path_factory):
    return train_gpt(texts, tok, tmp_path_factory.mktemp("gpt"), steps=40)


@pytest.fixture(scope="module")
def hf_dir(tok, tmp_path_factory):
    return hf_causal(tok, tmp_path_factory.mktemp("hf") / "m")


def test_gpt_bits_per_byte_is_the_trainers_heldout_measure(gpt_dir, texts, tmp_path):
    model = get_model(ModelSpec(str(gpt_dir)))
    sample = texts[:12]
    got = model.bits_per_byte(sample)
    path = tmp_path / "held.jsonl"
    run = load_checkpoint(gpt_dir)
    for text, bpb in zip(sample, got, strict=True):  # one document per held-out set: its own figure
        path.write_text(json.dumps({"text": text}) + "\n")
        assert bpb == pytest.approx(bits_per_byte(run, HeldoutSet("h", str(path)))["bits_per_byte"], rel=1e-5)
    assert model.context == 32 and any(len(model.tokens(t)[0]) > 3 * model.context for t in sample)  # windows


def test_hf_bits_per_byte_is_transformers_own_loss(hf_dir, texts):
    model = get_model(ModelSpec(str(hf_dir)))
    assert model.context == 64
    for text in texts[:6]:
        short = text[:100]  # inside one window: transformers' loss over the same ids
        ids = [model.start_id, *model.tokens(short)[0]]
        assert len(ids) <= model.context
        with torch.no_grad():
            loss = float(model.model(torch.tensor([ids]), labels=torch.tensor([ids])).loss)
        want = loss * (len(ids) - 1) / (math.log(2) * len(short.encode("utf-8")))
        assert model.bits_per_byte([short])[0] == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_a_long_document_is_scored_in_windows_that_cover_every_token_once(arch, tok, texts, tmp_path):
    model = get_model(ModelSpec(str(hf_causal(tok, tmp_path / arch, arch=arch))))
    text = texts[0] * 3
    ids = [model.start_id, *model.tokens(text)[0]]
    C, nll = model.context, 0.0
    for s in range(0, len(ids) - 1, C):
        w = ids[s : s + C + 1]
        with torch.no_grad():  # context tokens in, each predicting the next (the window's last is only a target)
            logits = model.model(torch.tensor([w[:-1]])).logits[0].double()
        nll -= float(torch.log_softmax(logits, -1).gather(1, torch.tensor(w[1:])[:, None]).sum())
    assert model.bits_per_byte([text])[0] == pytest.approx(nll / (math.log(2) * len(text.encode())), rel=1e-5)


def test_batching_by_token_budget_gives_the_scores_of_one_at_a_time(gpt_dir, hf_dir, texts):
    sample = texts[:30] + ["", "x", "é"]
    for spec in (ModelSpec(str(gpt_dir)), ModelSpec(str(hf_dir))):
        model = get_model(spec)
        alone = np.array([model.bits_per_byte([t])[0] for t in sample])
        for budget, window in ((256, 4), (4096, 1024), (50, 7)):
            batched = model.bits_per_byte(sample, token_budget=budget, window=window)
            np.testing.assert_allclose(batched, alone, rtol=2e-5, equal_nan=True)
        assert np.isnan(alone[30]) and np.isfinite(alone[31:]).all()  # an empty text has no bytes to score
        vec_alone = np.concatenate([model.embed([t]) for t in sample])
        np.testing.assert_allclose(model.embed(sample, token_budget=300, window=5), vec_alone, rtol=1e-4, atol=1e-5)


def test_plan_batches_sorts_inside_windows_and_keeps_the_budget():
    lengths = [5, 50, 3, 40, 40, 7, 100, 1]
    batches = plan_batches(lengths, token_budget=100, window=4)
    assert sorted(i for b in batches for i in b) == list(range(8))
    assert all(max(lengths[i] for i in b) * len(b) <= 100 or len(b) == 1 for b in batches)
    assert [set(b) <= set(range(4)) or set(b) <= set(range(4, 8)) for b in batches] == [True] * len(batches)
    assert batches[:2] == [[1, 3], [0, 2]]  # longest first while rows x longest fits: 50 x 2, then 5 x 2
    assert plan_batches(lengths, 100, 4) == batches  # deterministic


def test_truncation_is_counted_and_scores_the_head(gpt_dir, texts):
    model = get_model(ModelSpec(str(gpt_dir)))
    counter = Throughput()
    long, short = texts[0], "A short one."
    assert len(model.tokens(long)[0]) > 50 >= len(model.tokens(short)[0])
    got = model.bits_per_byte([long, short], max_tokens=50, counter=counter)
    assert counter["truncated"] == 1 and counter["docs"] == 2
    ids, offsets = model.tokens(long)
    head = long[: offsets[49][1]]
    assert model.tokens(head)[0] == ids[:50]
    assert got[0] == pytest.approx(model.bits_per_byte([head])[0], rel=1e-6)
    model.embed([long, short], max_tokens=10, counter=counter)
    assert counter["truncated"] == 2 and counter["docs"] == 4


def test_throughput_records_merge_across_tasks(gpt_dir, texts):
    model = get_model(ModelSpec(str(gpt_dir)))
    a, b = Throughput(), Throughput()
    model.bits_per_byte(texts[:5], counter=a)
    model.bits_per_byte(texts[5:8], counter=b)
    sa, sb = StepStats("p", extra={"throughput": a.record()}), StepStats("p", extra={"throughput": b.record()})
    sa.merge(sb)
    rec = sa.extra["throughput"]
    assert rec["docs"] == 8 and rec["tokens"] == a["tokens"] + b["tokens"]
    assert rec["docs_per_s"] == pytest.approx(8 / rec["seconds"], rel=1e-2)
    assert 0 <= rec["padding_share"] < 1
    assert StepStats.from_dict(sa.to_dict()).extra["throughput"] == rec


def test_one_model_per_spec_and_process(gpt_dir):
    spec = ModelSpec(str(gpt_dir))
    assert get_model(spec) is get_model(ModelSpec(str(gpt_dir))) is not get_model(ModelSpec(str(gpt_dir), threads=1))
    assert get_model(spec).dtype == torch.float32 and get_model(spec).device.type == "cpu"
    assert not get_model(spec).model.training


def test_hf_encoders_and_classifiers(tok, texts, tmp_path):
    enc = get_model(ModelSpec(str(hf_encoder(tok, tmp_path / "enc")), task="embed"))
    vecs = enc.embed(texts[:4] + [texts[0] * 20])
    assert vecs.shape == (5, 64) and vecs.dtype == np.float32
    counter = Throughput()
    cls = get_model(ModelSpec(str(hf_encoder(tok, tmp_path / "cls", labels=3)), task="classify"))
    logits = cls.classify([t[:60] for t in texts[:4]] + [texts[0] * 20], counter=counter)
    assert logits.shape == (5, 3) and counter["truncated"] == 1  # the context is 64 tokens
    with torch.no_grad():  # the first text alone, through transformers' own tokenizer call
        ids = cls.tokenizer(texts[0][:60], truncation=True, max_length=64, return_tensors="pt")
        np.testing.assert_allclose(logits[0], cls.model(**ids).logits[0].numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(UsageError, match="sequence-classification"):
        enc.classify(["x"])


def test_a_missing_model_is_one_line_and_no_download(tmp_path):
    with pytest.raises(UsageError, match="no config.json"):
        get_model(ModelSpec(str(tmp_path / "nothing")))
    with pytest.raises(UsageError, match="no checkpoint"):
        get_model(ModelSpec(str(tmp_path / "x.pt"), kind="gpt"))
    with pytest.raises(UsageError, match="task must be"):
        ModelSpec("m", task="generate")


def test_importing_curate_models_imports_no_torch():
    code = "import sys, curate, curate.models; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
