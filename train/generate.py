"""Using a checkpoint: `sample` continues a prompt; `surprise` shows the loss one token at a time.

Both condition on the end-of-document token first: in the training stream every document follows one, so it is
the model's "a new document starts here" context and the first real token gets a prediction too.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from curate.models.checkpoint import Loaded


def _encode(run: Loaded, text: str) -> list[int]:
    return [run.eos_id] + run.tokenizer.encode(text, add_special_tokens=False).ids


@torch.no_grad()
def next_token_candidates(run: Loaded, prompt: str, k: int = 5) -> list[tuple[str, float]]:
    """The k most likely next tokens after `prompt`, with their probabilities."""
    idx = run.ids(_encode(run, prompt)[-run.model.cfg.seq_len :])
    probs = F.softmax(run.model(idx)[0, -1, : run.model.cfg.vocab_size].float().cpu(), dim=-1)
    p, ids = probs.topk(min(k, probs.numel()))  # a k above the vocabulary lists every token
    return [(run.tokenizer.decode([i]), float(q)) for i, q in zip(ids.tolist(), p.tolist(), strict=True)]


@torch.no_grad()
def sample(run: Loaded, prompt: str, max_new_tokens: int = 64, temperature: float = 1.0, top_k: int | None = 50,
           seed: int = 0) -> str:
    """Continue `prompt` by sampling from the top-k tokens at `temperature`; stops at end of document.

    The model runs on its device; the draw is made on the CPU from the last position's logits (one small copy per
    token, which reading the token back needs anyway), so a seed gives the same text on any device."""
    gen = torch.Generator().manual_seed(seed)
    ids = _encode(run, prompt)
    new: list[int] = []
    for _ in range(max_new_tokens):
        idx = run.ids((ids + new)[-run.model.cfg.seq_len :])
        logits = run.model(idx)[0, -1, : run.model.cfg.vocab_size].float().cpu()  # drop the padding columns
        if temperature <= 0:
            nxt = int(logits.argmax())
        else:
            logits = logits / temperature
            if top_k:
                kth = logits.topk(min(top_k, logits.numel())).values[-1]
                logits = logits.masked_fill(logits < kth, -math.inf)
            nxt = int(torch.multinomial(F.softmax(logits, dim=-1), 1, generator=gen))
        if nxt == run.eos_id:
            break
        new.append(nxt)
    return run.tokenizer.decode(new)


@torch.no_grad()
def surprise(run: Loaded, text: str) -> list[tuple[str, float, float]]:
    """(token, probability the model gave it, -log p in nats) for each token of `text`. Their mean is the loss."""
    ids = _encode(run, text)[: run.model.cfg.seq_len + 1]
    logits = run.model(run.ids(ids[:-1]))[0, :, : run.model.cfg.vocab_size].float()
    logp = F.log_softmax(logits, dim=-1).gather(1, run.ids(ids[1:]).T)[:, 0]
    return [(run.tokenizer.decode([t]), math.exp(lp), -lp) for t, lp in zip(ids[1:], logp.tolist(), strict=True)]


def format_surprise(rows: list[tuple[str, float, float]]) -> str:
    lines = [f"{'token':<20} {'p':>8} {'-log p':>8}"]
    for token, p, nll in rows:
        bar = "#" * min(40, round(nll * 4))
        lines.append(f"{token!r:<20} {p:>8.2%} {nll:>8.3f}  {bar}")
    mean = sum(r[2] for r in rows) / max(1, len(rows))
    lines.append(f"mean -log p (the loss) over {len(rows)} tokens: {mean:.3f} nats = {mean / math.log(2):.3f} bits")
    return "\n".join(lines)
