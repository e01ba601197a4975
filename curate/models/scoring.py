"""Batched log-likelihood of token spans: the one primitive both held-out bits per byte and the in-context tasks use.

A request is a token sequence and how many of its last tokens to score. Each sequence is cut from the left to the
model's window (`seq_len` + 1 tokens: the scored tokens are kept whole, the context loses its oldest tokens, as
llm-foundry's `trim_context` does), the batch is padded on the right, and causal attention means a row's padding
never reaches the positions that are scored. Requests are grouped longest first so padding stays small; results come
back in request order, and the same requests always form the same batches, so scores are deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from curate.models.gpt import GPT


@dataclass(frozen=True)
class Span:
    logprob: float  # sum of log p(token | everything before it in the row), in nats
    tokens: int  # tokens scored
    greedy: bool  # whether every scored token was the model's most likely next token


@torch.no_grad()
def score_spans(model: GPT, requests: Sequence[tuple[Sequence[int], int]], pad_id: int,
                batch_size: int = 32, progress: Callable[[int], object] | None = None) -> list[Span]:
    """For each (ids, k): the log-likelihood of the last k ids given the ids before them (at least one).
    `progress(n)` is called after each batch with the number of requests it scored."""
    window = model.cfg.seq_len + 1
    for ids, k in requests:
        if not 1 <= k < len(ids) or k >= window:
            raise ValueError(f"cannot score the last {k} of {len(ids)} tokens with a window of {window} tokens")
    order = sorted(range(len(requests)), key=lambda i: (-min(len(requests[i][0]), window), i))
    device = model.embed.weight.device
    vocab = model.cfg.vocab_size
    out: list[Span | None] = [None] * len(requests)
    for b in range(0, len(order), batch_size):
        rows = order[b : b + batch_size]
        seqs = [list(requests[i][0][-window:]) for i in rows]
        width = max(len(s) for s in seqs) - 1
        x = torch.full((len(rows), width), pad_id, dtype=torch.long)
        for r, s in enumerate(seqs):
            x[r, : len(s) - 1] = torch.tensor(s[:-1])
        logits = model(x.to(device))
        for r, (i, s) in enumerate(zip(rows, seqs, strict=True)):
            k, end = requests[i][1], len(s) - 1
            target = torch.tensor(s[len(s) - k :])
            # normalised only where a token is scored: a task's continuation is a few of the row's positions
            lp = F.log_softmax(logits[r, end - k : end, :vocab].float(), dim=-1).cpu()
            out[i] = Span(float(lp.gather(1, target[:, None]).sum()), k, bool((lp.argmax(-1) == target).all()))
        if progress is not None:
            progress(len(rows))
    return out  # type: ignore[return-value]
