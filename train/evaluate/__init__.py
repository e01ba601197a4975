"""`python -m train eval`: held-out bits per byte and in-context tasks for one or more checkpoints.

    python -m train eval runs/a runs/b --heldout wiki=data/wiki.txt --heldout web=data/web.jsonl.gz \
        --icl-dir ../shared/data/benchmarks/llm_foundry_icl --task copa --task arc_easy:0,10 --out eval/

heldout.py defines the held-out measure, icl.py the tasks and their scores, scoring.py the batched log-likelihood
both rest on, report.py the JSON, the Markdown tables and the plot. Everything runs in eval mode in fp32, in a fixed
order, so the same checkpoint and inputs give the same numbers on every run.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from curate.models.checkpoint import load_checkpoint
from train.evaluate.heldout import HeldoutSet, bits_per_byte
from train.evaluate.icl import Task, evaluate_task, primary


def bar(enabled: bool, desc: str, total: int | None, unit: str):
    """A tqdm bar on stderr, or one that shows nothing (`--no-progress`)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, unit_scale=unit == "B", disable=not enabled, leave=False,
                file=sys.stderr, dynamic_ncols=True)


@dataclass
class EvalPlan:
    heldout: list[HeldoutSet] = field(default_factory=list)
    tasks: list[tuple[Task, list[int]]] = field(default_factory=list)  # a task and its numbers of shots
    limit: int | None = None  # examples per task
    seed: int = 1234  # picks the shots
    batch_size: int = 32


def checkpoint_info(path: str | Path) -> dict:
    """Step and training tokens of a checkpoint, read without loading its tensors into memory."""
    path = Path(path)
    file = path / "ckpt.pt" if path.is_dir() else path
    state = torch.load(file, map_location="cpu", weights_only=True, mmap=True)
    return {"checkpoint": str(path), "step": state["step"], "tokens": state["step"] * state["config"]["batch_tokens"],
            "seed": state["config"].get("seed"), "data": state["config"].get("data")}


def evaluate(path: str | Path, plan: EvalPlan, device: str = "cpu", progress: bool = False) -> dict:
    """Every held-out set and task of the plan on one checkpoint. With `progress`, a bar per set and task on
    stderr (bytes scored, examples scored): an evaluation can take many minutes on a loaded CPU."""
    run = load_checkpoint(path, device)
    result = {**checkpoint_info(path), "heldout": [], "tasks": []}
    for hs in plan.heldout:
        with bar(progress, f"eval {hs.name}", hs.max_bytes, "B") as b:
            result["heldout"].append(bits_per_byte(run, hs, plan.batch_size, b.update))
    for task, shots in plan.tasks:
        for k in shots:
            n = len(task.examples) if plan.limit is None else min(plan.limit, len(task.examples))
            with bar(progress, f"eval {task.name} {k}-shot", n, "ex") as b:
                result["tasks"].append(evaluate_task(run, task, k, plan.seed, plan.limit, plan.batch_size, b.update))
    scores = [primary(t) for t in result["tasks"]]
    raw = [t["acc_centred"] for t in result["tasks"]]
    result["aggregate"] = {"centred": sum(scores) / len(scores) if scores else None,
                           "centred_raw": sum(raw) / len(raw) if raw else None, "entries": len(scores)}
    return result
