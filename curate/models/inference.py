"""The inference layer every model step uses: one model per worker process, documents batched by a token budget.

    from curate.models import ModelSpec
    from curate.models.inference import Throughput, get_model

    spec = ModelSpec("runs/ref/ckpt.pt")            # or a Hugging Face folder / hub id; task="embed" | "classify"
    model = get_model(spec)                         # in Step.setup: loaded once per process, cached by spec
    counter = Throughput()                          # a step's own counts (a Counter: adds up, pickles, resets)
    bpb = model.bits_per_byte(texts, max_tokens=4096, counter=counter)   # float64 (N,), NaN for an empty text
    vecs = model.embed(texts, counter=counter)       # float32 (N, hidden): mean-pooled last hidden states
    logits = model.classify(texts, counter=counter)  # float32 (N, labels): a sequence-classification head
    stats.extra["throughput"] = counter.record()    # in Step.finish: docs/s, tokens/s, truncated, padding share

What it guarantees:

* **Loaded once.** `get_model(spec)` keeps one model per `ModelSpec` in the process (`_MODELS`); steps call it in
  `setup`, which runs once per worker process. Weights go to `spec.device` (`auto`: CUDA when this process has it),
  in bfloat16 on CUDA where supported and float32 on CPU (`curate.models.device`); everything runs under
  `torch.inference_mode()`, the model in eval mode.
* **Batched by a token budget.** Rows (a document, or one window of a long one) are sorted by length, longest
  first, inside bounded windows of `window` rows in input order, and cut into batches whose padded size
  (rows x longest row) stays within `token_budget` tokens (default 2,048 on CPU, 16,384 on CUDA: `TOKEN_BUDGET`);
  so padding stays small while memory stays bounded (the logits of a batch are `token_budget x vocabulary` floats).
  Results come back in input order, and the same
  texts always form the same batches: scores are deterministic, and equal (to float rounding) to scoring each text
  alone (`plan_batches`).
* **Truncation stated and counted.** `max_tokens` caps the tokens of a text that are read (its first ones); a
  text cut is counted in `Throughput["truncated"]`. Bits per byte then count the bytes of the text those tokens
  cover, so a truncated document's score is that of its head. Embeddings and classification read at most the
  model's context (`Model.context`) too.
* **Bits per byte as the trainer measures it.** A text is scored after a start-of-document token (this
  project's models: the end-of-document token they were trained with; Hugging Face: the tokenizer's BOS, else its
  EOS), in windows of `context` + 1 tokens that share one token, so every token of the text is predicted exactly
  once (`train.evaluate.heldout.bits_per_byte` scores held-out sets the same way): the sum of the tokens' negative
  log-likelihoods / (ln 2 x UTF-8 bytes).

Backends: this project's GPT checkpoint (`curate.models.checkpoint.load_checkpoint`) and Hugging Face
transformers (`AutoModelForCausalLM`, `AutoModel`, `AutoModelForSequenceClassification`, with `AutoTokenizer`;
transformers is imported only here, when such a model is loaded).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from curate.core.errors import UsageError
from curate.core.stats import Throughput
from curate.models.device import check_available, inference_dtype, resolve_device
from curate.models.spec import ModelSpec

# padded tokens per forward pass, by device: on a CPU small batches keep the activations and logits in cache
# (benchmarks/perplexity.py: 2,048 scores ~20% more documents per CPU second than 16,384, and pads 2% instead of 8%);
# a GPU wants large ones
TOKEN_BUDGET = {"cpu": 2048, "cuda": 16384}
WINDOW = 1024  # rows sorted together: bounds how far a row moves from its place in the input
MAX_ROWS = 256  # rows per batch, whatever their length


def plan_batches(lengths: Sequence[int], token_budget: int = TOKEN_BUDGET["cpu"], window: int = WINDOW,
                 max_rows: int = MAX_ROWS) -> list[list[int]]:
    """Row indices in batches: inside each window of `window` consecutive rows, longest first (ties in input
    order), cut so that rows x longest row <= `token_budget` (a row longer than the budget goes alone) and so that
    no row is under half its batch's longest (the short tail of a window is not padded to the long rows)."""
    if token_budget < 1 or window < 1 or max_rows < 1:
        raise ValueError("token_budget, window and max_rows must be >= 1")
    batches: list[list[int]] = []
    for w0 in range(0, len(lengths), window):
        rows = sorted(range(w0, min(len(lengths), w0 + window)), key=lambda i: (-lengths[i], i))
        batch: list[int] = []
        for i in rows:
            width = lengths[batch[0]] if batch else lengths[i]
            # a row under half the batch's width starts a new batch: a batch holds rows of similar length
            if batch and (width * (len(batch) + 1) > token_budget or len(batch) >= max_rows or 2 * lengths[i] < width):
                batches.append(batch)
                batch = []
            batch.append(i)
        if batch:
            batches.append(batch)
    return batches


