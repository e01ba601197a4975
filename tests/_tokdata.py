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
    mix(sources(shared, tmp), tokens=300_000, out=tmp / "mix", executor=ex, chars_per_token=4.0)
    train_tokenizer(tmp / "mix", vocab_size, tmp / "tok.json")
    tokenize(tmp / "mix", tmp / "tok.json", tmp / "tokens", val_fraction=val_fraction, executor=ex)
    return tmp / "mix", tmp / "tok.json", tmp / "tokens"


def read_shard(tokens_dir: Path, shard: dict, dtype: str) -> tuple[list, list]:
    """A `.bin` + `.idx` shard read with plain numpy, as the format is documented: (token lists, source names)."""
    import numpy as np

    flat = np.fromfile(tokens_dir / shard["file"], dtype=np.dtype(dtype).newbyteorder("<"))
    raw = (tokens_dir / shard["index"]).read_bytes()
    assert raw[:8] == b"PNRIDX01"
    n = int.from_bytes(raw[8:16], "little")
    ends = np.frombuffer(raw, "<i8", n, 16)
    codes = np.frombuffer(raw, "<u2", n, 16 + 8 * n)
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    return [flat[a:b].tolist() for a, b in zip(starts, ends, strict=True)], [shard["sources"][c] for c in codes]


def legacy_copy(tokens_dir: Path, out: Path) -> Path:
    """The same token shards in the old `peneira.tokens/1` layout (one Parquet per shard, `tokens: list<uint>`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    m = json.loads((tokens_dir / "manifest.json").read_text())
    value = pa.uint16() if m["dtype"] == "uint16" else pa.uint32()
    for info in m["splits"].values():
        for shard in info["shards"]:
            docs, srcs = read_shard(tokens_dir, shard, m["dtype"])
            name = shard["file"].replace(".bin", ".parquet")
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            table = pa.table({"tokens": pa.array(docs, pa.list_(value)), "source": pa.array(srcs)})
            pq.write_table(table, out / name, row_group_size=50)  # several Arrow chunks per shard, as v1 wrote
            shard["file"] = name
            del shard["index"], shard["sources"]
    m["format"] = "peneira.tokens/1"
    (out / "manifest.json").write_text(json.dumps(m))
    return out
