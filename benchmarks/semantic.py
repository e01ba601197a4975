"""dedup.Semantic, what it costs: (1) the embed phase's documents/s per core with the tests' tiny encoder (a BERT
layout, 2 layers, 64 wide, 64 positions: what the tests build, random weights) and with a BERT-small-shaped one
(4 layers, 512 wide, 512 positions), on real web text; (2) the grouping phases (k-means, assign, pairs, filter)
against corpus size on synthetic embeddings (N x 256, 5% planted near-copies), each size in a fresh process for its
peak RSS (the synthetic shards are written by another process first, so the peak is the step's and its imports').

    .venv/bin/python benchmarks/semantic.py [--docs 256] [--sizes 25000,50000,100000,200000] [--dim 256] [--json]

One torch thread, one faiss thread, one worker: figures per CPU second of the process (what a core delivers,
whatever the machine's load) and wall seconds per phase. `--json` writes benchmarks/semantic.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "tests"))  # the tests' tiny-model helpers


def web_docs(n: int) -> list[str]:
    out = []
    for f in sorted((SHARED / "text" / "web_cc").glob("*.jsonl.gz")):
        with gzip.open(f, "rt") as fh:
            out += [json.loads(line)["text"] for line in fh]
    return [t for t in out if len(t) >= 200][:n]


def encoder(work: Path, wide: bool) -> Path:
    import torch
    from _models import bpe, clean_texts, hf_encoder, hf_tokenizer
    from transformers import BertConfig, BertModel

    tok = bpe(clean_texts(SHARED)[:2000], vocab=4096)
    if not wide:
        return hf_encoder(tok, work / "tiny")
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
                     intermediate_size=2048, max_position_embeddings=512, pad_token_id=1)
    BertModel(cfg).save_pretrained(work / "small")
    hf_tokenizer(tok).save_pretrained(work / "small")
    return work / "small"


def embed_rate(n: int) -> list[dict]:
    """Documents (and tokens) per CPU second of the step's embed call, per encoder shape."""
    import torch

    from curate.core.stats import Throughput
    from curate.dedup.semantic import normalise
    from curate.models import ModelSpec
    from curate.models.inference import get_model

    torch.set_num_threads(1)
    texts = web_docs(n)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for wide in (False, True):
            model = get_model(ModelSpec(str(encoder(Path(tmp), wide)), task="embed", device="cpu"))
            model.embed(texts[:8])  # warm
            counter = Throughput()
            c0, w0 = time.process_time(), time.perf_counter()
            normalise(model.embed(texts, 512, counter))
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            rows.append({"encoder": "BERT-small shape (4x512, 512 positions)" if wide else "tests' tiny (2x64, 64 positions)",
                         "docs": len(texts), "tokens": counter["tokens"], "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
                         "docs_per_cpu_s": round(len(texts) / cpu, 1), "tokens_per_cpu_s": round(counter["tokens"] / cpu)})
    return rows


