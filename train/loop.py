"""The training loop, top to bottom: set up devices and data, build the model and optimiser, optionally resume,
then step — accumulate micro-batches, clip, update, log, evaluate, checkpoint — until done or diverged.

Runs unchanged on one CPU, one GPU, or many GPUs under `torchrun` (DDP: NCCL on GPU, gloo on CPU).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

from train import checkpoint
from train.config import Config
from train.data import Loader, TokenDataset
from train.metrics import MetricsLog, peak_flops, plot_run
from train.model import GPT, GPTConfig
from train.optim import build_optimizer, lr_factor, set_lr


@dataclass
class RunResult:
    step: int  # optimizer steps completed
    losses: list[float] = field(default_factory=list)  # training loss of every step run in this invocation
    val_loss: float | None = None  # the last validation loss
    diverged: str | None = None  # why training stopped early, if it did


def init_distributed(device: str) -> tuple[int, int, torch.device]:
    """(rank, world_size, device). Under torchrun the environment names the rank; otherwise a single process."""
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if device == "auto":
        device = f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if dev.type == "cuda" else "gloo")
    return rank, world, dev


def model_config(cfg: Config, vocab_size: int) -> GPTConfig:
    sizes = {k: v for k in ("n_layer", "n_head", "n_embd") if (v := getattr(cfg, k))}
    return GPTConfig.preset(
        cfg.model, vocab_size, seq_len=cfg.seq_len, qk_norm=cfg.qk_norm, tie_embeddings=cfg.tie_embeddings, **sizes
    )


def tokenizer_file(dataset: TokenDataset) -> Path | None:
    """The tokenizer JSON named in the token manifest (relative paths are relative to the token directory)."""
    tok = dataset.manifest.get("tokenizer", {})
    name = tok.get("path") or tok.get("file")
    if not name:
        return None
    path = Path(name) if Path(name).is_absolute() else dataset.path / name
    return path if path.is_file() else None


def all_mean(x: torch.Tensor, world: int) -> torch.Tensor:
    if world > 1:
        dist.all_reduce(x, op=dist.ReduceOp.SUM)  # gloo has no AVG
        x /= world
    return x


@torch.no_grad()
def evaluate(model: torch.nn.Module, loader: Loader, batches: int, device: torch.device, amp, world: int) -> float:
    """Mean loss over `batches` micro-batches per rank; the loader is fresh each time, so every evaluation (and every
    resumed run) scores exactly the same tokens and the curve is comparable point to point."""
    model.eval()
    total = torch.zeros((), device=device)
    for _ in range(batches):
        x, y = (t.to(device, non_blocking=True) for t in loader.next_batch())
        with amp:
            total += model(x, y).float()
    model.train()
    return all_mean(total / batches, world).item()


def train(cfg: Config, resume: bool = False) -> RunResult:
    # ---- devices, precision, processes -------------------------------------------------------------------------
    rank, world, device = init_distributed(cfg.device)
    master = rank == 0
    say = print if master else (lambda *a, **k: None)
    on_cuda = device.type == "cuda"
    if on_cuda:  # TF32 matmuls for whatever still runs in fp32 (it is the default for cuDNN convs already)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    use_bf16 = cfg.dtype == "bfloat16" or (cfg.dtype == "auto" and on_cuda)
    amp = torch.autocast(device.type, dtype=torch.bfloat16) if use_bf16 else nullcontext()
    compile_model = cfg.compile == "on" or (cfg.compile == "auto" and on_cuda)
    out = Path(cfg.out)
    ckpt_path = out / checkpoint.CKPT_NAME
    if master:
        out.mkdir(parents=True, exist_ok=True)

    # ---- data ------------------------------------------------------------------------------------------------
    train_set = TokenDataset(cfg.data, "train")
    loader = Loader(train_set, cfg.seq_len, cfg.micro_batch, seed=cfg.seed, rank=rank, world_size=world,
                    source_weights=cfg.source_weights or None)
    val_tokens = train_set.manifest["splits"].get("val", {}).get("tokens", 0)
    has_val = cfg.eval_every > 0 and val_tokens > cfg.seq_len
    val_set = TokenDataset(cfg.data, "val") if has_val else None
    accum = cfg.grad_accum(world)
    if master and (tok := tokenizer_file(train_set)):
        shutil.copyfile(tok, out / "tokenizer.json")  # so sample/surprise need only the run directory

    # ---- model and optimiser -----------------------------------------------------------------------------------
    torch.manual_seed(cfg.seed)  # identical initial weights on every rank (DDP would broadcast rank 0's anyway)
    mcfg = model_config(cfg, train_set.vocab_size)
    raw = GPT(mcfg).to(device)  # the unwrapped module: its state_dict has no `_orig_mod.`/`module.` prefixes
    optimizer = build_optimizer(raw, cfg, device)
    step, first_loss = 0, None
    saved_step = None  # step of the checkpoint this run resumed from or last wrote (a file left by another run is not ours)
    if resume and ckpt_path.is_file():
        state = checkpoint.load(ckpt_path, map_location=device)
        raw.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        loader.load_state_dict(state["loader"])
        checkpoint.set_rng_state(state["rng"])
        step, first_loss = state["step"], state["first_loss"]
        saved_step = step
        say(f"resumed from {ckpt_path} at step {step}")
    elif resume:
        say(f"--resume: no checkpoint in {out}, starting from scratch")
    fwd = torch.compile(raw) if compile_model else raw
    model = DDP(fwd, device_ids=[device.index] if on_cuda else None) if world > 1 else fwd

    flops_per_token, peak = raw.flops_per_token(), peak_flops(device)
    stop = min(cfg.stop_at or cfg.steps, cfg.steps)
    say(f"model: {cfg.model} {mcfg.n_layer}x{mcfg.n_embd}, {raw.num_params():,} parameters (+{raw.embed.weight.numel():,}"
        f" embedding), vocab {train_set.vocab_size:,}; data: {train_set.num_tokens:,} train tokens from {cfg.data}")
    say(f"batch: {cfg.batch_tokens:,} tokens/step = micro_batch {cfg.micro_batch} x seq_len {cfg.seq_len} x "
        f"grad accumulation {accum} x world {world}; {cfg.optimizer}, {cfg.schedule} schedule, steps {step}->{stop}")
    say(f"device: {device}{' (' + torch.cuda.get_device_name(device) + ')' if on_cuda else ''}, "
        f"{'bf16 autocast' if use_bf16 else 'fp32'}, compile {'on' if compile_model else 'off'}")

    # ---- train ---------------------------------------------------------------------------------------------------
    log = MetricsLog(out / "metrics.jsonl", resume_step=step if resume else None) if master else None
    result = RunResult(step=step)
    bar = tqdm(total=stop, initial=step, disable=not (master and cfg.progress), unit="step", dynamic_ncols=True)
    train_time, interval_time, interval_steps = 0.0, 0.0, 0
    model.train()
    while step < stop:
        t0 = time.perf_counter()
        lr_scale = lr_factor(step, cfg)
        set_lr(optimizer, lr_scale)
        loss_sum = torch.zeros((), device=device)
        for micro in range(accum):
            x, y = (t.to(device, non_blocking=True) for t in loader.next_batch())
            # Gradients are all-reduced only on the last micro-step; before that they just accumulate locally.
            sync = world == 1 or micro == accum - 1
            with amp, (nullcontext() if sync else model.no_sync()):
                loss = model(x, y) / accum
            loss.backward()
            loss_sum += loss.detach()
        all_mean(loss_sum, world)
        grad_norm = torch.nn.utils.clip_grad_norm_(raw.parameters(), cfg.grad_clip or math.inf)
        loss_value, norm_value = torch.stack([loss_sum.float(), grad_norm.float()]).tolist()  # one host sync

        # Stop before a bad update touches the weights, so the last checkpoint on disk stays the last good one.
        first_loss = loss_value if first_loss is None else first_loss
        if not (math.isfinite(loss_value) and math.isfinite(norm_value)) or (
            cfg.divergence_factor and loss_value > cfg.divergence_factor * first_loss
        ):
            kept = (f"the last good checkpoint is {ckpt_path} (step {saved_step})"
                    if saved_step is not None else "no checkpoint was written yet")
            result.diverged = (f"loss diverged at step {step + 1}: loss {loss_value:.4g}, grad norm {norm_value:.4g} "
                               f"(first loss {first_loss:.4g}, lr {optimizer_lr(cfg, lr_scale):.3g}); stopped, {kept}. "
                               "Try a lower lr, more warmup_steps or grad_clip.")
            result.losses.append(loss_value)  # the loss that tripped the guard; its update was never applied
            say(result.diverged)
            break

        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        result.step = step
        result.losses.append(loss_value)
        dt = time.perf_counter() - t0
        train_time += dt
        interval_time += dt
        interval_steps += 1
        bar.update(1)
        bar.set_postfix(loss=f"{loss_value:.4f}", lr=f"{optimizer_lr(cfg, lr_scale):.2e}", refresh=False)

        val_due = val_set is not None and (step % cfg.eval_every == 0 or step == stop)
        if val_due:
            val_loader = Loader(val_set, cfg.seq_len, cfg.micro_batch, seed=cfg.seed, rank=rank, world_size=world)
            result.val_loss = evaluate(fwd, val_loader, cfg.eval_batches * accum, device, amp, world)
            if master:
                bar.write(f"step {step}: val loss {result.val_loss:.4f}")
        if master and (step % cfg.log_every == 0 or step == stop or val_due):
            tokens_per_s = cfg.batch_tokens * interval_steps / interval_time
            record: dict[str, Any] = {
                "step": step, "loss": loss_value, "lr": optimizer_lr(cfg, lr_scale), "grad_norm": norm_value,
                "tokens_per_s": round(tokens_per_s, 1), "tokens": step * cfg.batch_tokens,
                "mfu": round(flops_per_token * tokens_per_s / (peak * world), 4) if peak else None,
                "train_time_s": round(train_time, 3),
            }
            if val_due:
                record["val_loss"] = result.val_loss
            log.write(record)
            interval_time, interval_steps = 0.0, 0
        ckpt_due = (cfg.ckpt_every and step % cfg.ckpt_every == 0) or step == stop
        if master and ckpt_due:
            checkpoint.save_atomic({
                "model": raw.state_dict(), "optimizer": optimizer.state_dict(), "loader": loader.state_dict(),
                "rng": checkpoint.rng_state(), "step": step, "first_loss": first_loss,
                "config": cfg.to_dict(), "model_config": asdict(mcfg), "eos_id": train_set.eos_id,
                "tokenizer": train_set.manifest.get("tokenizer"),
            }, ckpt_path)
            if cfg.plots and step != stop:  # the final plot is drawn once, below
                plot_run(out / "metrics.jsonl", out)
        if ckpt_due:
            saved_step = step
    bar.close()
    metrics_file = out / "metrics.jsonl"
    if master and cfg.plots and metrics_file.is_file() and metrics_file.stat().st_size:
        plot_run(metrics_file, out)
    if master and not result.diverged:
        summary = {"step": step, "loss": result.losses[-1] if result.losses else None, "val_loss": result.val_loss}
        print(f"done: {json.dumps(summary)}; checkpoint {ckpt_path}")
    if world > 1:
        dist.barrier()  # rank 0 may still be writing the checkpoint
    return result


def optimizer_lr(cfg: Config, scale: float) -> float:
    """The learning rate to report: Muon's when it drives the hidden matrices (most of the model), else AdamW's."""
    return (cfg.muon_lr if cfg.optimizer == "muon" else cfg.lr) * scale
