"""Checkpoints: the training state, sharded, written so a crash never leaves a torn one; and the single-file export.

Writing both and resuming live here; reading an export (and the model and tokenizer it names) is
`curate.models.checkpoint`'s, the one reader curation and the trainer share.

Two kinds, for two readers:

* **The training state** (`OUT/checkpoint/step-NNNNNNNN/`), for `--resume`: one mapping of stateful components
  (model, optimisers, loader, RNG, progress + config), saved through `torch.distributed.checkpoint` (DCP): every rank
  writes its own shards in parallel, no gather to one process. Tensors are stored by parameter name and global
  shape, so the state loads onto another world size, and from DDP to FSDP and back. The small components are JSON
  text (world-size free). Atomic: the directory is written under a temporary name, checksummed, renamed, and only
  then named in `OUT/checkpoint/latest`; a kill at any moment leaves the previous state in force.
* **The export** (`OUT/ckpt.pt`), for `sample`, `surprise`, `eval` and users: the full model weights and what is
  needed to use them, one file, loaded with `torch.load(weights_only=True)` only (tensors and plain values, never
  pickled objects, so a downloaded `ckpt.pt` cannot run code). Written at each checkpoint under DDP (every rank
  holds the whole model anyway), at the end of an FSDP run, and by `python -m train export RUN`.

Both carry a checksum: a bit flipped on disk is an error naming the file, never weights silently different.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import shutil
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.state_dict import (
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)

from curate.models.checkpoint import CKPT_NAME, CheckpointError, digest, file_sha256

STATE_DIR = "checkpoint"  # the sharded training state: STATE_DIR/step-NNNNNNNN/ and STATE_DIR/latest
CHECKSUMS = "checksums.json"
FULL = 1 << 20  # a filesystem with less than this free after a failed write is taken for a full one


class ResumeError(ValueError):
    """A checkpoint that this run cannot continue (another global batch, sequence length or model)."""


# ---------------------------------------------------------------------------------------------- components


class ModelState:
    """The model's weights by parameter name, whatever the wrapping (plain, DDP, FSDP: DTensor shards)."""

    def __init__(self, model: torch.nn.Module):
        self.model = model

    def state_dict(self) -> dict[str, Any]:
        return get_model_state_dict(self.model)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        set_model_state_dict(self.model, state)


