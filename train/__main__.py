"""Command line: `python -m train [--config FILE] [--resume] [--key value ...]` trains; subcommands use a run.

    python -m train --data out/tokens --config train/configs/tiny.toml
    torchrun --nproc_per_node 8 -m train --data out/tokens --config train/configs/gpt2-124m.toml
    python -m train sample --checkpoint runs/x/ckpt.pt --prompt "A capital do Brasil é" --top-k 5
    python -m train surprise --checkpoint runs/x/ckpt.pt --text "A capital do Brasil é Brasília."
    python -m train sweep-lr --data out/tokens --config train/configs/tiny.toml
    python -m train plan --compute 1e19
    torchrun --nproc_per_node 8 -m train --config train/configs/1b.toml --parallel fsdp
    python -m train export runs/x            # the sharded training state -> runs/x/ckpt.pt
    python -m train eval runs/x --heldout wiki=wiki.txt --icl-dir ICL --task copa --task arc_easy:0,10
    python -m train ablate --spec ablation.toml
"""

from __future__ import annotations

import argparse
import errno
import inspect
import math
import os
import re
import sys

from train.config import FIELDS, Config, _convert, load_config, parse_overrides, presets

# Subcommands, as `python -m train --help` lists them (the default, `train`, first).
COMMANDS = {
    "train": "train a model (the default: `python -m train --data TOKENS ...`)",
    "sample": "generate text from a checkpoint",
    "surprise": "per-token surprise of a text under a checkpoint",
    "plan": "model and data size for a compute budget",
    "eval": "held-out bits per byte and in-context tasks of a run",
    "ablate": "train and evaluate curation variants alike",
    "sweep-lr": "short runs at several learning rates",
    "export": "write RUN/ckpt.pt (one weights_only file) from a run's sharded checkpoint",
}


class _Bool(argparse.BooleanOptionalAction):
    """`--key` / `--no-key`, as `curate` spells its switches; `--key true|false` still works like other keys."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.nargs = "?"
        self.metavar = "true|false"

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string.startswith("--no-"):
            if values is not None:
                parser.error(f"{option_string} takes no value")
            setattr(namespace, self.dest, False)
            return
        try:
            setattr(namespace, self.dest, True if values is None else _convert(self.dest, values))
        except ValueError as e:
            parser.error(str(e))


class _Parser(argparse.ArgumentParser):
    """An argument error is one line (`python -m train: error: ...`), not the usage of every config key above it."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _key_help() -> str:
    """Every config key with its default and the comment beside it in `train.config.Config`."""
    comments = dict(re.findall(r"^    (\w+): [^=\n]+=[^#\n]*#\s*(.+)$", inspect.getsource(Config), re.M))
    defaults = Config()
    lines = [f"  --{k:<20} {getattr(defaults, k)!r:<16} {comments.get(k, '')}".rstrip() for k in FIELDS]
    return "config keys (--key value overrides the --config file; default, then what it is):\n" + "\n".join(lines)


def _train_args(argv: list[str], prog: str) -> argparse.Namespace:
    """--config, --resume (and --lrs for the sweep) are flags; every other `--key value` is a config override."""
    commands = "\n".join(f"  {name:<10} {what}" for name, what in COMMANDS.items())
    parser = _Parser(
        prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_key_help(), allow_abbrev=False,
        description=f"Train a GPT on token shards; any config key can be given as --key value.\n\n"
                    f"subcommands (python -m train COMMAND --help):\n{commands}")
    parser.add_argument("--config", help=f"TOML file, or a shipped config by name ({', '.join(presets())})")
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    for key in FIELDS:
        if type(getattr(Config(), key)) is bool:
            spellings = dict.fromkeys([f"--{key}", f"--{key.replace('_', '-')}"])  # as parse_overrides takes them
            parser.add_argument(*spellings, dest=key, action=_Bool, default=None, help=f"config key {key} (a switch)")
    parser.add_argument("--overwrite", action="store_true", help="replace the run already in --out (else refused)")
    if prog.endswith("sweep-lr"):
        parser.add_argument("--lrs", help="comma-separated learning rates (default: the config's lr x 1/100, 1, 10, 300)")
    args, rest = parser.parse_known_args(argv)
    switches = {k: getattr(args, k) for k in FIELDS if getattr(args, k, None) is not None}
    try:
        args.cfg = load_config(args.config, {**parse_overrides(rest), **switches})
        args.cfg.grad_accum(int(os.environ.get("WORLD_SIZE", 1)))  # under torchrun the world is known already
    except (ValueError, OSError) as e:
        parser.error(str(e))
    if args.resume and args.overwrite:
        parser.error("--resume continues the run in --out and --overwrite replaces it: give one of them")
    if not args.cfg.data:
        parser.error("--data (a `curate tokenize` output directory) is required")
    if getattr(args, "lrs", None):
        try:
            args.lrs = [float(x) for x in args.lrs.split(",")]
        except ValueError:
            parser.error(f"--lrs {args.lrs!r}: expected comma-separated numbers")
        if not all(math.isfinite(x) and x >= 0 for x in args.lrs):
            parser.error(f"--lrs {args.lrs}: learning rates must be finite and >= 0")
    return args



def _sample_args_error(args) -> str | None:
    """Why `train sample`'s numbers make no sample (checked before the checkpoint is loaded), or None."""
    import math

    if not math.isfinite(args.temperature) or args.temperature < 0:
        return f"--temperature must be a finite number >= 0 (0: greedy), got {args.temperature}"
    for flag, value, low in (("--max-new-tokens", args.max_new_tokens, 0), ("--top-k", args.top_k, 0),
                             ("--num-samples", args.num_samples, 1)):
        if value < low:
            return f"{flag} must be >= {low}, got {value}"
    return None

