"""Model-based quality selection, what it costs: (1) `quality.NeuralClassifier` documents/s and tokens/s per core
with a FineWeb-Edu-shaped classifier (a BERT-base encoder: 12 layers, 768 wide, 512 positions, one regression
output; random weights, since speed does not depend on them) on real web text; (2) `curate quality annotate`'s
client against the tests' local teacher (tests/_chatserver.py), answers/s at several concurrencies with no model
time and with a fixed answer time, so the client's own overhead and its scaling are seen apart from a model's.

    .venv/bin/python benchmarks/neural_quality.py [--docs 64] [--annotate 400] [--latency 0.05] [--json]

One torch thread; figures per CPU second of the process (what a core delivers whatever the machine's load) and per
wall second. The documents are the shared Common Crawl samples (dolma web_cc), read to 512 tokens each (the
model's context), batched by the inference layer's default token budget.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "tests"))  # the tests' tiny-model helpers and fake teacher


def web_docs(n: int) -> list[str]:
    out = []
    for f in sorted((SHARED / "text" / "web_cc").glob("*.jsonl.gz")):
        with gzip.open(f, "rt") as fh:
            out += [json.loads(line)["text"] for line in fh]
    return [t for t in out if len(t) >= 200][:n]


def fineweb_edu_shaped(work: Path) -> Path:
    import torch
    from _models import bpe, clean_texts, hf_tokenizer
    from transformers import BertConfig, BertForSequenceClassification

    tok = bpe(clean_texts(SHARED), vocab=8192)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                     intermediate_size=3072, max_position_embeddings=512, pad_token_id=1, num_labels=1)
    BertForSequenceClassification(cfg).save_pretrained(work / "edu")
    hf_tokenizer(tok).save_pretrained(work / "edu")
    return work / "edu"


def classifier(n: int) -> dict:
    import torch

    from curate import quality

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = fineweb_edu_shaped(Path(tmp))
        step = quality.NeuralClassifier(str(path), column="edu", device="cpu")
        docs = web_docs(n)
        step.scores(docs[:4])  # load, warm up
        step._throughput.clear()
        t0, c0 = time.perf_counter(), time.process_time()
        step.scores(docs)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        rec = step._throughput.record()
    # CPU seconds as well as wall: on a shared machine a core's share varies, the CPU time a document needs does not
    return {"docs": len(docs), "tokens": rec["tokens"], "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
            "docs_per_cpu_s": round(len(docs) / cpu, 2), "tokens_per_cpu_s": round(rec["tokens"] / cpu),
            "docs_per_s": round(len(docs) / wall, 2), "truncated": rec["truncated"],
            "padding_share": rec.get("padding_share")}


def annotate(n: int, latency: float, concurrency: int) -> dict:
    from _chatserver import TEMPLATE, ChatServer

    from curate.io.chat import ChatClient
    from curate.quality.annotate import ScoreRule, Settings, Template, annotate

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "docs.jsonl"
        src.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n"
                               for i, t in enumerate((web_docs(697) * (n // 697 + 1))[:n])))
        with ChatServer(lambda i, t: "Educational score: 3", delay_s=latency) as server:
            client = ChatClient(server.url, "teacher", concurrency=concurrency)
            t0 = time.perf_counter()
            s = annotate([str(src)], str(Path(tmp) / "out"), client, Template(TEMPLATE), ScoreRule(),
                         Settings("teacher", "x", {}, {}, n, 0), concurrency=concurrency)
            wall = time.perf_counter() - t0
    return {"docs": s["documents"], "concurrency": concurrency, "latency_s": latency, "seconds": round(wall, 2),
            "answers_per_s": round(s["documents"] / wall, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=64)
    ap.add_argument("--annotate", type=int, default=400)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = {"classifier": classifier(args.docs),
              "annotate": [annotate(args.annotate, lat, c) for lat in (0.0, args.latency) for c in (1, 8, 32)],
              "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    print(json.dumps(result, indent=1) if args.json else result)


if __name__ == "__main__":
    main()