def synthetic(n: int, dim: int, root: Path, shard_docs: int = 25_000) -> tuple[list[str], int]:
    """`n` embeddings around n / 500 topics (same-topic cosine about 0.5), 5% of them near-copies (cosine > 0.995)
    of another, written as contract shards of `shard_docs` documents (as a run's writer cuts shards by size) with an
    `emb` column; returns the paths and the planted copies."""
    shards = max(1, n // shard_docs)
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from curate.core.document import shard_schema
    from curate.dedup.semantic import Semantic

    rng = np.random.default_rng(0)
    centres = rng.normal(size=(max(1, n // 500), dim)).astype(np.float32)
    x = centres[rng.integers(0, len(centres), n)] + rng.normal(size=(n, dim)).astype(np.float32)
    copies = n // 20
    src = rng.choice(n - copies, copies, replace=False)
    x[n - copies:] = x[src] + 0.05 * rng.normal(size=(copies, dim)).astype(np.float32)
    schema = shard_schema(Semantic(embeddings_column="emb").columns)
    paths = []
    for s in range(shards):
        rows = np.arange(s, n, shards)
        values = pa.array(x[rows].ravel(), pa.float32())
        emb = pa.ListArray.from_arrays(pa.array(np.arange(len(rows) + 1) * dim, pa.int32()), values)
        cols = {"id": pa.array([f"d{i:07d}" for i in rows]), "text": pa.array(["x"] * len(rows)),
                "source": pa.array(["bench"] * len(rows)), "emb": emb}
        table = pa.table({f.name: cols.get(f.name, pa.nulls(len(rows), f.type)) for f in schema}, schema=schema)
        paths.append(str(root / f"in-{s:05d}.parquet"))
        pq.write_table(table, paths[-1])
    return paths, copies


def peak_rss_mib() -> int:
    """VmHWM: this process's peak RSS since its exec (ru_maxrss would carry the forking parent's, torch and all)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def groups_once(n: int, dim: int, root: Path) -> dict:
    """One corpus size in this process: the step's run_global on synthetic shards; each phase's CPU seconds (one
    worker runs them in this process) and the peak RSS."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import faiss

    from curate.core.document import shard_schema
    from curate.core.step import GlobalContext
    from curate.dedup import common
    from curate.dedup.semantic import Semantic
    from curate.io.writers import Parquet
    from curate.run.executors.local import LocalExecutor

    faiss.omp_set_num_threads(1)
    cpu: dict[str, float] = {}
    run_phase = common.run_phase

    def timed(ctx, phase, *a, **kw):
        c = time.process_time()
        try:
            return run_phase(ctx, phase, *a, **kw)
        finally:
            cpu[phase] = round(cpu.get(phase, 0) + time.process_time() - c, 3)

    common.run_phase = timed
    paths = sorted(str(p) for p in root.glob("in-*.parquet"))
    planted = n // 20
    rss_inputs = peak_rss_mib()
    step = Semantic(embeddings_column="emb", eps=0.01)
    ctx = GlobalContext(inputs=paths, output_dir=str(root / "out"), work_dir=str(root / "work"),
                        executor=LocalExecutor(1, progress=False), schema=shard_schema(step.columns), writer=Parquet())
    c0 = time.process_time()
    (st,) = step.run_global(ctx)
    total = time.process_time() - c0
    return {"docs": n, "dim": dim, "planted_copies": planted, "dropped": sum(st.dropped.values()),
            "clusters": st.extra["clusters"], "largest_cluster": st.extra["largest_cluster"], "pairs": st.extra["pairs"],
            "wall_s": st.extra["seconds"], "cpu_s": cpu, "cpu_total_s": round(total, 2), "peak_rss_mib": peak_rss_mib(),
            "peak_rss_before_step_mib": rss_inputs}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=256)
    ap.add_argument("--sizes", default="25000,50000,100000,200000")
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--make", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    ap.add_argument("--no-embed", action="store_true", help="keep the embed rows of benchmarks/semantic.json")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.make:
        synthetic(args.make, args.dim, Path(args.dir))
        return
    if args.one:
        print(json.dumps(groups_once(args.one, args.dim, Path(args.dir))))
        return
    saved = ROOT / "benchmarks" / "semantic.json"
    embed = json.loads(saved.read_text())["embed"] if args.no_embed else embed_rate(args.docs)
    result = {"machine": os.uname().nodename, "cores": os.cpu_count(), "embed": embed, "groups": []}
    for row in result["embed"]:
        print(f"embed  {row['encoder']}: {row['docs_per_cpu_s']} docs/CPU s, {row['tokens_per_cpu_s']} tokens/CPU s")
    for n in [int(s) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:  # the inputs made in a process of their own: the step's peak alone
            env = {**os.environ, "OMP_NUM_THREADS": "1"}
            subprocess.run([sys.executable, __file__, "--make", str(n), "--dim", str(args.dim), "--dir", tmp],
                           check=True, env=env)
            out = subprocess.run([sys.executable, __file__, "--one", str(n), "--dim", str(args.dim), "--dir", tmp],
                                 check=True, capture_output=True, text=True, env=env)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        result["groups"].append(row)
        print(f"groups {n:>8} x {args.dim}: CPU s {row['cpu_s']}  dropped {row['dropped']} of {row['planted_copies']} "
              f"planted, clusters {row['clusters']} (largest {row['largest_cluster']}), peak RSS {row['peak_rss_mib']} MiB")
    if args.json:
        (ROOT / "benchmarks" / "semantic.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
