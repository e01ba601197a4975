"""Data parallelism: 2 gloo processes under torchrun train exactly like 1 process with the same global batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from _traindata import SMALL, token_shards

from train import checkpoint
from train.config import load_config
from train.loop import train

STEPS = 6
# Global batch of 8 sequences of 32 tokens: one process accumulates 2 micro-batches of 4; each of two processes
# accumulates 2 micro-batches of 2, so DDP's no_sync on the first micro-step is exercised too.
RUN = {**SMALL, "micro_batch": 4, "seq_len": 32, "batch_tokens": 256, "steps": STEPS, "warmup_steps": 2,
       "eval_every": STEPS, "eval_batches": 1, "log_every": 1, "ckpt_every": 0, "progress": False, "plots": False}


def flags(values: dict) -> list[str]:
    return [arg for k, v in values.items() for arg in (f"--{k}", str(v))]


def test_two_process_ddp_matches_one_process(shared, tmp_path_factory, tmp_path):
    tokens = token_shards(shared, tmp_path_factory)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "train", "--config", "tiny", *flags({**RUN, "micro_batch": 2, "data": tokens, "out": tmp_path / "ddp"})]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "micro_batch 2 x seq_len 32 x grad accumulation 2 x world 2" in proc.stdout

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        single = train(load_config("tiny", {**RUN, "data": str(tokens), "out": str(tmp_path / "one")}))
    finally:
        torch.set_num_threads(n)

    records = [json.loads(line) for line in (tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()]
    ddp_losses = [r["loss"] for r in records]
    assert len(ddp_losses) == STEPS and ddp_losses[-1] < ddp_losses[0]
    assert ddp_losses == pytest.approx(single.losses, rel=1e-5)
    assert records[-1]["val_loss"] == pytest.approx(single.val_loss, rel=1e-5)
    a, b = checkpoint.load(tmp_path / "ddp"), checkpoint.load(tmp_path / "one")
    for k in a["model"]:
        torch.testing.assert_close(a["model"][k], b["model"][k], rtol=1e-3, atol=1e-4)  # Adam amplifies rounding
