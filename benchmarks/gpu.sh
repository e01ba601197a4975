#!/usr/bin/env bash
# Tokens/s and MFU of gpt2-124m (train/configs/gpt2-124m.toml) with torch.compile and bf16 autocast, on one GPU
# and then under torchrun (DDP) on all visible GPUs; then the 1b preset (train/configs/1b.toml) under FSDP2 on all
# visible GPUs, with its peak memory per GPU and the time of its sharded checkpoint. Goal on an H100/H200: >= 45% MFU
# for gpt2-124m. MFU = (6·N + attention FLOPs per token) x tokens/s / peak bf16 FLOP/s of the device (looked up by
# name in train/metrics.py); the first 10 steps (compilation, warmup) are left out. On one GPU the FSDP run is a
# one-rank mesh: it checks FSDP with compile, bf16 mixed precision and Muon on DTensors, not the sharding itself.
# Last, quality.Perplexity's scoring on one GPU (benchmarks/perplexity.py --device cuda: bf16, documents/s and
# tokens/s, length-sorted token-budget batches against naive fixed-size batches; --no-perplexity skips it).
#
#   benchmarks/gpu.sh [--data TOKENS_DIR] [--steps 30] [--nproc N] [--fsdp-micro-batch 4] [--no-fsdp] [--no-perplexity] [--install]
#
# Self-contained: without --data it trains on synthetic tokens (uniform ids over GPT-2's 50,257-token vocabulary,
# which sets the LM head's size; speed does not depend on what the ids say). A preflight fails loudly, before any
# training, when there is no usable CUDA GPU, no bf16, or no working torch.compile toolchain (C compiler, Triton).
# Python: $PYTHON, else .venv/bin/python, else python3. --install first installs the project (pip install -e .,
# which brings a CUDA build of PyTorch from PyPI) into that interpreter; without it nothing is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA="" STEPS=30 NPROC="" INSTALL=0 FSDP=1 FSDP_MB=4 PPL=1
while [ $# -gt 0 ]; do
  case "$1" in
    --data) DATA=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --nproc) NPROC=$2; shift 2 ;;
    --fsdp-micro-batch) FSDP_MB=$2; shift 2 ;;
    --no-fsdp) FSDP=0; shift ;;
    --no-perplexity) PPL=0; shift ;;
    --install) INSTALL=1; shift ;;
    *) echo "usage: benchmarks/gpu.sh [--data TOKENS_DIR] [--steps N] [--nproc N] [--fsdp-micro-batch N] [--no-fsdp] [--no-perplexity] [--install]" >&2; exit 2 ;;
  esac
done

PY=${PYTHON:-}
if [ -z "$PY" ]; then
  for candidate in .venv/bin/python python3 python; do
    if command -v "$candidate" >/dev/null 2>&1; then PY=$candidate; break; fi
  done
fi
[ -n "$PY" ] || { echo "gpu.sh: no Python found (set PYTHON)" >&2; exit 1; }
if [ "$INSTALL" = 1 ]; then
  echo "gpu.sh: installing the project into $PY (pip install -e .)"
  "$PY" -m pip install -q -e .
fi

[ -n "$NPROC" ] || NPROC=$("$PY" -c "import torch; print(max(1, torch.cuda.device_count()))" 2>/dev/null || echo 1)
"$PY" benchmarks/gpu.py preflight --nproc "$NPROC"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ -z "$DATA" ]; then
  DATA=$WORK/tokens
  "$PY" benchmarks/gpu.py synthetic "$DATA"
fi
RUN=(--config gpt2-124m --data "$DATA" --steps "$STEPS" --warmup_steps 5 --eval_every 0 --ckpt_every 0
     --log_every 1 --progress false --plots false --compile on --dtype bfloat16 --device cuda)

"$PY" -m train "${RUN[@]}" --out "$WORK/one"
"$PY" -m torch.distributed.run --standalone --nproc_per_node "$NPROC" -m train "${RUN[@]}" --out "$WORK/ddp"
if [ "$FSDP" = 1 ]; then
  # ~1.2B parameters sharded over the GPUs; one micro-batch per step per GPU (no accumulation). The run ends with a
  # sharded checkpoint of weights + AdamW state (~14 GiB in all), written by every rank: its time is printed.
  FSDP_RUN=(--config 1b --data "$DATA" --steps "$STEPS" --warmup_steps 5 --eval_every 0 --ckpt_every 0
            --log_every 1 --progress false --plots false --compile on --dtype bfloat16 --device cuda --parallel fsdp
            --seq_len 2048 --micro_batch "$FSDP_MB" --batch_tokens $((FSDP_MB * 2048 * NPROC)) --export false)
  "$PY" -m torch.distributed.run --standalone --nproc_per_node "$NPROC" -m train "${FSDP_RUN[@]}" --out "$WORK/fsdp" \
    | tee "$WORK/fsdp.log"
fi
echo
"$PY" benchmarks/gpu.py summary "$WORK/one/metrics.jsonl" "gpt2-124m, compile + bf16, 1 GPU"
"$PY" benchmarks/gpu.py summary "$WORK/ddp/metrics.jsonl" "gpt2-124m, compile + bf16, DDP, $NPROC GPU(s)"
if [ "$FSDP" = 1 ]; then
  "$PY" benchmarks/gpu.py summary "$WORK/fsdp/metrics.jsonl" "1b, compile + bf16, FSDP2, $NPROC GPU(s)"
  grep -E "^(checkpoint|done)" "$WORK/fsdp.log" || true
fi
if [ "$PPL" = 1 ]; then
  echo
  "$PY" benchmarks/perplexity.py --device cuda --docs 2000
fi