def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv and not argv[0].startswith("-") else "train"
    rest = argv[1:] if command != "train" or (argv and argv[0] == "train") else argv

    if command in ("train", "sweep-lr"):
        prog = "python -m train" + (" sweep-lr" if command == "sweep-lr" else "")
        args = _train_args(rest, prog)
        import torch.distributed as dist

        from curate.core.errors import UsageError
        from curate.models.checkpoint import CheckpointError
        from curate.models.device import DeviceError
        from train.ablate.sweep import sweep_lr
        from train.checkpoint import ResumeError
        from train.config import ConfigError
        from train.data import TokenDataError
        from train.loop import train

        try:
            if command == "train":
                results = [train(args.cfg, resume=args.resume, overwrite=args.overwrite)]
            else:
                results = list(sweep_lr(args.cfg, args.lrs).values())
        except (FileNotFoundError, TokenDataError, ResumeError, CheckpointError, DeviceError, ConfigError,
                UsageError) as e:  # the user's input, the output folder, a checkpoint: one line
            print(f"{prog}: error: {e}", file=sys.stderr)
            return 2
        except OSError as e:
            if e.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            print(f"{prog}: error: disk full writing {e.filename or args.cfg.out} ({e.strerror}); "
                  f"the last checkpoint in {args.cfg.out} is intact: free space and --resume", file=sys.stderr)
            return 2
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
        stopped = next((r.stopped for r in results if r.stopped), 0)
        if stopped:  # SIGTERM: stopped at the end of a step, checkpointed; the shell's code for the signal
            return 128 + stopped
        return 1 if command == "train" and results[0].diverged else 0

    if command in ("sample", "surprise"):
        parser = argparse.ArgumentParser(prog=f"python -m train {command}")
        parser.add_argument("--checkpoint", required=True, help="ckpt.pt or the run directory holding it")
        parser.add_argument("--device", default="cpu")
        if command == "sample":
            parser.add_argument("--prompt", default="")
            parser.add_argument("--max-new-tokens", type=int, default=64)
            parser.add_argument("--temperature", type=float, default=1.0, help="0: the most likely token (greedy)")
            parser.add_argument("--top-k", type=int, default=50, help="0: no top-k cut (above the vocabulary: all)")
            parser.add_argument("--num-samples", type=int, default=1)
            parser.add_argument("--seed", type=int, default=0)
        else:
            parser.add_argument("--text", required=True)
        args = parser.parse_args(rest)
        if command == "sample":
            bad = _sample_args_error(args)
            if bad:
                print(f"python -m train sample: error: {bad}", file=sys.stderr)
                return 2
        from curate.models.checkpoint import CheckpointError, load_checkpoint
        from train.generate import format_surprise, next_token_candidates, sample, surprise

        try:
            run = load_checkpoint(args.checkpoint, args.device)
        except (FileNotFoundError, CheckpointError) as e:
            print(f"python -m train {command}: error: {e}", file=sys.stderr)
            return 2
        if command == "surprise":
            print(format_surprise(surprise(run, args.text)))
            return 0
        top = next_token_candidates(run, args.prompt, k=args.top_k or 5)
        print(f"step {run.step}; next token after the prompt: " + ", ".join(f"{t!r} {p:.1%}" for t, p in top))
        for i in range(args.num_samples):
            text = sample(run, args.prompt, args.max_new_tokens, args.temperature, args.top_k, seed=args.seed + i)
            print(f"--- sample {i + 1}\n{args.prompt}{text}")
        return 0

    if command == "plan":
        parser = argparse.ArgumentParser(prog="python -m train plan")
        parser.add_argument("--compute", type=float, required=True, help="training FLOPs, e.g. 1e19")
        parser.add_argument("--tokens-per-param", type=float, default=20.0)
        parser.add_argument("--epochs", type=float, default=1.0, help="passes over the curated data (<= 4 is cheap)")
        parser.add_argument("--batch-tokens", type=int, default=524288)
        parser.add_argument("--mfu", type=float, default=0.4)
        parser.add_argument("--world", type=int, default=8, help="GPUs, for the memory per GPU under DDP and FSDP")
        parser.add_argument("--optimizer", choices=["adamw", "muon"], default="adamw")
        args = parser.parse_args(rest)
        from train.plan import format_plan, plan

        try:
            p = plan(args.compute, args.tokens_per_param, args.epochs, args.batch_tokens, args.mfu,
                     world=args.world, optimizer=args.optimizer)
        except ValueError as e:
            parser.error(str(e))
        print(format_plan(p, args.tokens_per_param, args.epochs))
        return 0

    if command == "export":  # the sharded training state -> RUN/ckpt.pt, the single file sample/eval read
        parser = argparse.ArgumentParser(prog="python -m train export")
        parser.add_argument("run", help="a run directory (its checkpoint/ is read, RUN/ckpt.pt written)")
        args = parser.parse_args(rest)
        from curate.core.errors import UsageError
        from curate.models.checkpoint import CheckpointError
        from train.checkpoint import export

        try:
            print(f"wrote {export(args.run)}")
        except (FileNotFoundError, CheckpointError, UsageError) as e:  # UsageError: a trainer holds the run
            print(f"python -m train export: error: {e}", file=sys.stderr)
            return 2
        return 0

    if command == "eval":  # held-out bits per byte and in-context tasks (docs/evaluation.md)
        from train.evaluate.cli import main as eval_main

        return eval_main(rest)
    if command == "ablate":  # curation variants trained and evaluated alike (docs/ablation.md)
        from train.ablate.stages import main as ablate_main

        return ablate_main(rest)

    print(f"unknown command {command!r}; use {', '.join(COMMANDS)} (python -m train --help lists them)",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
