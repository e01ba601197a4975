"""The training loop, top to bottom: set up devices and data, build the model and optimiser, optionally resume,
then step — accumulate micro-batches, clip, update, log, evaluate, checkpoint — until done or diverged.

Runs unchanged on one CPU, one GPU, or many GPUs under `torchrun` (NCCL on GPU, gloo on CPU), the model spread
over the processes by DDP or FSDP2 (`--parallel`, train/parallel.py).
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from tqdm import tqdm

from curate.core.errors import UsageError
from curate.io import outputs
from curate.models.gpt import GPT, GPTConfig
from train import checkpoint
from train.checkpoint import ResumeError
from train.config import Config
from train.data import Loader, TokenDataset, member
from train.devices import init_distributed
from train.metrics import MetricsLog, peak_flops, plot_run
from train.optim import build_optimizer, lr_factor, set_lr
from train.parallel import full, grad_sync, local_bytes, parallelize
from train.prefetch import Prefetcher


@dataclass
class RunResult:
    step: int  # optimizer steps completed
    losses: list[float] = field(default_factory=list)  # training loss of every step run in this invocation
    val_loss: float | None = None  # the last validation loss
    diverged: str | None = None  # why training stopped early, if it did
    stopped: int = 0  # the signal (SIGTERM) that stopped the run early at a checkpoint, if one did
    state_bytes: dict[str, int] = field(default_factory=dict)  # this rank's parameters and optimiser state, in bytes


def model_config(cfg: Config, vocab_size: int) -> GPTConfig:
    sizes = {k: v for k in ("n_layer", "n_head", "n_embd") if (v := getattr(cfg, k))}
    return GPTConfig.preset(
        cfg.model, vocab_size, seq_len=cfg.seq_len, qk_norm=cfg.qk_norm, tie_embeddings=cfg.tie_embeddings, **sizes
    )


def tokenizer_file(dataset: TokenDataset) -> Path | None:
    """The tokenizer JSON named in the token manifest (relative paths are relative to the token directory)."""
    name = dataset.manifest.get("tokenizer", {}).get("file")
    if not name:
        return None
    path = dataset.path / member(name, f"{dataset.location}/manifest.json")
    return path if path.is_file() else None


def all_mean(x: torch.Tensor, world: int) -> torch.Tensor:
    if world > 1:
        dist.all_reduce(x, op=dist.ReduceOp.SUM)  # gloo has no AVG
        x /= world
    return x


# Past this many sightings of each unique token, repetition stops being nearly as good as new data (Muennighoff et al.,
# "Scaling Data-Constrained Language Models", 2023: up to about 4 epochs cost little; beyond, returns fall fast).
REPEAT_WARN = 4.0
HEARTBEAT_S = 30.0  # with --no-progress, a line at least this often so a quiet run is seen to be alive


def repetition(dataset: TokenDataset, steps: int, batch_tokens: int) -> tuple[str, str | None]:
    """The line that says how often this run reads each unique token, and a warning past REPEAT_WARN.

    Passes over the token folder times the repetition its `curate mix` already made (the token manifest's
    `mix_epochs`, per source): a mix that repeats a crawl 3.65 times trained for 4.3 passes shows each of the crawl's
    tokens about 15.7 times, which the pass count alone hides."""
    passes = steps * batch_tokens / max(1, dataset.num_tokens)
    mix = dataset.manifest.get("mix_epochs") or {}
    line = f"repetition: {steps:,} steps x {batch_tokens:,} tokens = {passes:.2f} passes over {dataset.num_tokens:,} train tokens"
    seen = passes
    if mix:
        worst = max(mix, key=mix.get)
        seen = passes * mix[worst]
        line += (f"; the mix already repeats its sources ({', '.join(f'{s} {e:.2f}x' for s, e in sorted(mix.items()))}),"
                 f" so each unique token of {worst!r} is seen about {seen:.1f} times")
    warn = None
    if seen > REPEAT_WARN:
        warn = (f"warning: each unique token is seen about {seen:.1f} times, past {REPEAT_WARN:g} (beyond it repeated "
                "data is worth much less than new data): more unique data, fewer steps, or a smaller model")
    return line, warn


def host_copy(t: torch.Tensor) -> Callable[[], list[float]]:
    """Start copying a small device tensor to the host; the returned function waits for the copy and reads it. On
    CUDA the copy is queued behind the step's kernels into pinned memory, so reading it a step later, while the next
    step runs, costs the GPU nothing (a `.tolist()` right away would idle it until the host launched more work)."""
    if t.device.type != "cuda":
        return t.tolist
    buf = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
    buf.copy_(t, non_blocking=True)
    done = torch.cuda.Event()
    done.record()
    return lambda: (done.synchronize(), buf.tolist())[1]


@torch.no_grad()
def evaluate(model: torch.nn.Module, loader: Loader, batches: int, device: torch.device, amp, world: int) -> float:
    """Mean loss over `batches` micro-batches per rank; the loader is fresh each time, so every evaluation (and every
    resumed run) scores exactly the same tokens and the curve is comparable point to point."""
    model.eval()
    total = torch.zeros((), device=device)
    with Prefetcher(loader, device) as batches_ahead:
        for _ in range(batches):
            x, y = batches_ahead.next_batch()
            with amp:
                total += model(x, y).float()
    model.train()
    return all_mean(total / batches, world).item()


# The one rule for a config that differs on --resume: keys that define the run (what a step, a sample and the model
# are) cannot change, and the run is refused; every other key may, and takes effect (named in the log). The optimiser
# hyperparameters in particular come from this run's config, not from the saved param groups (OptimizerState).
FIXED_ON_RESUME = ("model", "n_layer", "n_head", "n_embd", "qk_norm", "tie_embeddings", "seq_len", "batch_tokens",
                   "optimizer", "seed", "source_weights")
QUIET_ON_RESUME = ("data", "out", "stop_at", "progress", "plots", "device", "compile")  # not worth a line


def check_resume(path: Path, saved: dict[str, Any], cfg: Config, world: int, tokenizer: dict[str, Any] | None = None,
                 vocab_size: int | None = None, data: str | None = None) -> list[str]:
    """Refuse a resume that changes a key of FIXED_ON_RESUME, the tokenizer (the one `--data` was tokenized with
    must be the one the run was trained with: its ids are what the embedding rows mean) or the training data (its
    `data_fingerprint`: the loader's position means nothing in other data; the directory itself may move); return a
    line for every other key that changed (they apply from the first resumed step), and for a change of layout.
    micro_batch and the number of processes may change: the loader continues from the global count of samples
    consumed and accumulation is derived again."""
    old, new = saved["config"], cfg.to_dict()
    for key in FIXED_ON_RESUME:
        if key in old and old[key] != new[key]:
            hint = ("a resumed run keeps the global batch and sequence length (micro_batch and the number of processes "
                    "may change)" if key in ("batch_tokens", "seq_len") else f"{key} cannot change on resume")
            raise ResumeError(f"{path} was written with {key} = {old[key]} and this run has {new[key]}: {hint}; "
                              "use a new --out to train with other values")
    was, now = (saved.get("tokenizer") or {}).get("sha256"), (tokenizer or {}).get("sha256")
    vocab_was = saved.get("model_config", {}).get("vocab_size")
    if (was and now and was != now) or (vocab_size and vocab_was and vocab_was != vocab_size):
        raise ResumeError(f"{path} was trained on --data {old.get('data')} (tokenizer sha256 {(was or '?')[:16]}…, "
                          f"vocabulary {vocab_was}) and --data {cfg.data} is tokenized with another tokenizer "
                          f"(sha256 {(now or '?')[:16]}…, vocabulary {vocab_size}): resume with data of the run's own "
                          "tokenizer, or train a new run (another --out)")
    if data and saved.get("data_fingerprint") and saved["data_fingerprint"] != data:
        raise ResumeError(f"{path} was trained on --data {old.get('data')} (fingerprint "
                          f"{saved['data_fingerprint'][:16]}…) and --data {cfg.data} holds other training data "
                          f"({data[:16]}…): the run's position in its data means nothing in other data; resume with "
                          "the run's own data (it may have moved), or train a new run (another --out)")
    lines = [f"{key}: {old[key]} -> {new[key]} (applied from step {saved['step'] + 1})"
             for key in sorted(new) if key in old and old[key] != new[key] and key not in QUIET_ON_RESUME]
    before = (saved.get("world_size", 1), old["micro_batch"])
    if before != (world, cfg.micro_batch):
        lines.append(f"layout: written by world {before[0]} x micro_batch {before[1]}, continued with world {world} x "
                     f"micro_batch {cfg.micro_batch} x grad accumulation {cfg.grad_accum(world)}: same batches, up to "
                     "float rounding")
    return lines


# What `python -m train` writes at the top of --out. The first three make a folder hold a run; `--overwrite` removes
# them first, the training state first of all, so a folder half-cleared by a kill is never taken for a run to resume.
LAYOUT = (checkpoint.STATE_DIR, checkpoint.CKPT_NAME, "metrics.jsonl", "tokenizer.json", "loss.png", "lr.png")
RUN_FILES = LAYOUT[:3]
WHAT = "`python -m train`"


def _ours(name: str) -> bool:
    """A name of LAYOUT, or a temporary file of one (`NAME.tmp.*`, `.NAME.tmp.*`), as curate.io.outputs counts them."""
    return any(fnmatch.fnmatchcase(name, p) for n in LAYOUT for p in (n, f"{n}.tmp.*", f".{n}.tmp.*", f"{n}.tmp"))


def check_output(out: Path, resume: bool, overwrite: bool) -> list[str]:
    """The rule of every output folder (curate.io.outputs), for a run: a new run takes an empty or missing --out;
    one that holds a run is continued by --resume or replaced by --overwrite, never by a new run (a typo would
    truncate its metrics and replace its checkpoint); one that holds anything the trainer does not write is never
    cleared, not even by --overwrite. Reads only: returns the entries --overwrite is to remove once every other
    check has passed."""
    if resume and overwrite:
        raise ResumeError("--resume continues the run in --out and --overwrite replaces it: give one of them")
    names = sorted(n for n in os.listdir(out) if n != outputs.LOCK_NAME) if out.is_dir() else []
    found = [n for n in RUN_FILES if n in names]
    if resume:
        return []
    if found and not overwrite:
        raise ResumeError(f"{out} holds a run ({', '.join(found)}): pass --resume to continue it, --overwrite to "
                          "replace it, or another --out")
    foreign = [n for n in names if not _ours(n)]
    if foreign:
        shown = ", ".join(foreign[:3]) + (f", … ({len(foreign)} in all)" if len(foreign) > 3 else "")
        raise UsageError(f"{out} holds files {WHAT} does not write ({shown}): "
                         + ("--overwrite removes only its own: " if overwrite else "")
                         + "move them away or choose another --out")
    return names if overwrite else []


def agreed(world: int, fn: Callable[[], Any]) -> Any:
    """`fn()` on this rank; an error it raises on any rank is raised on every rank (the lowest rank's), so that no
    rank goes on into a collective that a rank which stopped will never join."""
    try:
        value, problem = fn(), None
    except Exception as e:  # noqa: BLE001 - every rank must reach the gather below, whatever went wrong
        value, problem = None, e
    if world > 1:
        theirs: list[Any] = [None] * world
        dist.all_gather_object(theirs, None if problem is None else (type(problem), str(problem)))
        first = next(((rank, t) for rank, t in enumerate(theirs) if t), None)
        if first is not None and problem is None:
            rank, (kind, message) = first
            try:  # the one-line errors (config, data, tokenizer, output folder, checkpoint) as they are
                problem = kind(message) if issubclass(kind, (ValueError, OSError)) else None
            except Exception:  # noqa: BLE001 - an exception class that takes other arguments
                problem = None
            problem = problem or RuntimeError(f"rank {rank} failed: {kind.__name__}: {message}")
    if problem is not None:
        raise problem
    return value


def _write_file(path: Path, data: bytes) -> None:
    """Replace `path` whole (a temporary file renamed over it): a kill leaves the old file or the new, not half."""
    tmp = checkpoint.temp_name(path)
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class _Terminate:
    """SIGTERM (`kill`, a scheduler's preemption, torchrun passing its own on) while training: the run finishes the
    step it is in, saves a checkpoint and stops (as torchtitan does), instead of dying wherever it was. Before the
    loop, or at a second SIGTERM, the default applies: the process ends at once; every file the trainer publishes is
    written under a temporary name and renamed, so either way nothing half-written is left to read."""

    def __init__(self):
        self.signal = 0
        self.in_loop = False
        self.previous: Any = None

    def __enter__(self) -> _Terminate:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._handle)
            if self.previous is None:  # a handler not installed from Python: restore the default
                self.previous = signal.SIG_DFL
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, self.previous)  # a second SIGTERM ends the process
        if not self.in_loop:
            os.kill(os.getpid(), signum)
            return
        self.signal = signum

    def __exit__(self, *exc: Any) -> None:
        if self.previous is not None and signal.getsignal(signal.SIGTERM) == self._handle:
            signal.signal(signal.SIGTERM, self.previous)


def train(cfg: Config, resume: bool = False, overwrite: bool = False) -> RunResult:
    """Train (or with `resume`, continue) the run `cfg` describes into `cfg.out`. Everything is checked (config
    against the world, data, tokenizer, the output folder, the checkpoint to resume) before anything in the output
    folder changes; rank 0 holds the folder's lock (curate.io.outputs.locked) from before those reads to the end."""
    with _Terminate() as term, ExitStack() as held:
        return _train(cfg, resume, overwrite, term, held)


def _train(cfg: Config, resume: bool, overwrite: bool, term: _Terminate, held: ExitStack) -> RunResult:
    if resume and overwrite:
        raise ResumeError("--resume continues the run in --out and --overwrite replaces it: give one of them")
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

    # ---- data: read-only checks, before the output folder is touched ---------------------------------------------
    def open_data() -> tuple[TokenDataset, Loader, TokenDataset | None, int, GPTConfig]:
        accum = cfg.grad_accum(world)  # the world is known only now
        train_set = TokenDataset(cfg.data, "train")
        loader = Loader(train_set, cfg.seq_len, cfg.micro_batch, seed=cfg.seed, rank=rank, world_size=world,
                        source_weights=cfg.source_weights or None)
        val_tokens = train_set.manifest["splits"].get("val", {}).get("tokens", 0)
        has_val = cfg.eval_every > 0 and val_tokens > cfg.seq_len
        val_set = TokenDataset(cfg.data, "val") if has_val else None
        return train_set, loader, val_set, accum, model_config(cfg, train_set.vocab_size)

    train_set, loader, val_set, accum, mcfg = agreed(world, open_data)
    tokenizer = train_set.manifest.get("tokenizer") or {}
    tok = tokenizer_file(train_set)

    # ---- the output folder: locked by rank 0 for the whole run, then checked (still read-only) --------------------
    # One lock per job: the ranks share the folder (on one host or a shared filesystem) and act as one writer, so
    # rank 0 takes it for all; a second job into the same folder is refused on its rank 0 and thus on all its ranks.
    agreed(world, lambda: held.enter_context(outputs.locked(str(out), what=WHAT)) if master else None)
    to_clear = agreed(world, lambda: check_output(out, resume, overwrite))
    saved_at, saved_step, changes = None, 0, []  # the state this run resumed from or last wrote, and its step
    if resume and (saved_at := checkpoint.latest(out)) is not None:
        checkpoint.verify(saved_at)
        saved = checkpoint.read_json(saved_at, "progress", "loader")

        def compatible() -> list[str]:
            lines = check_resume(saved_at, saved["progress"], cfg, world, tokenizer, train_set.vocab_size,
                                 checkpoint.data_fingerprint(train_set.manifest))
            try:  # the loader's own check (same data, seed, seq_len), before the state is loaded
                loader.load_state_dict(saved["loader"])
            except ValueError as e:
                raise ResumeError(f"{saved_at}: {e}") from None
            return lines

        changes = agreed(world, compatible)

    # ---- model and optimiser -----------------------------------------------------------------------------------
    torch.manual_seed(cfg.seed)  # identical initial weights on every rank (FSDP keeps each rank's rows of them)
    raw = GPT(mcfg).to(device)  # the unwrapped module: its state_dict has no `_orig_mod.`/`module.` prefixes
    model = parallelize(raw, cfg.parallel, world, device, use_bf16, compile_model, cfg.activation_checkpointing)
    checkpoint.seed_rank(cfg.seed, rank)  # from here on each rank draws its own random numbers
    optimizer = build_optimizer(raw, cfg, device)  # after FSDP: it holds the DTensor shards, and shards its state
    step, first_loss = 0, None

    def progress() -> dict[str, Any]:
        return checkpoint.progress_record(step, first_loss, world, cfg, mcfg, train_set.eos_id, tokenizer or None,
                                          checkpoint.data_fingerprint(train_set.manifest))

    # Everything a resumed run needs, one state_dict() per component, saved and loaded as one mapping.
    state = {
        "model": checkpoint.ModelState(model),
        "optimizer": checkpoint.OptimizerState(model, optimizer),
        "loader": checkpoint.JsonState(loader.state_dict, loader.load_state_dict),
        "rng": checkpoint.JsonState(lambda: checkpoint.rng_states(world),
                                    lambda states: checkpoint.restore_rng(states, rank, world, cfg.seed)),
        "progress": checkpoint.JsonState(progress),
    }
    if saved_at is not None:
        checkpoint.load_state(saved_at, state)
        step, first_loss = saved["progress"]["step"], saved["progress"]["first_loss"]
        saved_step = step
        say(f"resumed from {saved_at} at step {step}" + "".join(f"\n  {c}" for c in changes))
    elif resume:
        say(f"--resume: no checkpoint in {out}, starting from scratch")

    # ---- every check passed: now the output folder changes -------------------------------------------------------
    if master:
        if to_clear:  # --overwrite: the old run's files, its training state first
            outputs.clear(str(out), to_clear, what=WHAT, option="--out",
                          layout=[*LAYOUT, *(f"{n}.tmp" for n in LAYOUT)])  # and an older trainer's temporary names
        for stale in [*out.glob(".*.tmp.*"), *out.glob("*.tmp"), *(out / checkpoint.STATE_DIR).glob(".step-*.tmp")]:
            if _ours(stale.name) or stale.parent.name == checkpoint.STATE_DIR:  # a killed writer's, never published
                outputs.remove_tree(str(stale))
        if tok and not ((out / "tokenizer.json").is_file() and
                        checkpoint.file_sha256(out / "tokenizer.json") == checkpoint.file_sha256(tok)):
            _write_file(out / "tokenizer.json", tok.read_bytes())  # so sample/surprise need only the run directory
    if world > 1:
        dist.barrier()  # rank 0 has cleared (--overwrite) and prepared the output directory

    batches = Prefetcher(loader, device)
    held.callback(batches.close)  # however the run ends
    state["loader"] = checkpoint.JsonState(batches.state_dict)  # the position after the batches used, not prefetched

    flops_per_token, peak = raw.flops_per_token(), peak_flops(device)
    stop = min(cfg.stop_at or cfg.steps, cfg.steps)
    say(f"model: {cfg.model} {mcfg.n_layer}x{mcfg.n_embd}, {raw.num_params():,} parameters (+{raw.embed.weight.numel():,}"
        f" embedding), vocab {train_set.vocab_size:,}; data: {train_set.num_tokens:,} train tokens from {cfg.data}")
    say(f"batch: {cfg.batch_tokens:,} tokens/step = micro_batch {cfg.micro_batch} x seq_len {cfg.seq_len} x "
        f"grad accumulation {accum} x world {world}; {cfg.optimizer}, {cfg.schedule} schedule, steps {step}->{stop}")
    reps, warn = repetition(train_set, cfg.steps, cfg.batch_tokens)  # the whole run, whatever stop_at or resume
    say(reps)
    if warn:
        say(warn)
    say(f"device: {device}{' (' + torch.cuda.get_device_name(device) + ')' if on_cuda else ''}, "
        f"{'bf16 autocast' if use_bf16 else 'fp32'}, compile {'per block' if compile_model else 'off'}, "
        f"{cfg.parallel if world > 1 or (cfg.parallel == 'fsdp' and dist.is_initialized()) else 'one process'}"
        f"{', activation checkpointing' if cfg.activation_checkpointing else ''}")

    # ---- train ---------------------------------------------------------------------------------------------------
    term.in_loop = True  # from here a SIGTERM stops the run at the end of a step, with a checkpoint
    stopping = 0  # the signal every rank has seen by the step just read
    log = MetricsLog(out / "metrics.jsonl", resume_step=step if resume else None) if master else None
    result = RunResult(step=step)
    bar = tqdm(total=stop, initial=step, disable=not (master and cfg.progress), unit="step", dynamic_ncols=True)
    train_time, interval_time, interval_steps, tokens_per_s = 0.0, 0.0, 0, 0.0
    last_beat = time.monotonic()  # with --no-progress: when the last heartbeat line was printed
    # Steps whose loss, grad norm and SIGTERM flag the host has not read yet: (step, lr factor, reader). They are read
    # one step late, while the next step runs, so the loop never waits on the GPU just to look at three numbers.
    unread: deque[tuple[int, float, Callable[[], list[float]]]] = deque()
    model.train()
    while step < stop:
        t0 = time.perf_counter()
        lr_scale = lr_factor(step, cfg)
        set_lr(optimizer, lr_scale)
        loss_sum = torch.zeros((), device=device)
        for micro in range(accum):
            x, y = batches.next_batch()
            # Gradients are reduced only on the last micro-step; before that they just accumulate locally.
            with amp, grad_sync(model, sync=micro == accum - 1):
                loss = model(x, y) / accum
            loss.backward()
            loss_sum += loss.detach()
        all_mean(loss_sum, world)
        # A SIGTERM on any rank, reduced like the loss, so that every rank reads it at the same step and they all
        # stop together (a rank that stopped alone would leave the others waiting in the next collective).
        signalled = torch.full((), float(term.signal), device=device)
        if world > 1:
            dist.all_reduce(signalled, op=dist.ReduceOp.MAX)
        grad_norm = full(torch.nn.utils.clip_grad_norm_(raw.parameters(), cfg.grad_clip or math.inf))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        unread.append((step, lr_scale, host_copy(torch.stack([loss_sum.float(), grad_norm.float(), signalled]))))
        dt = time.perf_counter() - t0
        train_time += dt
        interval_time += dt
        interval_steps += 1

        val_due = val_set is not None and (step % cfg.eval_every == 0 or step == stop)
        if val_due:
            val_loader = Loader(val_set, cfg.seq_len, cfg.micro_batch, seed=cfg.seed, rank=rank, world_size=world)
            result.val_loss = evaluate(raw, val_loader, cfg.eval_batches * accum, device, amp, world)
        ckpt_due = (cfg.ckpt_every and step % cfg.ckpt_every == 0) or step == stop

        # The divergence guard. Every step is checked, one step late; a checkpoint and the end wait until all are.
        # A bad step's update has then been applied in memory, but the run stops before any of it reaches a file,
        # so the last checkpoint on disk stays the last good one.
        while unread and (len(unread) > 1 or ckpt_due or val_due or stopping):
            s, scale, read = unread.popleft()
            loss_value, norm_value, signal_seen = read()
            stopping = stopping or int(signal_seen)  # then every step left is read, and a checkpoint follows
            first_loss = loss_value if first_loss is None else first_loss
            if not (math.isfinite(loss_value) and math.isfinite(norm_value)) or (
                cfg.divergence_factor and loss_value > cfg.divergence_factor * first_loss
            ):
                kept = (f"the last good checkpoint is {saved_at} (step {saved_step})"
                        if saved_at is not None else "no checkpoint was written yet")
                result.diverged = (f"loss diverged at step {s}: loss {loss_value:.4g}, grad norm {norm_value:.4g} "
                                   f"(first loss {first_loss:.4g}, lr {optimizer_lr(cfg, scale):.3g}); stopped, "
                                   f"{kept}. Try a lower lr, more warmup_steps or grad_clip.")
                result.losses.append(loss_value)  # the loss that tripped the guard
                say(result.diverged)
                break
            result.step = s
            result.losses.append(loss_value)
            bar.update(1)
            bar.set_postfix(loss=f"{loss_value:.4f}", lr=f"{optimizer_lr(cfg, scale):.2e}", refresh=False)
            if master and not cfg.progress and time.monotonic() - last_beat >= HEARTBEAT_S:
                last_beat = time.monotonic()
                say(f"step {s}/{stop}: loss {loss_value:.4f}, lr {optimizer_lr(cfg, scale):.2e}, "
                    f"{train_time:.0f} s of training so far")
            with_val = val_due and s == step
            if with_val and master:
                bar.write(f"step {s}: val loss {result.val_loss:.4f}")
            if master and (s % cfg.log_every == 0 or s == stop or with_val):
                if interval_steps:  # else two records were read at once: the second keeps the first's rate
                    tokens_per_s = cfg.batch_tokens * interval_steps / interval_time
                record: dict[str, Any] = {
                    "step": s, "loss": loss_value, "lr": optimizer_lr(cfg, scale), "grad_norm": norm_value,
                    "tokens_per_s": round(tokens_per_s, 1), "tokens": s * cfg.batch_tokens,
                    "mfu": round(flops_per_token * tokens_per_s / (peak * world), 4) if peak else None,
                    "train_time_s": round(train_time, 3),
                    "peak_mem_gib": round(torch.cuda.max_memory_allocated(device) / 2**30, 2) if on_cuda else None,
                }
                if with_val:
                    record["val_loss"] = result.val_loss
                log.write(record)
                interval_time, interval_steps = 0.0, 0
        if result.diverged:
            break
        ckpt_due = ckpt_due or bool(stopping)
        if ckpt_due:
            t_save = time.perf_counter()
            saved_at, saved_step = checkpoint.save(state, out, step), step  # every rank writes its shards
            if master:
                bar.write(f"checkpoint: step {step} -> {saved_at} in {time.perf_counter() - t_save:.1f} s")
            if cfg.export and (cfg.parallel == "ddp" or world == 1 or step == stop):  # FSDP: gathered once, at the end
                weights = checkpoint.full_model_state(model)
                try:
                    agreed(world, lambda w=weights: master and checkpoint.write_export(out / checkpoint.CKPT_NAME, w,
                                                                                       progress()))
                except checkpoint.CheckpointError as e:
                    then = "free space and --resume" if str(e).startswith("disk full") else "--resume continues it"
                    raise checkpoint.CheckpointError(f"{e}; the training state {saved_at} is whole: {then}") from None
            if master and cfg.plots and step != stop and not stopping:  # the final plot is drawn once, below
                plot_run(out / "metrics.jsonl", out)
            if stopping:
                break
    batches.close()
    bar.close()
    metrics_file = out / "metrics.jsonl"
    if master and cfg.plots and metrics_file.is_file() and metrics_file.stat().st_size:
        plot_run(metrics_file, out)
    result.state_bytes = local_bytes(raw, optimizer)
    if stopping and step < stop and not result.diverged:
        result.stopped = stopping
        say(f"stopped by {signal.Signals(stopping).name} at step {step} of {stop}: checkpoint {saved_at}; "
            "--resume continues the run")
    elif master and not result.diverged:
        summary = {"step": step, "loss": result.losses[-1] if result.losses else None, "val_loss": result.val_loss}
        mib = {k: round(v / 2**20, 2) for k, v in result.state_bytes.items()}
        print(f"done: {json.dumps(summary)}; checkpoint {saved_at}"
              + (f", weights {out / checkpoint.CKPT_NAME}" if cfg.export else "")
              + f"; parameters + optimiser state on this rank: {json.dumps(mib)} MiB")
    if world > 1:
        dist.barrier()  # rank 0 may still be writing the checkpoint
    return result


def optimizer_lr(cfg: Config, scale: float) -> float:
    """The learning rate to report: Muon's when it drives the hidden matrices (most of the model), else AdamW's."""
    return (cfg.muon_lr if cfg.optimizer == "muon" else cfg.lr) * scale
