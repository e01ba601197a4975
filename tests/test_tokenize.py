"""Tokenizer training and token shards on real text: round trip, manifest = shards, split by document, bad input."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _tokdata import PT, WEB, mixed_tokens
from tokenizers import Tokenizer, models

from curate.cli.main import main as cli
from curate.core.errors import UsageError
from curate.io.corpus import read_batches
from curate.run.executors.local import LocalExecutor
from curate.tokens.tokenize import EOS, _unit, load_tokenizer, split_key, tokenize
from train.data import TokenDataError, TokenDataset


@pytest.fixture(scope="module")
def built(shared, tmp_path_factory):
    return mixed_tokens(shared, tmp_path_factory.mktemp("tok"))


def test_round_trip_on_real_text(built, shared):
    _, tok_path, _ = built
    tok = load_tokenizer(tok_path)
    assert tok.get_vocab_size() == 2048 and tok.token_to_id(EOS) == 0 and tok.token_to_id("<|pad|>") == 1
    web = [t for b in read_batches(str(shared / WEB)) for t in b.texts][:200]
    texts = web + [t for b in read_batches(str(shared / PT)) for t in b.texts]
    texts += ["naïve café — 東京 🚀\n\n\ttabs  and  spaces ", "quoted <|endoftext|> is plain text", ""]
    encs = tok.encode_batch_fast(texts, add_special_tokens=False)
    assert tok.decode_batch([e.ids for e in encs], skip_special_tokens=False) == texts
    assert 0 not in encs[-2].ids  # the EOS string inside a document is text, not an end of document
    # BPE compresses: 1.5+ characters per token even at a 2K vocabulary trained on 1.2 MB
    assert sum(len(e.ids) for e in encs[:200]) < sum(map(len, web)) / 1.5


def test_manifest_counts_equal_shards(built):
    mix_dir, tok_path, out = built
    m = json.loads((out / "manifest.json").read_text())
    assert m["dtype"] == "uint16" and m["vocab_size"] == 2048 and m["eos_id"] == 0
    assert m["tokenizer"]["sha256"] == hashlib.sha256(tok_path.read_bytes()).hexdigest()
    assert (out / "tokenizer.json").read_bytes() == tok_path.read_bytes()
    for split in ("train", "val"):
        info = m["splits"][split]
        per_source: dict[str, int] = {}
        docs = 0
        for shard in info["shards"]:
            t = pq.read_table(out / shard["file"])
            assert t.schema.field("tokens").type.value_type == pa.uint16()
            lengths = [len(x) for x in t["tokens"].to_pylist()]
            assert sum(lengths) == shard["tokens"] and t.num_rows == shard["docs"]
            assert all(x[-1] == 0 and 0 not in x[:-1] for x in t["tokens"].to_pylist())  # one EOS, at the end
            for s, n in zip(t["source"].to_pylist(), lengths, strict=True):
                per_source[s] = per_source.get(s, 0) + n
            docs += t.num_rows
        assert per_source == info["tokens_per_source"] and docs == info["docs"]
        assert sum(per_source.values()) == info["tokens"] == TokenDataset(out, split).num_tokens
    mix_docs = json.loads((mix_dir / "manifest.json").read_text())["actual"]
    assert m["splits"]["train"]["docs"] + m["splits"]["val"]["docs"] == sum(a["docs"] for a in mix_docs.values())


def test_val_split_is_by_document(built):
    mix_dir, _, out = built
    ids = [i for f in sorted((mix_dir / "data").glob("*.parquet")) for i in pq.read_table(f)["id"].to_pylist()]
    expected_val = sum(_unit(split_key(i)) < 0.02 for i in ids)
    m = json.loads((out / "manifest.json").read_text())
    assert m["splits"]["val"]["docs"] == expected_val > 0
    assert split_key("abc#e3") == "abc" == split_key("abc")
    # a repeated document and its copies are in the same split: decoded val texts never appear in train
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))

    def texts(split):
        rows = [r for s in m["splits"][split]["shards"] for r in pq.read_table(out / s["file"])["tokens"].to_pylist()]
        return {tok.decode(r[:-1]) for r in rows}

    assert not texts("val") & texts("train")


def test_tokenizer_hash_mismatch_refused(built, shared, tmp_path):
    mix_dir, tok_path, out = built
    with pytest.raises(TokenDataError, match="tokenizer sha256"):
        TokenDataset(out, expect_tokenizer_hash="0" * 64)
    TokenDataset(out, expect_tokenizer_hash=hashlib.sha256(tok_path.read_bytes()).hexdigest())
    other = tmp_path / "other.json"
    t = Tokenizer.from_file(str(tok_path))
    t.add_special_tokens(["<|extra|>"])
    t.save(str(other))
    with pytest.raises(UsageError, match="another tokenizer"):
        tokenize(mix_dir, other, out, val_fraction=0.02, executor=LocalExecutor(1, progress=False))


def test_vocab_over_dtype_and_bad_tokenizers(built, tmp_path):
    mix_dir, _, _ = built
    big = Tokenizer(
        models.WordLevel({EOS: 0, **{f"w{i}": i + 1 for i in range(70_000)}, "<unk>": 70_001}, unk_token="<unk>")
    )
    big.save(str(tmp_path / "big.json"))
    with pytest.raises(UsageError, match="does not fit uint16"):
        tokenize(mix_dir, tmp_path / "big.json", tmp_path / "o", dtype="uint16")
    assert not (tmp_path / "o").exists()  # refused before any work
    no_eos = Tokenizer(models.WordLevel({"a": 0, "<unk>": 1}, unk_token="<unk>"))
    no_eos.save(str(tmp_path / "noeos.json"))
    with pytest.raises(UsageError, match="no end-of-document token"):
        tokenize(mix_dir, tmp_path / "noeos.json", tmp_path / "o")
    (tmp_path / "junk.json").write_text("{not json")
    assert (
        cli(["tokenize", str(mix_dir), "--tokenizer", str(tmp_path / "junk.json"), "--out", str(tmp_path / "o")]) == 2
    )
    with pytest.raises(TokenDataError, match="fewer than seq_len"):
        from train.data import Loader

        Loader(TokenDataset(built[2], "val"), seq_len=10**7, batch_size=1)


def test_cli_tokenizer_and_tokenize(shared, tmp_path, capsys):
    pt = str(shared / PT)
    assert cli(["tokenizer", "train", pt, "--vocab-size", "512", "--out", str(tmp_path / "t.json")]) == 0
    tokenize = ["tokenize", pt, "--tokenizer", str(tmp_path / "t.json"), "--out", str(tmp_path / "k"),
                "--val-fraction", "0.05", "--no-progress"]
    assert cli([*tokenize, "--workers", "2"]) == 0
    out = capsys.readouterr().out
    m = json.loads((tmp_path / "k" / "manifest.json").read_text())
    assert m["splits"]["train"]["docs"] + m["splits"]["val"]["docs"] == 486
    assert m["splits"]["val"]["docs"] == sum(_unit(str(i)) < 0.05 for b in read_batches(pt) for i in b.ids)
    assert f"{m['splits']['train']['tokens']:,} tokens" in out
    # rerun resumes (nothing to redo) and yields the same manifest counts
    assert cli(tokenize) == 0
    assert json.loads((tmp_path / "k" / "manifest.json").read_text())["splits"] == m["splits"]
    assert cli(["tokenizer", "train", pt, "--vocab-size", "100", "--out", str(tmp_path / "s.json")]) == 2
    ds = TokenDataset(tmp_path / "k")
    assert ds.dtype == np.uint16 and ds.sources == ["text"] and ds.num_docs == m["splits"]["train"]["docs"]


def test_a_failed_task_publishes_nothing_and_its_rerun_completes(built, shared, tmp_path, monkeypatch):
    """A file that breaks after its first batch leaves neither shard nor temp file behind; the rerun writes both."""
    import curate.tokens.tokenize as tk
    from curate.run.executors.base import TaskFailures

    _, tok_path, _ = built
    real = tk.read_batches

    def breaks_midway(path, batch_size):
        yield next(real(path, batch_size=batch_size))
        raise OSError("connection reset")

    monkeypatch.setattr(tk, "read_batches", breaks_midway)
    out = tmp_path / "k"
    run = lambda: tokenize(str(shared / PT), tok_path, out, val_fraction=0.2, batch_docs=50,  # noqa: E731
                           executor=LocalExecutor(1, progress=False))
    with pytest.raises(TaskFailures, match="connection reset"):
        run()
    assert [p.name for p in out.rglob("*") if p.is_file() and p.parent.name in ("train", "val")] == []
    monkeypatch.undo()
    m = run()
    assert sorted(p.relative_to(out).as_posix() for p in out.glob("*/*.parquet")) == \
        ["train/part-00000.parquet", "val/part-00000.parquet"]
    assert m["splits"]["train"]["docs"] + m["splits"]["val"]["docs"] == 486
