"""Data parallelism: 2 gloo processes under torchrun train like 1 process with the same global batch.

One torchrun launch (this file run as a script, `worker` below) checks, in both ranks: that the trainer's DDP makes
no buffer-broadcast syncs (default DDP makes one per step), that Muon's Newton-Schulz work split across the ranks
gives the same weights bit for bit as one process doing all of it, that each rank's own RNG state is saved and
restored, and finally runs the trainer's command line for 3 of 6 steps. The tests then compare with one process,
and resume the 2-process checkpoint in 1 process with another micro_batch.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from _traindata import SMALL, token_shards

from curate.models import checkpoint as reader
from train import checkpoint
from train.config import load_config
from train.loop import train

STEPS, STOP = 6, 3
# Global batch of 8 sequences of 32 tokens: one process accumulates 2 micro-batches of 4; each of two processes
# accumulates 2 micro-batches of 2, so DDP's no_sync on the first micro-step is exercised too.
RUN = {**SMALL, "optimizer": "adamw", "micro_batch": 4, "seq_len": 32, "batch_tokens": 256, "steps": STEPS,
       "warmup_steps": 2, "eval_every": STOP, "eval_batches": 1, "log_every": 1, "ckpt_every": 0,
       "progress": False, "plots": False}


def flags(values: dict) -> list[str]:
    return [arg for k, v in values.items() for arg in (f"--{k}", str(v))]


def worker(out: Path, tokens: str) -> None:
    """Runs in each torchrun process; writes what it saw to OUT/rank{R}.json."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from curate.models.gpt import GPT, GPTConfig
    from train import optim
    from train.__main__ import main

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    report: dict = {}

    # Buffer syncs: DDP._sync_buffers broadcasts every buffer from rank 0 before a forward (on older torch after an
    # all-reduce and a host sync to agree on the source rank).
    syncs = {"n": 0}
    sync_buffers = DDP._sync_buffers

    def counted(self, *args, **kwargs):
        syncs["n"] += 1
        return sync_buffers(self, *args, **kwargs)

    DDP._sync_buffers = counted
    torch.manual_seed(0)
    probe = DDP(GPT(GPTConfig(vocab_size=64, seq_len=16, n_layer=1, n_head=2, n_embd=32)))  # broadcast_buffers=True
    for _ in range(3):
        idx = torch.randint(0, 64, (2, 16))
        probe(idx, idx).backward()
    report["default_ddp_syncs"], syncs["n"] = syncs["n"], 0

    # Muon shared out across ranks == Muon in one process (same grads on every rank, as after DDP's all-reduce).
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=64, seq_len=16, n_layer=2, n_head=2, n_embd=32))
    alone = copy.deepcopy(model)
    cfg = load_config("tiny", {"optimizer": "muon"})
    shared, single = (optim.build_optimizer(m, cfg, torch.device("cpu")) for m in (model, alone))
    single.optimizers[1].rank, single.optimizers[1].world = 0, 1  # as Muon(shard=False): this one does it all
    calls = {"n": 0}
    ns = optim.newton_schulz

    def counted_ns(*args, **kwargs):
        calls["n"] += 1
        return ns(*args, **kwargs)

    for step in range(3):
        torch.manual_seed(100 + step)
        grads = [torch.randn_like(p) for p in model.parameters()]
        for m in (model, alone):
            for p, g in zip(m.parameters(), grads, strict=True):
                p.grad = g.clone()
        optim.newton_schulz = counted_ns
        shared.step()
        optim.newton_schulz = ns
        single.step()
    report["muon_equal"] = all(torch.equal(a, b) for a, b in zip(model.parameters(), alone.parameters(), strict=True))
    report["muon_ns_calls"] = calls["n"]  # per rank; one process would make 3 steps x 8 matrices
    report["muon_matrices"] = sum(len(g["params"]) for g in shared.optimizers[1].param_groups)

    # Every rank's own RNG state: gathered and written by rank 0 (as the checkpoint's JSON), restored by each rank.
    torch.manual_seed(1000 + rank)
    own = torch.get_rng_state()
    states = checkpoint.rng_states(world)
    if rank == 0:
        (out / "rng.json").write_text(json.dumps(states))
    dist.barrier()
    torch.manual_seed(7)
    restored = checkpoint.restore_rng(json.loads((out / "rng.json").read_text()), rank, world, 0)
    report["rng_restored_own"] = restored and torch.equal(torch.get_rng_state(), own)
    report["rng_differs_across_ranks"] = states[0]["torch"] != states[1]["torch"]

    # The trainer's command line (it finds the process group initialised, and destroys it at the end).
    report["train_rc"] = main(["--config", "tiny", *flags({**RUN, "micro_batch": 2, "stop_at": STOP, "data": tokens,
                                                           "out": out / "ddp"})])
    report["trainer_syncs"] = syncs["n"]
    (out / f"rank{rank}.json").write_text(json.dumps(report))


