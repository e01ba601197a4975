"""The `python -m train eval` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from train.evaluate import EvalPlan, evaluate
from train.evaluate.heldout import parse_set
from train.evaluate.icl import load_task, parse_spec
from train.evaluate.report import markdown, write


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train eval",
                                description="Held-out bits per byte and in-context task accuracy of checkpoints.")
    p.add_argument("checkpoints", nargs="+", help="ckpt.pt files or run directories")
    p.add_argument("--heldout", action="append", default=[], metavar="[NAME=]PATH",
                   help="held-out text: JSONL, Parquet, plain text, a run output or a token directory (repeatable)")
    p.add_argument("--max-docs", type=int, default=None, help="documents per held-out set (default: all)")
    p.add_argument("--max-bytes", action="append", default=[], metavar="[NAME=]N",
                   help="UTF-8 bytes per held-out set: N for every set, NAME=N for one (repeatable; default: all)")
    p.add_argument("--task", action="append", default=[], metavar="NAME_OR_PATH[:K,K]",
                   help="an in-context task and its numbers of shots, e.g. copa, arc_easy:0,10 (repeatable)")
    p.add_argument("--icl-dir", default=None, help="directory of the llm-foundry task files (NAME.jsonl)")
    p.add_argument("--shots", default="0", help="shots for tasks given without :K (default 0)")
    p.add_argument("--limit", type=int, default=None, help="first N examples of each task (default: all)")
    p.add_argument("--seed", type=int, default=1234, help="picks the few-shot examples")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto")
    p.add_argument("--name", action="append", default=None, help="a label per checkpoint for the tables")
    p.add_argument("--no-progress", action="store_true", help="no progress bars (they go to stderr)")
    p.add_argument("--out", default=None, help="write eval.json, eval.md (and eval.png for several checkpoints) here")
    return p


def plan_from_args(args: argparse.Namespace) -> EvalPlan:
    plan = EvalPlan(heldout=[parse_set(s, args.max_docs) for s in args.heldout],
                    limit=args.limit, seed=args.seed, batch_size=args.batch_size)
    apply_max_bytes(plan.heldout, args.max_bytes)
    default_shots = [int(k) for k in args.shots.split(",")]
    for spec in args.task:
        name, path, shots = parse_spec(spec, args.icl_dir, default_shots)
        plan.tasks.append((load_task(name, path), shots))
    return plan


def check_inputs(args: argparse.Namespace) -> None:
    """Every checkpoint readable and `--icl-dir` a folder, before anything is evaluated: a wrong second checkpoint
    was reported only after the first model had been evaluated (issue 35.5). The tasks and held-out sets are read
    by `plan_from_args`, also before the first model."""
    from train.evaluate import checkpoint_info

    if args.icl_dir is not None and not Path(args.icl_dir).is_dir():
        raise FileNotFoundError(f"--icl-dir {args.icl_dir}: no such folder (it holds the task files, NAME.jsonl)")
    for c in args.checkpoints:
        path = Path(c)
        file = path / "ckpt.pt" if path.is_dir() else path
        if not path.exists():
            raise FileNotFoundError(f"checkpoint {c}: no such file or run folder")
        if not file.is_file():
            raise FileNotFoundError(f"checkpoint {c}: a folder without ckpt.pt (a run still training exports it at its "
                                    f"end; python -m train export {c} writes it from the latest checkpoint)")
        try:
            checkpoint_info(path)
        except Exception as e:  # not a checkpoint of ours, or a damaged one: named before any work
            raise ValueError(f"checkpoint {c} cannot be read ({type(e).__name__}: {e})") from None


def apply_max_bytes(sets: list, limits: list[str]) -> None:
    """`--max-bytes N` caps every set, `--max-bytes NAME=N` one set (and wins over N): a mixed-language set may need
    more bytes than the others to show its split."""
    named = {}
    for item in limits:
        name, eq, value = item.rpartition("=")
        try:
            n = int(float(value))
        except ValueError:
            raise ValueError(f"--max-bytes {item!r}: expected N or NAME=N") from None
        named[name if eq else "*"] = n
    unknown = set(named) - {"*"} - {h.name for h in sets}
    if unknown:
        raise ValueError(f"--max-bytes names sets that are not held out: {sorted(unknown)}")
    for h in sets:
        h.max_bytes = named.get(h.name, named.get("*"))


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.heldout and not args.task:
        parser.error("give at least one --heldout set or --task")
    if args.name and len(args.name) != len(args.checkpoints):
        parser.error(f"{len(args.name)} --name for {len(args.checkpoints)} checkpoints")
    try:
        check_inputs(args)  # every path and spec, before the first model is loaded
        plan = plan_from_args(args)
        results = [evaluate(c, plan, args.device, progress=not args.no_progress) for c in args.checkpoints]
    except (FileNotFoundError, ValueError) as e:  # the user's input: one line, not a traceback
        print(f"python -m train eval: error: {e}", file=sys.stderr)
        return 2
    print(markdown(results, args.name), end="")
    if args.out:
        for f in write(results, Path(args.out), args.name):
            print(f"wrote {f}")
    return 0
