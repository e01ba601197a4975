#!/usr/bin/env bash
# Tokens/s and MFU of gpt2-124m (train/configs/gpt2-124m.toml) with torch.compile and bf16 autocast on a GPU box.
# Goal on an H100/H200: >= 45% MFU. MFU = 6·N + attention FLOPs per token x tokens/s / peak bf16 FLOP/s of the
# device (looked up by name in train/metrics.py). The first 10 steps (compilation, warmup) are left out.
#
#   benchmarks/gpu.sh [TOKENS_DIR]        # one GPU; NPROC=8 benchmarks/gpu.sh for DDP over 8
#
# Without TOKENS_DIR, shards are built from ../shared/data web text with a 32k BPE (the vocabulary sets the size
# of the LM head, so use your real tokens for numbers you will quote).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python
NPROC=${NPROC:-1}
STEPS=${STEPS:-40}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
DATA=${1:-}
if [ -z "$DATA" ]; then
  DATA=$WORK/tokens
  "$PY" -c "import sys; from curate.tokens.tokenize import build_token_shards; build_token_shards(sys.argv[1], sys.argv[2], vocab_size=32768)" \
    ../shared/data/text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz "$DATA"
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
"$PY" -m torch.distributed.run --standalone --nproc_per_node "$NPROC" -m train --config gpt2-124m --data "$DATA" \
  --out "$WORK/run" --steps "$STEPS" --warmup_steps 5 --eval_every 0 --ckpt_every 0 --log_every 1 \
  --progress false --plots false --compile on --dtype bfloat16
"$PY" - "$WORK/run/metrics.jsonl" "$NPROC" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])][10:]
tps = statistics.median(r["tokens_per_s"] for r in rows)
mfu = statistics.median(r["mfu"] for r in rows) if rows[0]["mfu"] is not None else None
print(f"gpt2-124m, compile + bf16, {sys.argv[2]} GPU(s): {tps:,.0f} tokens/s, "
      + (f"MFU {mfu:.1%}" if mfu is not None else "MFU unknown (GPU not in train/metrics.py PEAK_BF16_FLOPS)"))
PY
