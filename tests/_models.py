"""Tiny models made inside the tests (no network): a byte-level BPE trained on shared text, this project's GPT
trained for a few seconds and saved as the trainer exports it, and random Hugging Face models (a causal LM, an
encoder, a sequence classifier) with that tokenizer, saved as transformers saves them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

EOS = "<|endoftext|>"
CLEAN = "text/clean_en/wikitext-2-test.txt"
WEB = "text/web_cc/dolma_ccnet_cc_en_head-0091.jsonl.gz"


def web_texts(shared: Path, n: int | None = None) -> list[str]:
    with gzip.open(shared / WEB, "rt") as f:
        texts = [json.loads(line)["text"] for line in f]
    return texts[:n] if n else texts


def clean_texts(shared: Path) -> list[str]:
    """wikitext-2's test split cut into paragraphs of some length."""
    paras = [p.strip() for p in (shared / CLEAN).read_text(encoding="utf-8").split("\n \n")]
    return [p for p in paras if len(p) > 200]


def bpe(texts: list[str], vocab: int = 512):
    """A byte-level BPE made with the tokenizers library directly (EOS first, as the project's tokenizers have it)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=[EOS, "<|pad|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def train_gpt(texts: list[str], tok, out: Path, steps: int = 60, seq_len: int = 32, seed: int = 0, n_layer: int = 2,
              n_head: int = 2, n_embd: int = 32) -> Path:
    """This project's GPT trained for `steps` steps on `texts` (a plain loop), saved as an export with its
    tokenizer beside it: OUT/ckpt.pt + OUT/tokenizer.json. Returns OUT."""
    import torch

    from curate.models.checkpoint import digest
    from curate.models.gpt import GPT, GPTConfig

    eos = tok.token_to_id(EOS)
    stream: list[int] = []
    for t in texts:
        stream += [eos] + tok.encode(t).ids
    data = torch.tensor(stream)
    torch.manual_seed(seed)
    cfg = GPTConfig(vocab_size=tok.get_vocab_size(), seq_len=seq_len, n_layer=n_layer, n_head=n_head, n_embd=n_embd)
    model = GPT(cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        starts = torch.randint(0, len(data) - seq_len - 1, (16,), generator=gen)
        batch = torch.stack([data[s : s + seq_len + 1] for s in starts.tolist()])
        loss = model(batch[:, :-1], batch[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    out.mkdir(parents=True, exist_ok=True)
    state = {"model": model.eval().state_dict(), "model_config": vars(cfg).copy(), "eos_id": eos, "step": steps,
             "config": {"batch_tokens": 16 * seq_len, "seed": seed, "data": None}, "tokenizer": None}
    state["sha256"] = digest(state)
    torch.save(state, out / "ckpt.pt")
    tok.save(str(out / "tokenizer.json"))
    return out


def hf_tokenizer(tok):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOS, eos_token=EOS, pad_token="<|pad|>")


def hf_causal(tok, out: Path, arch: str = "gpt2", seed: int = 0, n_positions: int = 64) -> Path:
    """A random Hugging Face causal LM (GPT-2 or Llama layout, a few hundred dimensions at most) with `tok`."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    vocab = tok.get_vocab_size()
    if arch == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_positions=n_positions, n_embd=64, n_layer=2, n_head=2,
                                           bos_token_id=0, eos_token_id=0))
    else:
        model = LlamaForCausalLM(LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128,
                                             num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                             max_position_embeddings=n_positions, bos_token_id=0, eos_token_id=0))
    model.save_pretrained(out)
    hf_tokenizer(tok).save_pretrained(out)
    return out


def hf_encoder(tok, out: Path, labels: int | None = None, seed: int = 0) -> Path:
    """A random BERT-layout encoder (`labels`: with a sequence-classification head of that many outputs)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=64, pad_token_id=1)
    if labels:
        cfg.num_labels = labels
        model = BertForSequenceClassification(cfg)
    else:
        model = BertModel(cfg)
    model.save_pretrained(out)
    hf_tokenizer(tok).save_pretrained(out)
    return out
