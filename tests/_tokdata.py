"""Real-text corpora for the mix/tokenize/loader tests, built from ../shared/data."""

from __future__ import annotations

import json
import re
from pathlib import Path

WEB = "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
PT = "text/pt/bosque_docs.jsonl"
WIKITEXT = "text/clean_en/wikitext-2-test.txt"


def wiki_jsonl(shared: Path, out: Path) -> Path:
    """WikiText-2 test split as one JSONL document per article (top-level ` = Title = ` headings): 62 articles."""
    arts: list[list[str]] = []
    with open(shared / WIKITEXT, encoding="utf-8") as f:
        lines = f.readlines()
    for line in lines:
        m = re.fullmatch(r" = ([^=].*) = \n", line)
        if m:
            arts.append([m.group(1)])
        elif arts and line.strip():
            arts[-1].append(line.strip())
    with open(out, "w", encoding="utf-8") as f:
        for i, a in enumerate(arts):
            f.write(json.dumps({"id": f"wiki-{i}", "text": "\n".join(a)}) + "\n")
    return out


def sources(shared: Path, tmp: Path, weights=(0.5, 0.3, 0.2)) -> dict[str, tuple[str, float]]:
    wiki = wiki_jsonl(shared, tmp / "wiki.jsonl")
    return {
        "web": (str(shared / WEB), weights[0]),
        "wiki": (str(wiki), weights[1]),
        "pt": (str(shared / PT), weights[2]),
    }


def mixed_tokens(
    shared: Path, tmp: Path, vocab_size: int = 2048, val_fraction: float = 0.02
) -> tuple[Path, Path, Path]:
    """A 300K-token mix of web, wiki and pt, a tokenizer trained on it, and its token shards."""
    from curate.run.executors.local import LocalExecutor
    from curate.tokens.mix import mix
    from curate.tokens.tokenize import tokenize, train_tokenizer

    ex = LocalExecutor(1, progress=False)
    mix(sources(shared, tmp), tokens=300_000, out=tmp / "mix", executor=ex)
    train_tokenizer(tmp / "mix", vocab_size, tmp / "tok.json")
    tokenize(tmp / "mix", tmp / "tok.json", tmp / "tokens", val_fraction=val_fraction, executor=ex)
    return tmp / "mix", tmp / "tok.json", tmp / "tokens"