def _pad(rows: list[list[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids (B, L) and the mask of real positions, on `device`."""
    width = max(len(r) for r in rows)
    x = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for r, ids in enumerate(rows):
        x[r, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        mask[r, : len(ids)] = 1
    return x.to(device), mask.to(device)


def _prefix_bytes(text: str, offsets: list[tuple[int, int]], kept: int) -> int:
    """UTF-8 bytes of the text the first `kept` tokens cover (by their character offsets)."""
    end = max((e for _, e in offsets[:kept]), default=0)
    return len(text[:end].encode("utf-8"))


class Model:
    """A loaded model and its tokenizer; `get_model` makes one per spec and process. Subclasses give the ids of a
    text and the forward passes; the batching, truncation and counting are here."""

    spec: ModelSpec
    device: torch.device
    dtype: torch.dtype
    context: int  # tokens one forward pass may see
    pad_id: int
    start_id: int | None  # the start-of-document token bits per byte condition on

    # ---- what the backends provide

    def tokens(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """The text's token ids, no special tokens, and each token's character offsets."""
        raise NotImplementedError

    def _logits(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _hidden(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _class_logits(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        raise UsageError(f"model {self.spec.path} has no sequence-classification head: load it with task='classify'")

    _encoder_extra = 0  # special tokens an encoder adds to a text's ids

    # ---- what steps call

    def bits_per_byte(self, texts: Sequence[str], max_tokens: int | None = None, counter: Throughput | None = None,
                      token_budget: int | None = None, window: int = WINDOW) -> np.ndarray:
        """Bits per UTF-8 byte of each text (of its first `max_tokens` tokens), NaN for an empty text."""
        t0 = time.perf_counter()
        C = self.context
        rows: list[list[int]] = []
        owner: list[int] = []
        n_bytes = np.zeros(len(texts), dtype=np.float64)
        truncated = 0
        for d, text in enumerate(texts):
            ids, offsets = self.tokens(text)
            if max_tokens is not None and len(ids) > max_tokens:
                ids, truncated = ids[:max_tokens], truncated + 1
                n_bytes[d] = _prefix_bytes(text, offsets, max_tokens)
            else:
                n_bytes[d] = len(text.encode("utf-8"))
            if self.start_id is not None:
                ids = [self.start_id, *ids]
            for s in range(0, len(ids) - 1, C):
                rows.append(ids[s : s + C + 1])
                owner.append(d)
        nll = np.zeros(len(texts), dtype=np.float64)
        tokens = padding = 0
        with torch.inference_mode():
            for batch in plan_batches([len(r) - 1 for r in rows], self._budget(token_budget), window):
                x, mask = _pad([rows[i][:-1] for i in batch], self.pad_id, self.device)
                y, _ = _pad([rows[i][1:] for i in batch], -100, torch.device("cpu"))
                logits = self._logits(x, mask)
                V = logits.size(-1)
                loss = F.cross_entropy(logits.float().reshape(-1, V), y.to(self.device).reshape(-1),
                                       ignore_index=-100, reduction="none").view(len(batch), -1)
                per_row = loss.sum(1).double().cpu().numpy()
                np.add.at(nll, [owner[i] for i in batch], per_row)
                real = int(mask.sum())
                tokens, padding = tokens + real, padding + mask.numel() - real
        with np.errstate(invalid="ignore", divide="ignore"):
            bpb = np.where(n_bytes > 0, nll / (math.log(2) * np.maximum(n_bytes, 1)), np.nan)
        self._count(counter, len(texts), tokens, padding, truncated, t0)
        return bpb

    def embed(self, texts: Sequence[str], max_tokens: int | None = None, counter: Throughput | None = None,
              token_budget: int | None = None, window: int = WINDOW) -> np.ndarray:
        """Each text's embedding: the mean of the last hidden states over its tokens, float32 (N, hidden)."""
        t0 = time.perf_counter()
        rows, pooled_from, truncated = self._encoder_rows(texts, max_tokens)
        out: np.ndarray | None = None
        tokens = padding = 0
        with torch.inference_mode():
            for batch in plan_batches([len(r) for r in rows], self._budget(token_budget), window):
                x, mask = _pad([rows[i] for i in batch], self.pad_id, self.device)
                h = self._hidden(x, mask).float()
                keep = mask.clone()
                for r, i in enumerate(batch):  # this project's models: the start token is every text's same context
                    if pooled_from[i]:
                        keep[r, : pooled_from[i]] = 0
                keep = keep.unsqueeze(-1).to(h.dtype)
                vec = ((h * keep).sum(1) / keep.sum(1).clamp(min=1)).cpu().numpy()
                if out is None:
                    out = np.zeros((len(texts), vec.shape[1]), dtype=np.float32)
                out[batch] = vec
                real = int(mask.sum())
                tokens, padding = tokens + real, padding + mask.numel() - real
        self._count(counter, len(texts), tokens, padding, truncated, t0)
        return out if out is not None else np.zeros((0, self.hidden_size), dtype=np.float32)

    def classify(self, texts: Sequence[str], max_tokens: int | None = None, counter: Throughput | None = None,
                 token_budget: int | None = None, window: int = WINDOW) -> np.ndarray:
        """A sequence-classification head's outputs for each text: float32 (N, labels) logits (a regression
        head: (N, 1) values). `labels` names the columns."""
        t0 = time.perf_counter()
        rows, _, truncated = self._encoder_rows(texts, max_tokens)
        out: np.ndarray | None = None
        tokens = padding = 0
        with torch.inference_mode():
            for batch in plan_batches([len(r) for r in rows], self._budget(token_budget), window):
                x, mask = _pad([rows[i] for i in batch], self.pad_id, self.device)
                logits = self._class_logits(x, mask).float().cpu().numpy()
                if out is None:
                    out = np.zeros((len(texts), logits.shape[1]), dtype=np.float32)
                out[batch] = logits
                real = int(mask.sum())
                tokens, padding = tokens + real, padding + mask.numel() - real
        self._count(counter, len(texts), tokens, padding, truncated, t0)
        return out if out is not None else np.zeros((0, len(self.labels)), dtype=np.float32)

    labels: list[str] = []
    hidden_size: int = 0

    # ---- shared

    def _budget(self, token_budget: int | None) -> int:
        return token_budget or TOKEN_BUDGET.get(self.device.type, TOKEN_BUDGET["cuda"])

    def _encoder_rows(self, texts: Sequence[str], max_tokens: int | None) -> tuple[list[list[int]], list[int], int]:
        limit = self.context - self._encoder_extra
        if max_tokens is not None:
            limit = min(limit, max_tokens)
        rows, pooled_from, truncated = [], [], 0
        for text in texts:
            ids, _ = self.tokens(text)
            if len(ids) > limit:
                ids, truncated = ids[:limit], truncated + 1
            row, skip = self._row_for_encoder(ids)
            rows.append(row)
            pooled_from.append(skip)
        return rows, pooled_from, truncated

    def _row_for_encoder(self, ids: list[int]) -> tuple[list[int], int]:
        """The row an encoder reads and how many of its first positions pooling skips."""
        return ids, 0

    def _count(self, counter: Throughput | None, docs: int, tokens: int, padding: int, truncated: int,
               t0: float) -> None:
        if counter is not None:
            counter.update(docs=docs, tokens=tokens, padding=padding, truncated=truncated)
            counter["seconds"] += time.perf_counter() - t0


class GPTModel(Model):
    """This project's GPT (`curate.models.gpt`) from a trainer checkpoint, with the tokenizer it was trained with."""

    def __init__(self, spec: ModelSpec, device: torch.device, dtype: torch.dtype):
        from curate.models.checkpoint import load_checkpoint

        self.spec, self.device, self.dtype = spec, device, dtype
        run = load_checkpoint(os.path.expanduser(spec.path), device, dtype=None if dtype == torch.float32 else dtype)
        self.model, self.tokenizer = run.model, run.tokenizer
        self.context = run.model.cfg.seq_len
        self.vocab = run.model.cfg.vocab_size
        self.pad_id = self.start_id = run.eos_id
        self.hidden_size = run.model.cfg.n_embd

    def tokens(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        enc = self.tokenizer.encode(text, add_special_tokens=False)
        return enc.ids, enc.offsets

    def _logits(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.model(x)[..., : self.vocab]  # the padded vocabulary's extra columns are no tokens

    def _hidden(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.model.hidden(x)

    _encoder_extra = 1

    def _row_for_encoder(self, ids: list[int]) -> tuple[list[int], int]:
        # after the end-of-document token, as in training; pooled over the text's tokens (all of them: a model
        # is causal, so the start token's state is the same for every text), the start token alone for ""
        return [self.start_id, *ids], 1 if ids else 0


class HFModel(Model):
    """A Hugging Face transformers model and its tokenizer, from a local folder or a hub id."""

    AUTO = {"causal": "AutoModelForCausalLM", "embed": "AutoModel", "classify": "AutoModelForSequenceClassification"}

    def __init__(self, spec: ModelSpec, device: torch.device, dtype: torch.dtype):
        import transformers

        transformers.utils.logging.disable_progress_bar()  # one bar per worker process and load: noise in a run
        self.spec, self.device, self.dtype = spec, device, dtype
        path = os.path.expanduser(spec.path)
        kw: dict[str, Any] = {"revision": spec.revision} if spec.revision else {}
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(path, **kw)
        if not getattr(self.tokenizer, "is_fast", False):
            raise UsageError(f"model {spec.path}: its tokenizer has no fast (Rust) version; bits per byte and "
                             "truncation need its character offsets")
        auto = getattr(transformers, self.AUTO[spec.task])
        self.model = auto.from_pretrained(path, dtype=dtype, **kw).to(device).eval()
        cfg = self.model.config
        limits = [getattr(cfg, k, None) for k in ("max_position_embeddings", "n_positions", "max_seq_len")]
        limits = [v for v in limits if isinstance(v, int) and v > 0]
        tok_max = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
            limits.append(tok_max)
        self.context = min(limits) if limits else 512
        tok = self.tokenizer
        self.start_id = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        self.pad_id = pad if pad is not None else 0
        if spec.task == "classify" and getattr(cfg, "pad_token_id", None) is None:
            cfg.pad_token_id = self.pad_id  # decoder classifiers find each row's last token by it
        self._encoder_extra = tok.num_special_tokens_to_add(pair=False)
        self.hidden_size = getattr(cfg, "hidden_size", 0) or getattr(cfg, "n_embd", 0)
        id2label = getattr(cfg, "id2label", None) or {}
        self.labels = [str(id2label.get(i, i)) for i in range(getattr(cfg, "num_labels", len(id2label)) or 0)]

    def tokens(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return enc["input_ids"], enc["offset_mapping"]

    def _encoder_rows(self, texts: Sequence[str], max_tokens: int | None) -> tuple[list[list[int]], list[int], int]:
        """The tokenizer's own encoding with its special tokens, cut to the context (and `max_tokens` + the special
        tokens): one call for the batch; a text that overflows is counted as truncated."""
        limit = self.context if max_tokens is None else min(self.context, max_tokens + self._encoder_extra)
        if not texts:
            return [], [], 0
        enc = self.tokenizer(list(texts), truncation=True, max_length=limit, return_overflowing_tokens=True)
        rows: list[list[int] | None] = [None] * len(texts)
        chunks = [0] * len(texts)
        for ids, owner in zip(enc["input_ids"], enc["overflow_to_sample_mapping"], strict=True):
            chunks[owner] += 1
            if rows[owner] is None:  # an empty text with no special tokens: the start token stands for it
                rows[owner] = ids or [self.start_id if self.start_id is not None else self.pad_id]
        return rows, [0] * len(texts), sum(c > 1 for c in chunks)  # type: ignore[return-value]

    def _logits(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=x, attention_mask=mask).logits

    def _hidden(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.spec.task == "causal":
            return self.model(input_ids=x, attention_mask=mask, output_hidden_states=True).hidden_states[-1]
        return self.model(input_ids=x, attention_mask=mask).last_hidden_state

    def _class_logits(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.spec.task != "classify":
            return super()._class_logits(x, mask)
        return self.model(input_ids=x, attention_mask=mask).logits


_MODELS: dict[ModelSpec, Model] = {}


def get_model(spec: ModelSpec) -> Model:
    """The model of `spec`, loaded on first use in this process and kept (one per spec): call it from
    `Step.setup`. A device this process cannot use is one `DeviceError`."""
    model = _MODELS.get(spec)
    if model is None:
        spec.check_ready()
        if spec.threads:
            torch.set_num_threads(spec.threads)
        dev = resolve_device(spec.device)
        check_available(dev, f"model {spec.path} on {spec.device}")
        dtype = inference_dtype(dev, spec.dtype)
        if spec.backend == "gpt" and spec.task == "classify":
            raise UsageError(f"model {spec.path}: this project's checkpoints are language models; classify needs a "
                             "Hugging Face sequence-classification model")
        model = (GPTModel if spec.backend == "gpt" else HFModel)(spec, dev, dtype)
        _MODELS[spec] = model
    return model


def clear_cache() -> None:
    """Forget the loaded models (tests; a long-lived process that is done with them)."""
    _MODELS.clear()