@pytest.fixture(scope="module")
def ddp_run(shared, tmp_path_factory):
    """The torchrun launch, and the same run in one process (6 uninterrupted steps)."""
    tokens = token_shards(shared, tmp_path_factory)
    out = tmp_path_factory.mktemp("ddp")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", __file__,
           str(out), str(tokens)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        single = train(load_config("tiny", {**RUN, "data": str(tokens), "out": str(out / "one")}))
    finally:
        torch.set_num_threads(n)
    reports = [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]
    return out, tokens, proc.stdout, reports, single


def test_two_process_ddp_matches_one_process(ddp_run):
    out, _, stdout, reports, single = ddp_run
    assert "micro_batch 2 x seq_len 32 x grad accumulation 2 x world 2" in stdout
    for rep in reports:
        assert rep["train_rc"] == 0
        assert rep["default_ddp_syncs"] == 3  # the probe sees DDP's per-step buffer broadcast...
        assert rep["trainer_syncs"] == 0  # ...and the trainer's DDP makes none
        assert rep["muon_equal"]
        assert rep["rng_restored_own"] and rep["rng_differs_across_ranks"]
    # each rank orthogonalised its share of the 8 matrices, 3 steps, together all of them exactly once
    calls = [rep["muon_ns_calls"] for rep in reports]
    assert sum(calls) == 3 * reports[0]["muon_matrices"] == 24 and min(calls) > 0

    records = [json.loads(line) for line in (out / "ddp" / "metrics.jsonl").read_text().splitlines()]
    one = [json.loads(line) for line in (out / "one" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(1, STOP + 1))
    assert [r["loss"] for r in records] == pytest.approx(single.losses[:STOP], rel=1e-5)
    assert records[-1]["val_loss"] == pytest.approx(one[STOP - 1]["val_loss"], rel=1e-5)
    assert len(checkpoint.read_json(checkpoint.latest(out / "ddp"), "rng")["rng"]) == 2  # both ranks' RNG states


def test_resume_two_processes_in_one_with_another_micro_batch(ddp_run):
    """From 2 processes x micro_batch 2 to 1 process x micro_batch 4 (the global batch unchanged): the run continues
    on the same samples, so steps 4-6 and the final weights match the uninterrupted 1-process run."""
    out, tokens, _, _, single = ddp_run
    loader = checkpoint.read_json(checkpoint.latest(out / "ddp"), "loader")["loader"]
    assert "samples" in loader  # the position is a global sample count
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rest = train(load_config("tiny", {**RUN, "data": str(tokens), "out": str(out / "ddp")}), resume=True)
    finally:
        torch.set_num_threads(n)
    assert rest.losses == pytest.approx(single.losses[STOP:], rel=1e-5)
    a, b = reader.load(out / "ddp"), reader.load(out / "one")
    for k in a["model"]:
        torch.testing.assert_close(a["model"][k], b["model"][k], rtol=1e-3, atol=1e-4)  # Adam amplifies rounding


if __name__ == "__main__":
    worker(Path(sys.argv[1]), sys.argv[2])
