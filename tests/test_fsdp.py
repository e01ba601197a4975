"""FSDP2 and the sharded checkpoints: 2 gloo processes on 127.0.0.1 against one process, with a tiny model.

One launch of two ranks (this file run as a script, `worker` below) does, in order: Muon on FSDP row shards against
Muon in one process on the same gradients (uneven shards included); 20 AdamW steps under FSDP; a Muon run under FSDP
stopped at step 10 (the "kill"); that state resumed under FSDP on 2 ranks, and (from a copy) as DDP on 2 ranks; a DDP
run stopped at step 10 and resumed under FSDP. The tests compare each with one process: the uninterrupted 20 steps,
and the FSDP state resumed in one process. The reference is the trainer in one process, which tests/test_train.py
checks against itself (bit-exact resume) and test_ddp.py against DDP.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from _traindata import SMALL, token_shards

from curate.models import checkpoint as reader
from curate.models.checkpoint import CheckpointError
from train import checkpoint
from train.__main__ import main
from train.config import load_config
from train.loop import train

pytestmark = pytest.mark.slow  # one launch of two processes and three runs in one: ~80 s on 2 busy cores

STEPS, KILL = 20, 10
# Global batch of 8 sequences of 32 tokens: one process accumulates 2 micro-batches of 4; each of two ranks
# accumulates 2 micro-batches of 2, so the switch that holds FSDP's reduce-scatter on the first micro-step is used.
RUN = {**SMALL, "micro_batch": 4, "seq_len": 32, "batch_tokens": 256, "steps": STEPS, "warmup_steps": 2,
       "eval_every": 0, "log_every": 1, "ckpt_every": 0, "progress": False, "plots": False, "lr": 3e-3,
       "grad_clip": 0.5}


def cfg(tokens, out, **kw):
    return load_config("tiny", {**RUN, "data": str(tokens), "out": str(out), **kw})


def muon_on_shards(report: dict) -> None:
    """Muon on DTensor row shards (7 and 5 rows on 2 ranks: uneven) == Muon in one process, and each matrix's
    Newton-Schulz runs on one rank only."""
    from torch.distributed.fsdp import fully_shard

    from train import optim

    torch.manual_seed(0)
    make = lambda: torch.nn.Sequential(torch.nn.Linear(8, 7, bias=False), torch.nn.Linear(7, 5, bias=False))  # noqa: E731
    sharded, alone = make(), make()
    alone.load_state_dict(sharded.state_dict())
    for layer in sharded:
        fully_shard(layer)
    fully_shard(sharded)
    opts = [optim.Muon(m.parameters(), lr=0.05, weight_decay=0.1) for m in (sharded, alone)]
    opts[1].rank, opts[1].world = 0, 1  # the reference does all the work itself
    calls = {"n": 0}
    ns = optim.newton_schulz

    def counted(*args, **kwargs):
        calls["n"] += 1
        return ns(*args, **kwargs)

    for step in range(3):
        torch.manual_seed(100 + step)
        x = torch.randn(4, 8)
        for m in (sharded, alone):
            m(x).square().sum().backward()  # FSDP reduce-scatters the mean of identical gradients: the same
        optim.newton_schulz = counted
        opts[0].step()
        optim.newton_schulz = ns
        opts[1].step()
        for o in opts:
            o.zero_grad()
    report["muon_shard_equal"] = all(torch.equal(a.full_tensor(), b) for a, b in
                                     zip(sharded.parameters(), alone.parameters(), strict=True))
    report["muon_shard_ns_calls"] = calls["n"]  # summed over ranks: 3 steps x 2 matrices


def worker(out: Path, tokens: str) -> None:
    """Runs in each of the two processes; writes what it saw to OUT/rank{R}.json."""
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    report: dict = {}
    muon_on_shards(report)
    fsdp = {"parallel": "fsdp", "micro_batch": 2}
    adamw = train(cfg(tokens, out / "fsdp_adamw", **fsdp))
    report["adamw_losses"], report["adamw_bytes"] = adamw.losses, adamw.state_bytes
    first = train(cfg(tokens, out / "fsdp_muon", optimizer="muon", stop_at=KILL, **fsdp))
    report["muon_first"] = first.losses
    if rank == 0:
        for copy in ("as_ddp", "as_one"):
            shutil.copytree(out / "fsdp_muon", out / copy)
    dist.barrier()
    report["muon_rest_fsdp"] = train(cfg(tokens, out / "fsdp_muon", optimizer="muon", **fsdp), resume=True).losses
    report["muon_rest_ddp"] = train(cfg(tokens, out / "as_ddp", optimizer="muon", micro_batch=2), resume=True).losses
    train(cfg(tokens, out / "ddp_muon", optimizer="muon", micro_batch=2, stop_at=KILL))
    report["ddp_rest_fsdp"] = train(cfg(tokens, out / "ddp_muon", optimizer="muon", **fsdp), resume=True).losses
    (out / f"rank{rank}.json").write_text(json.dumps(report))
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(out: Path, tokens: Path, world: int = 2) -> None:
    """`world` processes of `worker`, rendezvous on 127.0.0.1 at a free port (what torchrun's environment says)."""
    port = free_port()
    procs = []
    for rank in range(world):
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
               "RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": str(world)}
        procs.append(subprocess.Popen([sys.executable, __file__, str(out), str(tokens)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = [p.communicate(timeout=900) for p in procs]
    for p, (_, stderr) in zip(procs, results, strict=True):
        assert p.returncode == 0, stderr[-4000:]
    (out / "stdout.txt").write_text(results[0][0])


@pytest.fixture(scope="module")
def runs(shared, tmp_path_factory):
    tokens = token_shards(shared, tmp_path_factory)
    out = tmp_path_factory.mktemp("fsdp")
    launch(out, tokens)
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        single = {opt: train(cfg(tokens, out / f"one_{opt}", optimizer=opt)) for opt in ("adamw", "muon")}
        resumed_one = train(cfg(tokens, out / "as_one", optimizer="muon"), resume=True)  # the FSDP state, 1 process
    finally:
        torch.set_num_threads(n)
    reports = [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]
    return out, tokens, reports, single, resumed_one


def test_muon_on_fsdp_shards_equals_one_process(runs):
    reports = runs[2]
    assert all(r["muon_shard_equal"] for r in reports)
    calls = [r["muon_shard_ns_calls"] for r in reports]
    assert sum(calls) == 3 * 2 and min(calls) > 0  # each matrix orthogonalised once, on one rank: work spread


def test_fsdp_losses_equal_one_process(runs):
    out, _, reports, single, _ = runs
    stdout = (out / "stdout.txt").read_text()
    assert "micro_batch 2 x seq_len 32 x grad accumulation 2 x world 2" in stdout and "fsdp" in stdout
    for r in reports:
        assert r["adamw_losses"] == pytest.approx(single["adamw"].losses, rel=1e-4)
        assert r["muon_first"] + r["muon_rest_fsdp"] == pytest.approx(single["muon"].losses, rel=1e-4)
    assert len(reports[0]["muon_first"]) == KILL
    # the global gradient norm over DTensor shards is the whole model's, and clipping acts on it as in one process
    norms = [[json.loads(line)["grad_norm"] for line in (out / run / "metrics.jsonl").read_text().splitlines()]
             for run in ("fsdp_adamw", "one_adamw")]
    assert norms[0] == pytest.approx(norms[1], rel=1e-4)
    assert sum(n > RUN["grad_clip"] for n in norms[1]) >= 3  # clipped steps among them


def test_kill_at_10_resume_as_fsdp_one_process_and_ddp(runs):
    """The step-10 state of the FSDP run, resumed under FSDP on 2 ranks, in one process and under DDP, and a DDP
    state resumed under FSDP: every continuation gives the losses of the uninterrupted run."""
    _, _, reports, single, resumed_one = runs
    tail = single["muon"].losses[KILL:]
    assert resumed_one.losses == pytest.approx(tail, rel=1e-4)
    for r in reports:
        for key in ("muon_rest_fsdp", "muon_rest_ddp", "ddp_rest_fsdp"):
            assert r[key] == pytest.approx(tail, rel=1e-4), key


def test_parameter_and_optimiser_memory_per_rank_halves(runs):
    """Read from the tensors each rank holds (shards under FSDP), not from the process's memory."""
    _, _, reports, single, _ = runs
    one = single["adamw"].state_bytes
    for r in reports:
        for part in ("params", "optimizer"):
            assert 0.45 <= r["adamw_bytes"][part] / one[part] <= 0.55, (part, r["adamw_bytes"], one)
    assert sum(r["adamw_bytes"]["params"] for r in reports) == pytest.approx(one["params"], rel=0.02)


def test_export_then_sample(runs, capsys):
    """`export` rebuilds ckpt.pt from the shards in one process: the same weights the FSDP run gathered at its end."""
    out = runs[0]
    run = out / "fsdp_muon"
    gathered = reader.load(run / "ckpt.pt")  # written by the FSDP run itself at its end
    (run / "ckpt.pt").unlink()
    assert main(["export", str(run)]) == 0
    exported = torch.load(run / "ckpt.pt", weights_only=True)
    assert exported["step"] == STEPS and exported["model"].keys() == gathered["model"].keys()
    assert all(torch.equal(exported["model"][k], gathered["model"][k]) for k in gathered["model"])
    capsys.readouterr()
    assert main(["sample", "--checkpoint", str(run), "--prompt", "The", "--max-new-tokens", "5"]) == 0
    assert f"step {STEPS}" in capsys.readouterr().out


def test_a_missing_shard_is_one_clear_error(runs, tmp_path, capsys):
    out, tokens = runs[0], runs[1]
    run = tmp_path / "run"
    shutil.copytree(out / "ddp_muon", run)
    state = checkpoint.latest(run)
    shard = sorted(state.glob("*.distcp"))[-1]
    shard.unlink()
    args = ["--config", "tiny", "--resume", *[a for k, v in RUN.items() for a in (f"--{k}", str(v))],
            "--optimizer", "muon", "--data", str(tokens), "--out", str(run)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{shard.name} is missing" in err
    with pytest.raises(CheckpointError, match="is missing"):
        checkpoint.export(run)


if __name__ == "__main__":
    worker(Path(sys.argv[1]), sys.argv[2])