class OptimizerState:
    """Every optimiser's state by parameter name. On load, the moment estimates come from the checkpoint and the
    hyperparameters (lr, weight decay, betas, momentum) from this run's config: a changed `--lr` on `--resume`
    takes effect (the loop names each change), instead of being overwritten by the saved param groups."""

    def __init__(self, model: torch.nn.Module, optimizer: Any):
        self.model, self.optimizers = model, list(optimizer.optimizers)

    def state_dict(self) -> dict[str, Any]:
        return get_optimizer_state_dict(self.model, self.optimizers)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        ours = [[{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups] for opt in self.optimizers]
        set_optimizer_state_dict(self.model, self.optimizers, state)
        for opt, groups in zip(self.optimizers, ours, strict=True):
            for group, hyper in zip(opt.param_groups, groups, strict=True):
                group.update(hyper)


class JsonState:
    """A small component (loader position, RNG states, progress and config) as one JSON string: the same on every
    rank and independent of the world size, so DCP stores it once and any world can load it."""

    def __init__(self, get, put=None):
        self.get, self.put = get, put

    def state_dict(self) -> dict[str, str]:
        return {"json": json.dumps(self.get())}

    def load_state_dict(self, state: dict[str, str]) -> None:
        if self.put is not None:
            self.put(json.loads(state["json"]))


# ---------------------------------------------------------------------------------------------- RNG


def rng_state() -> dict[str, Any]:
    """This process's RNG states as plain numbers (JSON and weights_only alike)."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    version, mt, gauss_next = random.getstate()
    state = {
        "python": {"version": version, "state": list(mt), "gauss_next": gauss_next},
        "numpy": {"kind": kind, "keys": keys.astype(np.int64).tolist(), "pos": int(pos), "has_gauss": int(has_gauss),
                  "cached_gaussian": float(gauss)},
        "torch": torch.get_rng_state().tolist(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state().tolist()  # this process's own device only (each rank saves its own)
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore `rng_state()`."""
    py = state["python"]
    random.setstate((py["version"], tuple(py["state"]), py["gauss_next"]))
    npy = state["numpy"]
    keys = np.array(npy["keys"], dtype=np.int64).astype(np.uint32)
    np.random.set_state((npy["kind"], keys, npy["pos"], npy["has_gauss"], npy["cached_gaussian"]))
    torch.set_rng_state(torch.tensor(state["torch"], dtype=torch.uint8))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(torch.tensor(state["cuda"], dtype=torch.uint8))


def rng_states(world: int) -> list[dict[str, Any]]:
    """Every rank's `rng_state()`, in rank order (a collective when world > 1: all ranks must call it)."""
    mine = rng_state()
    if world == 1:
        return [mine]
    states: list[Any] = [None] * world
    dist.all_gather_object(states, mine)
    return states


def restore_rng(states: list[dict[str, Any]], rank: int, world: int, seed: int) -> bool:
    """Give this rank the RNG state it saved. After a change of world size there is no saved state to match each
    rank, so every rank is reseeded from (seed, rank) instead; returns whether the saved state was restored."""
    if len(states) == world:
        set_rng_state(states[rank])
        return True
    seed_rank(seed, rank)
    return False


def seed_rank(seed: int, rank: int) -> None:
    """Seed Python's, NumPy's and torch's generators for this rank: a stream of its own, reproducible from the seed."""
    torch.manual_seed(seed + 1 + rank)
    np.random.seed(seed + 1 + rank)
    random.seed(seed + 1 + rank)


# ---------------------------------------------------------------------------------------------- sharded state


def _world() -> tuple[int, int]:
    return (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)


def _barrier() -> None:
    if dist.is_initialized():
        dist.barrier()


def _dcp(call, state: dict[str, Any], path: Path) -> Any:
    """dcp.save or dcp.load; in one process without a process group (a use DCP supports) without its warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "torch.distributed is disabled, unavailable or uninitialized", UserWarning)
        return call(state, checkpoint_id=path, no_dist=not dist.is_initialized())


def latest(out: str | Path) -> Path | None:
    """The training state `--resume` continues from: the directory `OUT/checkpoint/latest` names, if any."""
    pointer = Path(out) / STATE_DIR / "latest"
    if not pointer.is_file():
        return None
    path = pointer.parent / pointer.read_text().strip()
    if not path.is_dir():
        raise CheckpointError(f"{pointer} names {path.name}, which is missing: the checkpoint was moved or deleted")
    return path


def agree(problem: str) -> str:
    """The first rank's problem (a one-line message, "" for none), on every rank: a collective under a process
    group, so that a failure on one rank stops all of them with the same line instead of leaving the others
    waiting in the next collective."""
    _, world = _world()
    if world == 1:
        return problem
    problems: list[Any] = [None] * world
    dist.all_gather_object(problems, problem)
    return next((p for p in problems if p), "")


def _errors(e: BaseException):
    """`e`, what caused it, and for DCP's CheckpointException every rank's own exception."""
    seen, todo = set(), [e]
    while todo:
        x = todo.pop()
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        todo += [x.__cause__, x.__context__]
        if isinstance(x, CheckpointException):
            todo += [exc for exc, _ in x.failures.values()]


def _free(path: Path) -> int:
    """Bytes free to this user on the filesystem holding `path` (its nearest existing parent)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return -1


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def write_problem(e: BaseException, path: Path) -> str:
    """One line for a failure to write `path`. A full disk rarely says so: PyTorch's zip writer reports the short
    write as "unexpected pos 704 vs 598", so a filesystem left with (almost) nothing free counts as full too."""
    errors = list(_errors(e))
    free = _free(path)
    if any(isinstance(x, OSError) and x.errno in (errno.ENOSPC, errno.EDQUOT) for x in errors) or 0 <= free < FULL:
        return f"disk full writing {path} ({_size(free)} free)"
    cause = next((x for x in reversed(errors) if not isinstance(x, CheckpointException)), e)
    reason = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
    return f"could not write {path}: {type(cause).__name__}" + (f": {reason}" if reason else "")


def save(state: dict[str, Any], out: str | Path, step: int) -> Path:
    """Write the mapping of components from every rank (a collective) as OUT/checkpoint/step-NNNNNNNN, then make it
    the latest and remove the earlier ones. Rank 0 publishes: checksums, rename, pointer, in that order.

    A failure (a full disk, most often) on any rank is one CheckpointError on every rank naming the checkpoint; the
    temporary directory is removed and `latest` still names the previous state, whole, for --resume."""
    root = Path(out) / STATE_DIR
    final, tmp = root / f"step-{step:08d}", root / f".step-{step:08d}.tmp"
    rank, _ = _world()
    published = False

    def attempt(call) -> str:
        try:
            call()
        except (OSError, RuntimeError, CheckpointException) as e:  # DCP's exception is a BaseException
            return write_problem(e, final)
        return ""

    def start() -> None:
        shutil.rmtree(tmp, ignore_errors=True)  # a killed earlier attempt
        tmp.mkdir(parents=True)

    def publish() -> None:
        nonlocal published
        sums = {f.name: {"bytes": f.stat().st_size, "sha256": file_sha256(f)} for f in sorted(tmp.iterdir())}
        with open(tmp / CHECKSUMS, "w") as f:
            json.dump(sums, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        shutil.rmtree(final, ignore_errors=True)  # a state of this step left by a run killed before its pointer moved
        os.replace(tmp, final)
        _write_atomic(root / "latest", final.name)
        published = True
        for old in root.glob("step-*"):
            if old != final:
                shutil.rmtree(old, ignore_errors=True)

    try:
        problem = agree(attempt(start) if rank == 0 else "")
        if not problem:
            problem = agree(attempt(lambda: _dcp(dcp.save, state, tmp)))  # every rank writes its shards
        if not problem:
            problem = agree(attempt(publish) if rank == 0 else "")
    finally:
        if rank == 0 and not published:  # failed or interrupted: nothing of this attempt stays on the disk
            shutil.rmtree(tmp, ignore_errors=True)
            pointer = root / "latest"
            if final.is_dir() and not (pointer.is_file() and pointer.read_text().strip() == final.name):
                shutil.rmtree(final, ignore_errors=True)
    if problem:
        raise CheckpointError(f"{problem}; {_still_there(out, problem)}")
    return final


def _still_there(out: str | Path, problem: str) -> str:
    """What a failed save leaves to resume from, and what to do."""
    kept = latest(out)
    then = "free space and --resume" if problem.startswith("disk full") else "--resume continues from it"
    return f"the previous checkpoint {kept} is intact: {then}" if kept else "no checkpoint of this run was written yet"


def _write_atomic(path: Path, text: str) -> None:
    tmp = temp_name(path)
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def verify(path: Path) -> None:
    """Check every file of a saved state against its checksum; the work is shared among the ranks (a collective),
    and every rank raises the same one-line CheckpointError if any file is missing, short or altered."""
    rank, world = _world()
    problem = ""
    listing = path / CHECKSUMS
    if not listing.is_file():
        problem = f"{path} is not a complete checkpoint (no {CHECKSUMS}): it was not written by this trainer"
    else:
        sums = json.loads(listing.read_text())
        for name in sorted(sums)[rank::world]:
            f = path / name
            if not f.is_file():
                problem = f"{path} is incomplete: {name} is missing (one of {len(sums)} files)"
            elif f.stat().st_size != sums[name]["bytes"]:
                problem = f"{f}: {f.stat().st_size} bytes, {sums[name]['bytes']} written (truncated?)"
            elif file_sha256(f) != sums[name]["sha256"]:
                problem = f"{f} does not match its checksum: the file is corrupt"
            if problem:
                break
    if world > 1:
        problems: list[Any] = [None] * world
        dist.all_gather_object(problems, problem)
        problem = next((p for p in problems if p), "")
    if problem:
        raise CheckpointError(problem + "; resume from an intact copy or start a new run (--overwrite)")


def _load(state: dict[str, Any], path: Path) -> None:
    """dcp.load, its failure (on any rank: DCP gathers them) one CheckpointError naming the checkpoint."""
    try:
        _dcp(dcp.load, state, path)
    except CheckpointException as e:
        cause = next((x for x in _errors(e) if not isinstance(x, CheckpointException)), e)
        reason = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        raise CheckpointError(f"{path} could not be loaded: {reason}") from None


def read_json(path: Path, *names: str) -> dict[str, Any]:
    """The JSON components `names` of a saved state (a collective under a process group)."""
    state = {name: {"json": ""} for name in names}
    _load(state, path)
    return {name: json.loads(state[name]["json"]) for name in names}


def load_state(path: Path, state: dict[str, Any]) -> None:
    """Load a saved state into the mapping of components (a collective), resharding to this run's layout."""
    _load(state, path)


# ---------------------------------------------------------------------------------------------- export


def temp_name(path: Path) -> Path:
    """The temporary file `path` is written as before its rename: hidden, and unique to this process, so two writers
    never share one (`.NAME.tmp.PID`, a name `curate.io.outputs.clear` counts as NAME's)."""
    return path.with_name(f".{path.name}.tmp.{os.getpid()}")


def save_atomic(state: dict[str, Any], path: Path) -> None:
    """Write to a temporary file in the same directory, fsync, then rename over the old file: the rename is atomic,
    so a kill at any moment leaves either the previous file or the new one, never half of one. A failure (a full
    disk) is one CheckpointError naming `path`; the temporary file is removed and the previous file stays."""
    tmp = temp_name(path)
    try:
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except (OSError, RuntimeError) as e:
        problem = write_problem(e, path)  # before the partial file is removed: the space it took counts as used
        tmp.unlink(missing_ok=True)
        kept = f"the previous {path.name} is intact" if path.is_file() else f"no {path.name} was written"
        raise CheckpointError(f"{problem}; {kept}") from e
    except BaseException:
        tmp.unlink(missing_ok=True)  # a kill mid-write must not leave a half file behind
        raise


def write_export(path: Path, model_state: dict[str, torch.Tensor], progress: dict[str, Any]) -> None:
    """The single-file checkpoint: full weights on the CPU, the progress record (step, config, model_config, eos_id,
    tokenizer: its sha256 names the tokenizer the weights belong to) and their checksum."""
    state = {"model": {k: v.detach().cpu() for k, v in model_state.items()}, **progress}
    state["sha256"] = digest(state)
    save_atomic(state, path)


def full_model_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The whole model's weights on rank 0's CPU, gathered shard by shard under FSDP (a collective)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def export(run: str | Path) -> Path:
    """`python -m train export RUN`: the latest training state of RUN written as RUN/ckpt.pt, in one process (the
    shards of any world size are read back into the full weights)."""
    from curate.io.outputs import locked
    from curate.models.gpt import GPT, GPTConfig

    run = Path(run)
    if latest(run) is None:
        raise FileNotFoundError(f"{run} holds no training state ({STATE_DIR}/latest): nothing to export")
    with locked(str(run), what="`python -m train export`"):  # not while a trainer writes RUN/ckpt.pt itself
        path = latest(run)
        verify(path)
        progress = read_json(path, "progress")["progress"]
        with torch.device("cpu"):
            model = GPT(GPTConfig(**progress["model_config"]))
        weights = model.state_dict()
        _load({"model": weights}, path)
        write_export(run / CKPT_NAME, weights, progress)
    return run / CKPT_NAME


def data_fingerprint(manifest: dict[str, Any]) -> str:
    """The identity of a token directory's training data, wherever it lies (a moved copy, a URL): sha256 of the
    manifest's train split (its shards, their token and document counts, sources and checksums) and tokenizer."""
    key = {"train": manifest.get("splits", {}).get("train"), "tokenizer": (manifest.get("tokenizer") or {}).get("sha256"),
           "dtype": manifest.get("dtype"), "vocab_size": manifest.get("vocab_size")}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def progress_record(step: int, first_loss: float | None, world: int, cfg: Any, mcfg: Any, eos_id: int,
                    tokenizer: Any, data: str | None = None) -> dict[str, Any]:
    """What a checkpoint says about its run, in both kinds: plain values only. `tokenizer` is the token manifest's
    entry (its sha256 names the tokenizer), `data` the training data's `data_fingerprint`."""
    return {"step": step, "first_loss": first_loss, "world_size": world, "config": cfg.to_dict(),
            "model_config": asdict(mcfg), "eos_id": eos_id, "tokenizer": tokenizer, "data_fingerprint": data}
