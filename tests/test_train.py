"""Trainer behaviour on real token shards with a tiny model: learning, exact resume, divergence, tools, config."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
import random
import shutil
import time

import numpy as np
import pytest
import torch
from _traindata import SMALL, VOCAB, token_shards

from curate.models import checkpoint as reader
from curate.models.checkpoint import CheckpointError
from curate.models.device import resolve_device
from curate.models.gpt import GPT
from train import checkpoint
from train.__main__ import main
from train.checkpoint import ResumeError
from train.config import Config, load_config, parse_overrides
from train.loop import model_config, train
from train.optim import Muon, build_optimizer, lr_factor
from train.plan import plan


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Two cores shared by many jobs: one intra-op thread avoids oversubscription stalls (and is deterministic)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def tokens(shared, tmp_path_factory):
    return token_shards(shared, tmp_path_factory)


def cfg_for(tokens, out, **kw) -> Config:
    values = {**SMALL, "data": str(tokens), "out": str(out), "progress": False, "plots": False, "log_every": 1, **kw}
    return load_config("tiny", values)


@pytest.fixture(scope="module")
def trained(one_thread, tokens, tmp_path_factory):
    """120 steps with each optimizer; the runs are shared by the learning, sample and surprise tests."""
    runs = {}
    for opt in ("adamw", "muon"):
        out = tmp_path_factory.mktemp(f"run_{opt}")
        cfg = cfg_for(tokens, out, optimizer=opt, steps=120, warmup_steps=10, lr=1e-2, muon_lr=0.05,
                      eval_every=60, eval_batches=8, ckpt_every=0, plots=opt == "adamw")
        with torch.random.fork_rng():
            runs[opt] = (out, train(cfg))
        print(opt, "last-10 mean", sum(runs[opt][1].losses[-10:]) / 10, "val", runs[opt][1].val_loss)
    return runs


@pytest.mark.parametrize("opt", ["adamw", "muon"])
def test_loss_falls_well_below_uniform(trained, tokens, opt):
    out, result = trained[opt]
    uniform = math.log(VOCAB)  # the loss of a model that knows nothing
    assert result.step == 120 and result.diverged is None
    assert result.losses[0] == pytest.approx(uniform, abs=0.1)  # small init: starts near uniform
    assert sum(result.losses[-10:]) / 10 < uniform - 1.3
    assert result.val_loss < unigram_val_loss(tokens) - 0.25  # it uses context, which no unigram model can
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(1, 121))
    assert {"step", "loss", "lr", "grad_norm", "tokens_per_s", "mfu"} <= set(records[0])
    assert [r["step"] for r in records if "val_loss" in r] == [60, 120]
    state = reader.load(out / "ckpt.pt")
    assert state["step"] == 120 and not any("_orig_mod" in k or k.startswith("module.") for k in state["model"])
    if opt == "adamw":
        assert (out / "loss.png").stat().st_size > 0 and (out / "lr.png").stat().st_size > 0


def unigram_val_loss(data) -> float:
    """Cross-entropy on the validation tokens of the best context-free model: train-split token frequencies (add-one
    smoothed). A reference computed from the data alone, independent of the trainer."""
    from train.data import TokenDataset

    train_ds, val_ds = TokenDataset(data, "train"), TokenDataset(data, "val")
    counts = np.bincount(train_ds.read(0, train_ds.num_tokens).astype(np.int64), minlength=train_ds.vocab_size) + 1
    val = val_ds.read(0, val_ds.num_tokens).astype(np.int64)
    return float(-np.log(counts[val] / counts.sum()).mean())


def test_muon_learns_faster_than_adamw_here(trained):
    """Same tokens, same steps: orthogonalised updates should reach a lower validation loss (as reported)."""
    assert trained["muon"][1].val_loss < trained["adamw"][1].val_loss


def test_resume_is_bit_exact(tokens, tmp_path):
    """20 steps in one go == 10 steps, stop, resume, 10 more: the same loss sequence to the last bit."""
    kw = dict(optimizer="muon", steps=20, warmup_steps=4, micro_batch=4, seq_len=32, batch_tokens=256,
              eval_every=5, eval_batches=1, ckpt_every=0)
    whole = train(cfg_for(tokens, tmp_path / "whole", **kw))
    first = train(cfg_for(tokens, tmp_path / "split", stop_at=10, **kw))
    torch.manual_seed(1234)  # a resumed process starts with whatever RNG state; the checkpoint must restore it
    random.random()
    second = train(cfg_for(tokens, tmp_path / "split", **kw), resume=True)
    assert len(first.losses) == len(second.losses) == 10
    assert first.losses + second.losses == whole.losses
    assert second.val_loss == whole.val_loss
    a, b = reader.load(tmp_path / "whole"), reader.load(tmp_path / "split")
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    steps = [json.loads(line)["step"] for line in (tmp_path / "split" / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(1, 21))


def test_nan_loss_stops_and_keeps_last_good_checkpoint(tokens, tmp_path, monkeypatch):
    calls = {"n": 0}
    forward = GPT.forward

    def poisoned(self, idx, targets=None):
        out = forward(self, idx, targets)
        calls["n"] += 1
        return out * float("nan") if targets is not None and calls["n"] == 5 else out

    monkeypatch.setattr(GPT, "forward", poisoned)
    cfg = cfg_for(tokens, tmp_path, steps=10, warmup_steps=1, micro_batch=4, seq_len=32, batch_tokens=128,
                  eval_every=0, ckpt_every=2)
    result = train(cfg)
    assert result.step == 4 and result.diverged and "step 5" in result.diverged and "step 4" in result.diverged
    state = reader.load(tmp_path / "ckpt.pt")
    assert state["step"] == 4
    assert all(torch.isfinite(v).all() for v in state["model"].values())
    assert checkpoint.latest(tmp_path).name == "step-00000004"
    assert f"the last good checkpoint is {checkpoint.latest(tmp_path)} (step 4)" in result.diverged

    # a new run into the same directory is refused (it would replace that run's checkpoint and truncate its metrics)...
    calls["n"] = 0
    with pytest.raises(ResumeError, match="holds a run .*--resume.*--overwrite"):
        train(dataclasses.replace(cfg, ckpt_every=0))
    assert reader.load(tmp_path / "ckpt.pt")["step"] == 4  # the earlier files are left alone
    # ...unless --overwrite says so: the old run is gone, and its checkpoint is not taken for one of this run
    again = train(dataclasses.replace(cfg, ckpt_every=0), overwrite=True)
    assert again.step == 4 and "no checkpoint was written yet" in again.diverged
    assert checkpoint.latest(tmp_path) is None and not (tmp_path / "ckpt.pt").exists()


def test_out_over_a_run_needs_resume_or_overwrite(short_run, tokens, capsys):
    """`python -m train --out RUN` without --resume: one line and exit 2, RUN untouched; --overwrite replaces it."""
    metrics = (short_run / "metrics.jsonl").read_bytes()
    before = reader.load(short_run / "ckpt.pt")["sha256"]
    args = ["--config", "tiny", *[a for k, v in {**SMALL, "optimizer": "muon", "steps": 4, "warmup_steps": 1,
                                                 "micro_batch": 4, "seq_len": 32, "batch_tokens": 128,
                                                 "eval_every": 0}.items() for a in (f"--{k}", str(v))],
            "--data", str(tokens), "--out", str(short_run), "--progress", "false", "--plots", "false"]
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds a run" in err and "--overwrite" in err
    assert (short_run / "metrics.jsonl").read_bytes() == metrics
    assert reader.load(short_run / "ckpt.pt")["sha256"] == before
    with pytest.raises(SystemExit) as e:  # refused as the command line is read
        main([*args, "--resume", "--overwrite"])
    assert e.value.code == 2 and "give one of them" in capsys.readouterr().err


def test_changed_hyperparameters_apply_on_resume_and_run_keys_are_refused(tokens, tmp_path, capsys):
    """One rule: a changed key that defines the run is refused; any other applies and is named. `--lr 0` on resume
    must freeze the weights (AdamW's step and decay both scale with lr); before, the saved param groups' lr ran on
    while the checkpoint's config claimed the new one."""
    kw = dict(optimizer="adamw", steps=6, warmup_steps=1, micro_batch=4, seq_len=32, batch_tokens=128, eval_every=0)
    train(cfg_for(tokens, tmp_path, stop_at=3, **kw))
    at3 = reader.load(tmp_path / "ckpt.pt")["model"]
    with pytest.raises(ResumeError, match="optimizer = adamw and this run has muon: optimizer cannot change"):
        train(cfg_for(tokens, tmp_path, **{**kw, "optimizer": "muon"}), resume=True)
    capsys.readouterr()
    rest = train(cfg_for(tokens, tmp_path, **{**kw, "lr": 0.0}), resume=True)
    assert "lr: 0.003 -> 0.0 (applied from step 4)" in capsys.readouterr().out
    assert len(rest.losses) == 3
    at6 = reader.load(tmp_path / "ckpt.pt")
    assert at6["step"] == 6 and at6["config"]["lr"] == 0.0
    assert all(torch.equal(at3[k], at6["model"][k]) for k in at3)


def test_corrupt_checkpoints_are_one_line_errors(short_run, tmp_path, capsys):
    """A bit flipped in the exported file or in a shard of the training state is caught by the checksum; a truncated
    file is one line naming it, not a traceback."""
    run = tmp_path / "run"
    shutil.copytree(short_run, run)
    export = run / "ckpt.pt"
    raw = bytearray(export.read_bytes())
    weights = reader.load(export)["model"]["blocks.0.attn.qkv.weight"]
    at = raw.find(weights.numpy().tobytes()[:64])  # inside the stored tensor bytes: the zip container stays valid
    assert at > 0
    raw[at + 3] ^= 0x10
    export.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="does not match its checksum"):
        reader.load(export)
    export.write_bytes(bytes(raw[: len(raw) // 2]))
    capsys.readouterr()
    assert main(["sample", "--checkpoint", str(export)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "truncated or corrupt" in err
    shard = sorted(checkpoint.latest(run).glob("*.distcp"))[0]
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=f"{shard.name} does not match its checksum"):
        checkpoint.verify(checkpoint.latest(run))
    shard.write_bytes(bytes(data[:100]))
    with pytest.raises(CheckpointError, match="truncated"):
        checkpoint.export(run)


def test_sample_and_surprise_from_checkpoint(trained, capsys):
    ckpt = trained["adamw"][0] / "ckpt.pt"
    assert main(["sample", "--checkpoint", str(ckpt), "--prompt", "The city of", "--top-k", "5",
                 "--max-new-tokens", "12", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "next token after the prompt" in out and out.count("%") == 5 and "The city of" in out
    from curate.models.checkpoint import load_checkpoint
    from train.generate import sample, surprise

    run = load_checkpoint(ckpt)
    assert sample(run, "The city of", 12, top_k=5, seed=3) == sample(run, "The city of", 12, top_k=5, seed=3)
    assert sample(run, "The", 8, temperature=0) == sample(run, "The", 8, top_k=1, seed=9)  # top-1 is greedy

    # issue 36.6: numbers that make no sample are one line each, before the checkpoint is loaded; a top-k above
    # the vocabulary lists every token
    for flag, value in (("--temperature", "nan"), ("--temperature", "-1"), ("--max-new-tokens", "-5"),
                        ("--top-k", "-1"), ("--num-samples", "0")):
        assert main(["sample", "--checkpoint", str(ckpt), flag, value]) == 2, flag
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and flag in err[0], err
    assert main(["sample", "--checkpoint", str(ckpt), "--top-k", "999999", "--max-new-tokens", "2"]) == 0
    assert capsys.readouterr().out.count("%") >= run.model.cfg.vocab_size  # (a token may hold a % too)

    text = "The information on this website is provided for general purposes only and may change without notice."
    rows = surprise(run, text)
    assert len(rows) == len(run.tokenizer.encode(text, add_special_tokens=False).ids)
    assert all(0 < p <= 1 and nll == pytest.approx(-math.log(p), rel=1e-4, abs=1e-6) for _, p, nll in rows)
    words = text.split()
    random.Random(0).shuffle(words)
    scrambled = surprise(run, " ".join(words))
    mean = lambda rs: sum(r[2] for r in rs) / len(rs)  # noqa: E731
    assert mean(rows) < mean(scrambled)  # loss is surprise: real text surprises a trained model less
    assert main(["surprise", "--checkpoint", str(ckpt), "--text", text]) == 0
    assert "mean -log p (the loss)" in capsys.readouterr().out


def test_plan_is_chinchilla_optimal():
    p = plan(1e19)
    assert p["tokens"] == pytest.approx(20 * p["params"])
    assert 6 * p["params"] * p["tokens"] == pytest.approx(1e19)
    assert p["params"] == pytest.approx(2.89e8, rel=0.01)
    assert p["curated_tokens"] == pytest.approx(p["tokens"])
    assert plan(1e19, epochs=4)["curated_tokens"] == pytest.approx(p["tokens"] / 4)
    assert p["nearest_preset"] == "350m"
    assert plan(6 * 124e6 * 20 * 124e6)["nearest_preset"] == "gpt2-124m"


def test_plan_memory_per_gpu_ddp_and_fsdp(capsys):
    """DDP: 16 bytes a parameter with AdamW (fp32 weights, grads, two moments) on every GPU, counted here from the
    model itself; FSDP: that over the world plus one group in flight; Muon keeps one buffer on the block matrices."""
    from curate.models.gpt import GPTConfig
    from train.plan import GIB, memory_per_gpu, preset_shapes

    with torch.device("meta"):
        model = GPT(GPTConfig.preset("1b", 50304))
    n = sum(p.numel() for p in model.parameters())
    matrices = sum(p.numel() for b in model.blocks for p in b.parameters() if p.ndim == 2)
    shapes = preset_shapes("1b")
    assert memory_per_gpu(shapes, 8, "ddp") == 16 * n
    assert memory_per_gpu(shapes, 8, "ddp", "muon") == 16 * n - 4 * matrices
    assert memory_per_gpu(shapes, 1, "fsdp") == 16 * n
    fsdp8 = memory_per_gpu(shapes, 8, "fsdp")
    assert 16 * n / 8 < fsdp8 < 16 * n / 8 + 8 * (n - matrices)  # the root group (embedding + head) in flight
    assert main(["plan", "--compute", "1.7e20", "--world", "8"]) == 0
    out = capsys.readouterr().out
    assert f"1b, adamw, 8 GPUs: DDP {16 * n / GIB:.1f} GiB, FSDP {fsdp8 / GIB:.1f} GiB" in out


def test_schedules():
    cos = Config(steps=100, warmup_steps=10, schedule="cosine", min_lr_frac=0.1)
    assert lr_factor(0, cos) == pytest.approx(0.1) and lr_factor(9, cos) == pytest.approx(1.0)
    assert lr_factor(99, cos) == pytest.approx(0.1)
    assert all(lr_factor(s, cos) >= lr_factor(s + 1, cos) for s in range(10, 99))
    wsd = Config(steps=100, warmup_steps=10, schedule="wsd", decay_frac=0.2, min_lr_frac=0.0)
    assert [lr_factor(s, wsd) for s in (10, 50, 79)] == [1.0, 1.0, 1.0]
    assert lr_factor(89, wsd) == pytest.approx(0.5) and lr_factor(99, wsd) == pytest.approx(0.0)


def test_config_overrides_and_errors(tmp_path):
    cfg = load_config("tiny", parse_overrides(["--steps", "200", "--lr=3e-3", "--optimizer", "muon", "--qk-norm",
                                               "false", "--source_weights", "web=0.7,wiki=0.3", "--plots"]))
    assert (cfg.steps, cfg.lr, cfg.optimizer, cfg.qk_norm, cfg.plots) == (200, 3e-3, "muon", False, True)
    assert cfg.source_weights == {"web": 0.7, "wiki": 0.3} and cfg.seq_len == 128  # the rest from tiny.toml
    assert load_config(None, {"steps": "1e3"}).steps == 1000
    with pytest.raises(ValueError, match="did you mean 'steps'"):
        parse_overrides(["--stpes", "10"])
    for bad, match in [({"optimizer": "sgd"}, "optimizer"), ({"steps": "abc"}, "steps: expected int"),
                       ({"steps": "2.5"}, "steps"), ({"lr": "-1"}, "lr must be"), ({"qk_norm": "maybe"}, "qk_norm"),
                       ({"model": "huge"}, "model"), ({"warmup_steps": 1000}, "warmup_steps")]:
        with pytest.raises(ValueError, match=match):
            load_config("tiny", bad)
    with pytest.raises(ValueError, match="multiple of micro_batch"):
        load_config("tiny", {"batch_tokens": 1000}).grad_accum(world_size=1)
    assert load_config("tiny").grad_accum(world_size=2) == 1
    toml = tmp_path / "bad.toml"
    toml.write_text('model = "tiny"\nlearning_rate = 1e-3\n')
    with pytest.raises(ValueError, match="unknown config key 'learning_rate'"):
        load_config(toml)
    with pytest.raises(SystemExit):
        main(["--config", "tiny", "--optimizer", "sgd"])


def test_shipped_configs_load_and_match_their_models():
    for name, params in [("tiny", 6.9e6), ("gpt2-124m", 124e6), ("350m", 355e6)]:  # untied head included
        cfg = load_config(name)
        assert cfg.model == name
        from train.loop import model_config

        with torch.device("meta"):
            n = GPT(model_config(cfg, 50257)).num_params()
        assert n == pytest.approx(params, rel=0.01)


def test_sweep_lr_shows_the_regimes_and_stops_divergence(tokens, tmp_path):
    from train.ablate.sweep import sweep_lr

    cfg = cfg_for(tokens, tmp_path, steps=16, warmup_steps=3, micro_batch=8, seq_len=32, batch_tokens=256,
                  eval_every=0, lr=3e-3)
    results = sweep_lr(cfg)  # 3e-5, 3e-3, 3e-2, 0.9
    low, good, high, too_high = (results[lr] for lr in sorted(results))
    assert not (low.diverged or good.diverged or high.diverged)
    assert too_high.diverged and len(too_high.losses) < 16
    assert sum(good.losses[-3:]) / 3 < sum(low.losses[-3:]) / 3 - 0.25  # too low barely moves from ln(vocab)
    assert (tmp_path / "sweep_lr.png").stat().st_size > 0


# ---- issue 17: checkpoints, Muon, devices, resume ---------------------------------------------------------------


@pytest.fixture(scope="module")
def short_run(one_thread, tokens, tmp_path_factory):
    """A 4-step Muon run with its checkpoint, for the checkpoint and device tests."""
    out = tmp_path_factory.mktemp("short")
    train(cfg_for(tokens, out, optimizer="muon", steps=4, warmup_steps=1, micro_batch=4, seq_len=32,
                  batch_tokens=128, eval_every=0))
    return out


class RunsCode:
    """What a malicious checkpoint could hold: unpickling it would call `touch` on a file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (type(self.marker).touch, (self.marker,))


def test_checkpoint_is_weights_only_and_refuses_code(short_run, tmp_path):
    ckpt = short_run / "ckpt.pt"
    torch.load(ckpt, weights_only=True)  # PyTorch's own safe unpickler accepts the trainer's checkpoint
    evil, marker = tmp_path / "ckpt.pt", tmp_path / "pwned"
    torch.save({"model": {}, "config": RunsCode(marker)}, evil)
    with pytest.raises(pickle.UnpicklingError):
        reader.load(evil)
    with pytest.raises(pickle.UnpicklingError):
        main(["sample", "--checkpoint", str(evil)])
    assert not marker.exists()


def test_rng_state_is_saved_and_restored(short_run):
    """The training state holds each rank's RNG states as plain numbers; restoring them replays the same random
    numbers from all three generators."""
    states = checkpoint.read_json(checkpoint.latest(short_run), "rng")["rng"]
    assert len(states) == 1

    def draws():
        return torch.rand(3).tolist(), np.random.rand(3).tolist(), [random.random() for _ in range(3)]

    checkpoint.set_rng_state(states[0])
    first = draws()
    torch.manual_seed(99)
    np.random.seed(99)
    random.seed(99)
    checkpoint.set_rng_state(states[0])
    assert draws() == first
    assert checkpoint.restore_rng(states, rank=0, world=1, seed=0)
    assert draws() == first
    assert not checkpoint.restore_rng(states, rank=0, world=2, seed=0)  # another world: reseeded from (seed, rank)


def test_muon_orthogonalises_each_fused_block_on_its_own():
    """Our Muon on a stacked (3m, n) weight == torch.optim.Muon on the three (m, n) weights separately (an independent
    implementation), over two steps so momentum counts; and different from torch.optim.Muon on the stack as one."""
    torch.manual_seed(0)
    m, n, lr, wd = 48, 32, 0.02, 0.01
    w0 = torch.randn(3 * m, n)
    grads = [torch.randn(3 * m, n) for _ in range(2)]

    def run(params, opt, split):
        for g in grads:
            for p, gi in zip(params, g.split(m) if split else [g], strict=True):
                p.grad = gi.clone()
            opt.step()
        return torch.cat([p.detach() for p in params]) - w0

    ours = [torch.nn.Parameter(w0.clone())]
    mine = run(ours, Muon([{"params": ours, "blocks": 3}], lr=lr, weight_decay=wd), split=False)
    separate = [torch.nn.Parameter(b.clone()) for b in w0.split(m)]
    reference = run(separate, torch.optim.Muon(separate, lr=lr, weight_decay=wd, momentum=0.95), split=True)
    whole = [torch.nn.Parameter(w0.clone())]
    fused = run(whole, torch.optim.Muon(whole, lr=lr, weight_decay=wd, momentum=0.95), split=False)
    tol = 0.02 * lr  # both run Newton-Schulz in bf16 (different kernels): agreement to bf16 rounding
    torch.testing.assert_close(mine, reference, atol=tol, rtol=0)
    assert (mine - fused).abs().max() > 10 * tol


def test_activation_checkpointing_gives_the_same_gradients():
    """Recomputing each block in backward changes what is kept in memory, not the numbers: the same loss and the
    same gradients as the plain forward, and fewer tensors saved for backward."""
    cfg = load_config("tiny", {"n_layer": 2, "n_embd": 64, "n_head": 4, "seq_len": 32})
    torch.manual_seed(0)
    plain = GPT(model_config(cfg, 256))
    ckpt = GPT(model_config(cfg, 256))
    ckpt.load_state_dict(plain.state_dict())
    for block in ckpt.blocks:
        block.checkpointed = True
    idx = torch.randint(0, 256, (2, 32))
    saved = []
    for model in (plain, ckpt):
        kept: list[int] = []

        def pack(t, kept=kept):
            kept.append(t.numel())
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = model(idx, idx)
        loss.backward()
        saved.append((loss.item(), len(kept)))
    assert saved[0][0] == saved[1][0] and saved[1][1] < saved[0][1]
    for a, b in zip(plain.parameters(), ckpt.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=0, atol=0)


def test_muon_groups_and_decay():
    cfg = load_config("tiny", {"optimizer": "muon", "n_layer": 1})
    model = GPT(model_config(cfg, 256))
    opt = build_optimizer(model, cfg, torch.device("cpu"))
    muon = opt.optimizers[1]
    blocks = {g["blocks"]: [p.shape for p in g["params"]] for g in muon.param_groups}
    d, h = 128, model.cfg.mlp_hidden
    assert blocks == {1: [(d, d), (d, h)], 2: [(2 * h, d)], 3: [(3 * d, d)]}
    assert all(g["weight_decay"] == cfg.muon_weight_decay == 0.01 for g in muon.param_groups)
    assert opt.optimizers[0].param_groups[0]["weight_decay"] == cfg.weight_decay == 0.1  # AdamW keeps its own


def test_devices_follow_local_rank():
    cuda = torch.device
    assert resolve_device("cuda", local_rank=3, local_world=4) == cuda("cuda", 3)
    assert resolve_device("cuda:1", local_rank=0, local_world=1) == cuda("cuda", 1)
    assert resolve_device("cpu", local_rank=2, local_world=4) == cuda("cpu")
    with pytest.raises(ValueError, match="all 2 processes of this node on one GPU"):
        resolve_device("cuda:0", local_rank=1, local_world=2)
    if not torch.cuda.is_available():
        assert resolve_device("auto") == cuda("cpu")


def test_cuda_without_cuda_is_one_line(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert main(["--config", "tiny", "--data", str(tmp_path), "--device", "cuda", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--device cuda: CUDA is not available" in err


def test_prefetched_batches_and_position_are_the_loaders(tokens):
    """Read ahead by a thread, the batches are the loader's own, in order, and the position saved in a checkpoint
    counts only the batches handed out, not those read ahead."""
    from train.data import Loader, TokenDataset
    from train.prefetch import Prefetcher

    ds = TokenDataset(tokens, "train")
    plain, ahead = (Loader(ds, 32, 4, seed=3) for _ in range(2))
    with Prefetcher(ahead, torch.device("cpu"), depth=3) as batches:
        for _ in range(5):
            assert all(torch.equal(a, b) for a, b in zip(batches.next_batch(), plain.next_batch(), strict=True))
        for _ in range(1000):  # let the thread run ahead (it fills the queue within milliseconds)
            if batches._queue.full():
                break
            time.sleep(0.01)
        assert batches.state_dict() == plain.state_dict() != ahead.state_dict()


def test_sample_and_surprise_feed_the_model_on_its_device(short_run):
    """The token ids reach the model on the model's device (meta here; it was the CPU whatever the device)."""
    from curate.models.checkpoint import load_checkpoint
    from train.generate import next_token_candidates, sample, surprise

    run = load_checkpoint(short_run / "ckpt.pt", "meta")
    assert run.device.type == "meta"
    seen = []

    class Stop(Exception):
        pass

    def record(module, args):
        seen.append(args[0].device.type)
        raise Stop

    run.model.register_forward_pre_hook(record)
    for call in (lambda: sample(run, "The", 3), lambda: surprise(run, "The city"),
                 lambda: next_token_candidates(run, "The")):
        with pytest.raises(Stop):
            call()
    assert seen == ["meta"] * 3


def test_missing_data_is_one_line(tmp_path, capsys):
    assert main(["--config", "tiny", "--data", str(tmp_path / "MISSING"), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "MISSING has no manifest.json" in err and "Traceback" not in err


def test_resume_refuses_another_global_batch_or_seq_len(tokens, tmp_path, capsys):
    kw = dict(steps=6, warmup_steps=1, micro_batch=4, seq_len=32, batch_tokens=256, eval_every=0)
    train(cfg_for(tokens, tmp_path, stop_at=2, **kw))
    for change, key in [({"batch_tokens": 512}, "batch_tokens = 256"), ({"seq_len": 64, "batch_tokens": 256}, "seq_len = 32")]:
        with pytest.raises(ResumeError, match=f"written with {key} and this run has"):
            train(cfg_for(tokens, tmp_path, **{**kw, **change}), resume=True)
    args = ["--config", "tiny", "--resume", *[a for k, v in {**SMALL, **kw, "batch_tokens": 512}.items()
                                              for a in (f"--{k}", str(v))],
            "--data", str(tokens), "--out", str(tmp_path), "--progress", "false", "--plots", "false"]
    assert main(args) == 2
    assert "keeps the global batch" in capsys.readouterr().err


def test_resume_with_another_micro_batch(tokens, tmp_path):
    """After an out-of-memory error: lower micro_batch and resume. Accumulation doubles, the batches stay the same
    samples, so the losses match the uninterrupted run up to float rounding."""
    kw = dict(optimizer="muon", steps=12, warmup_steps=2, seq_len=32, batch_tokens=256, eval_every=12,
              eval_batches=1)
    whole = train(cfg_for(tokens, tmp_path / "whole", micro_batch=4, **kw))  # accumulation 2
    first = train(cfg_for(tokens, tmp_path / "split", micro_batch=4, stop_at=6, **kw))
    loader = checkpoint.read_json(checkpoint.latest(tmp_path / "split"), "loader")["loader"]
    assert "samples" in loader  # the position is a global sample count
    second = train(cfg_for(tokens, tmp_path / "split", micro_batch=2, **kw), resume=True)  # accumulation 4
    assert first.losses + second.losses == pytest.approx(whole.losses, rel=1e-5)
    assert second.val_loss == pytest.approx(whole.val_loss, rel=1e-5)


# ---- issue 29: nothing in --out changes before every check passed; the tokenizer is part of a run's identity --------


def cli_args(tokens, out, **kw) -> list[str]:
    values = {**SMALL, "steps": 6, "warmup_steps": 1, "micro_batch": 4, "seq_len": 32, "batch_tokens": 128,
              "eval_every": 0, **kw}
    return ["--config", "tiny", *[a for k, v in values.items() for a in (f"--{k}", str(v))], "--data", str(tokens),
            "--out", str(out), "--no-progress", "--no-plots"]


def snapshot(run) -> dict[str, bytes]:
    """Every file of a run folder, for `nothing changed` (but the output lock, which any command leaves, empty)."""
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*"))
            if p.is_file() and p.name != ".peneira.lock"}


@pytest.fixture()
def run3(tokens, tmp_path):
    """A run stopped at step 3 of 6 (a whole checkpoint, resumable)."""
    out = tmp_path / "run"
    train(cfg_for(tokens, out, steps=6, warmup_steps=1, micro_batch=4, seq_len=32, batch_tokens=128, eval_every=0,
                  stop_at=3))
    return out


@pytest.fixture(scope="module")
def other_tokenizer(tokens, tmp_path_factory):
    """The same shards, said to be tokenized with another tokenizer (one merge's token renamed: another sha256)."""
    out = tmp_path_factory.mktemp("other") / "tokens"
    shutil.copytree(tokens, out)
    tok = json.loads((out / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    name = max(vocab, key=vocab.get)
    vocab["zz-" + name] = vocab.pop(name)
    (out / "tokenizer.json").write_text(json.dumps(tok))
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["tokenizer"]["sha256"] = reader.file_sha256(out / "tokenizer.json")
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


@pytest.mark.parametrize("bad", [["--data", "TYPO"], ["--source_weights", "nosuch=1"], ["--device", "cuda:0"]])
def test_overwrite_checks_everything_before_deleting_the_old_run(run3, tokens, bad, capsys):
    """`--overwrite` with a typo in --data, a source that is not in it, or a device that is not there: one line, and
    the old run is whole (it was deleted first, before)."""
    if bad[1] == "cuda:0" and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    before = snapshot(run3)
    capsys.readouterr()
    assert main([*cli_args(tokens, run3), "--overwrite", *bad]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert snapshot(run3) == before


def test_a_folder_of_other_files_is_never_cleared(run3, tokens, tmp_path, capsys):
    """The rule of every output folder (curate.io.outputs): --overwrite removes only what the trainer writes, and a
    folder holding anything else is refused whole, as a new run into a non-empty folder is."""
    (run3 / "notes.txt").write_text("mine")
    before = snapshot(run3)
    assert main([*cli_args(tokens, run3), "--overwrite"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not write (notes.txt)" in err and "--overwrite removes only" in err
    assert snapshot(run3) == before
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "data.csv").write_text("1,2\n")
    assert main(cli_args(tokens, mine)) == 2
    assert "does not write (data.csv)" in capsys.readouterr().err and snapshot(mine) == {"data.csv": b"1,2\n"}
    (run3 / "notes.txt").unlink()
    assert main([*cli_args(tokens, run3), "--overwrite"]) == 0  # only its own files: replaced
    assert reader.load(run3 / "ckpt.pt")["step"] == 6


def test_resume_with_data_of_another_tokenizer_is_refused_and_changes_nothing(run3, other_tokenizer, capsys):
    """Before: the run's tokenizer.json was replaced by the other one, then the resume failed (a traceback), and
    `sample` decoded the unchanged weights with the wrong tokenizer."""
    before = snapshot(run3)
    capsys.readouterr()
    assert main([*cli_args(other_tokenizer, run3), "--resume"]) == 2
    err = capsys.readouterr().err.strip()
    want = reader.load(run3 / "ckpt.pt")["tokenizer"]["sha256"]
    got = reader.file_sha256(other_tokenizer / "tokenizer.json")
    assert len(err.splitlines()) == 1 and want[:16] in err and got[:16] in err and str(other_tokenizer) in err, err
    assert snapshot(run3) == before


def test_resume_with_other_data_of_the_same_tokenizer_is_one_line(run3, tokens, tmp_path, capsys):
    """Another token directory (here: the val split as train) of the same tokenizer: the run's position in its data
    means nothing there. One line naming both; a moved copy of the run's own data resumes."""
    data = tmp_path / "swapped"
    shutil.copytree(tokens, data)
    manifest = json.loads((data / "manifest.json").read_text())
    manifest["splits"]["train"] = manifest["splits"]["val"]
    (data / "manifest.json").write_text(json.dumps(manifest))
    before = snapshot(run3)
    assert main([*cli_args(data, run3), "--resume"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds other training data" in err and str(data) in err, err
    assert snapshot(run3) == before
    moved = tmp_path / "moved"
    shutil.copytree(tokens, moved)
    assert main([*cli_args(moved, run3), "--resume"]) == 0


def test_sample_surprise_and_eval_check_the_tokenizer(run3, tokens, other_tokenizer, shared, tmp_path, capsys):
    """The checkpoint names its tokenizer by sha256: a run folder whose tokenizer.json is another one is refused by
    sample, surprise and eval with one line naming both; the token directory's own copy is used when it matches."""
    run = tmp_path / "copy"
    shutil.copytree(run3, run)
    shutil.copyfile(other_tokenizer / "tokenizer.json", run / "tokenizer.json")
    want = reader.load(run / "ckpt.pt")["tokenizer"]["sha256"]
    got = reader.file_sha256(run / "tokenizer.json")
    shutil.move(tokens / "tokenizer.json", tmp_path / "aside.json")  # the run's own copy is the only candidate
    try:
        text = str(shared / "text/clean_en/wikitext-2-test.txt")
        for command in (["sample", "--checkpoint", str(run)], ["surprise", "--checkpoint", str(run), "--text", "Hi"],
                        ["eval", str(run), "--heldout", text, "--max-bytes", "2000", "--no-progress"]):
            capsys.readouterr()
            assert main(command) == 2, command
            err = capsys.readouterr().err.strip()
            assert len(err.splitlines()) == 1 and want[:16] in err and got[:16] in err, err
    finally:
        shutil.move(tmp_path / "aside.json", tokens / "tokenizer.json")
    assert main(["sample", "--checkpoint", str(run), "--max-new-tokens", "2"]) == 0  # the token directory's: right


def test_a_failed_checkpoint_write_is_one_line_and_leaves_the_previous_one(run3, tokens, monkeypatch):
    """A write that fails (here ENOSPC from the shard writer; tests/test_chaos_train.py fills a real disk): one
    CheckpointError naming the checkpoint, no temporary directory, `latest` still the previous whole state."""
    import errno
    import os

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(checkpoint.dcp, "save", full)
    with pytest.raises(CheckpointError, match=r"^disk full writing .*step-00000006 \(.* free\); the previous "
                                              r"checkpoint .*step-00000003 is intact: free space and --resume$"):
        train(cfg_for(tokens, run3, steps=6, warmup_steps=1, micro_batch=4, seq_len=32, batch_tokens=128,
                      eval_every=0), resume=True)
    assert sorted(p.name for p in (run3 / "checkpoint").iterdir()) == ["latest", "step-00000003"]
    checkpoint.verify(checkpoint.latest(run3))


def test_run_states_repetition_with_the_mix_and_beats_without_progress(tokens, tmp_path, capsys, monkeypatch):
    """Issue 46: a run said nothing about how often it reads each unique token (4.3 passes on top of a mix that already
    repeated the crawl 3.65 times), and with --no-progress it was silent for a minute between evaluations."""
    import train.loop as loop

    data = tmp_path / "tokens"
    shutil.copytree(tokens, data)
    manifest = json.loads((data / "manifest.json").read_text())
    manifest["mix_epochs"] = {"web": 3.65}
    (data / "manifest.json").write_text(json.dumps(manifest))
    n_train = manifest["splits"]["train"]["tokens"]
    monkeypatch.setattr(loop, "HEARTBEAT_S", 0.0)
    kw = dict(optimizer="adamw", steps=3, warmup_steps=1, micro_batch=4, seq_len=32, batch_tokens=128, eval_every=0)
    train(cfg_for(data, tmp_path / "run", **kw))
    out = capsys.readouterr().out
    passes = 3 * 128 / n_train
    assert f"{passes:.2f} passes over {n_train:,} train tokens" in out
    assert f"seen about {passes * 3.65:.1f} times" in out and "warning: each unique token" not in out
    assert [f"step {s}/3:" in out for s in (1, 2, 3)] == [True] * 3  # a heartbeat per step at a 0 s interval

    steps = math.ceil(4.5 / 3.65 * n_train / 128)  # past 4 sightings of each token once the mix's 3.65 are counted
    monkeypatch.setattr(loop, "HEARTBEAT_S", 1e9)
    train(cfg_for(data, tmp_path / "long", **{**kw, "steps": steps, "stop_at": 1}))
    out = capsys.readouterr().out
    assert "warning: each unique token is seen about" in out and "step 1/" not in out
