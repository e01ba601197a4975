"""Parameter + optimiser memory per rank under DDP and FSDP2, measured from the tensors each rank holds.

Two gloo processes on this CPU (127.0.0.1, a free port) train a model of the given preset for a few steps with each
`--parallel` (and one process alone), on token shards of real web text (a 1,024-token BPE, so the embedding is small
and the blocks dominate). Each rank reports `RunResult.state_bytes` (its parameters and its optimiser state: shards
under FSDP, whole replicas under DDP), its peak RSS (ru_maxrss: includes `import torch` and the activations) and the
time of its last step; the table goes to stdout and the numbers to `--out` (JSON). Gradients are not in
state_bytes (they are freed each step), but they follow the parameters: 4 bytes a parameter, sharded alike.

    nice .venv/bin/python benchmarks/fsdp_memory.py --model gpt2-124m --optimizer adamw --out /tmp/fsdp_memory.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from _data import DATA, ROOT

WEB = DATA / "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"


def rank_main(tokens: str, out: str, model: str, parallel: str, optimizer: str, steps: int) -> None:
    import torch

    from train.config import load_config
    from train.loop import train

    torch.set_num_threads(1)
    cfg = load_config(None, {"model": model, "data": tokens, "out": out, "steps": steps, "warmup_steps": 1,
                             "seq_len": 64, "micro_batch": 1, "batch_tokens": 64 * int(os.environ.get("WORLD_SIZE", 1)),
                             "eval_every": 0, "ckpt_every": 0, "export": False, "progress": False, "plots": False,
                             "optimizer": optimizer, "parallel": parallel, "log_every": 1})
    result = train(cfg)
    record = {"rank": int(os.environ.get("RANK", 0)), "state_bytes": result.state_bytes,
              "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    Path(out, f"rank{record['rank']}.json").write_text(json.dumps(record))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(world: int, tokens: Path, out: Path, args) -> list[dict]:
    port, procs = free_port(), []
    for rank in range(world):
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        if world > 1:
            env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                       LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world))
        cmd = [sys.executable, __file__, "--rank-of", str(tokens), str(out), args.model, out.name.split("-")[0],
               args.optimizer, str(args.steps)]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL))
    for p in procs:
        if p.wait() != 0:
            sys.exit(f"fsdp_memory: a rank of {out.name} failed")
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--rank-of":
        rank_main(*sys.argv[2:7], int(sys.argv[7]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="gpt2-124m")
    parser.add_argument("--optimizer", default="adamw", choices=["adamw", "muon"])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("/tmp/fsdp_memory.json"))
    args = parser.parse_args()
    from curate.tokens.tokenize import build_token_shards

    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens"
        build_token_shards(WEB, tokens, vocab_size=1024)
        runs = {}
        for name, world in (("ddp-1", 1), ("ddp-2", 2), ("fsdp-2", 2)):
            runs[name] = launch(world, tokens, Path(tmp) / name, args)
    mib = lambda b: b / 2**20  # noqa: E731
    print(f"{args.model}, {args.optimizer}, seq_len 64 x micro_batch 1, {args.steps} steps; per rank:")
    print("| run | ranks | parameters MiB | optimiser state MiB | params + optimiser MiB | peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for name, ranks in runs.items():
        for r in ranks:
            b = r["state_bytes"]
            print(f"| {name} | {r['rank']} | {mib(b['params']):.1f} | {mib(b['optimizer']):.1f} | "
                  f"{mib(b['params'] + b['optimizer']):.1f} | {r['peak_rss_mib']:.0f} |")
    args.out.write_text(json.dumps({"model": args.model, "optimizer": args.optimizer, "steps": args.steps,
                                    "runs": runs, "root": str(ROOT)}, indent=1))
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()
