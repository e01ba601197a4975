"""Tokenizer training and token shards on real text: round trip, manifest = shards, split by document, bad input."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import xxhash
from _tokdata import PT, WEB, mixed_tokens, read_shard
from tokenizers import Tokenizer, models

from curate.cli.main import main as cli
from curate.core.errors import UsageError
from curate.io.corpus import read_batches
from curate.run.executors.local import LocalExecutor
from curate.tokens.tokenize import EOS, _unit, load_tokenizer, split_key, tokenize, train_tokenizer
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
    assert m["format"] == "peneira.tokens/2" and m["dtype"] == "uint16" and m["vocab_size"] == 2048
    assert m["eos_id"] == 0 and m["tokenizer"]["sha256"] == hashlib.sha256(tok_path.read_bytes()).hexdigest()
    assert (out / "tokenizer.json").read_bytes() == tok_path.read_bytes()
    for split in ("train", "val"):
        info = m["splits"][split]
        per_source: dict[str, int] = {}
        docs = 0
        for shard in info["shards"]:
            assert (out / shard["file"]).stat().st_size == 2 * shard["tokens"]  # flat uint16, nothing else
            rows, srcs = read_shard(out, shard, "uint16")
            assert sum(map(len, rows)) == shard["tokens"] and len(rows) == shard["docs"]
            assert all(x[-1] == 0 and 0 not in x[:-1] for x in rows)  # one EOS, at the end
            for s, x in zip(srcs, rows, strict=True):
                per_source[s] = per_source.get(s, 0) + len(x)
            docs += len(rows)
        assert per_source == info["tokens_per_source"] and docs == info["docs"]
        assert sum(per_source.values()) == info["tokens"] == TokenDataset(out, split).num_tokens
    mix_docs = json.loads((mix_dir / "manifest.json").read_text())["actual"]
    assert m["splits"]["train"]["docs"] + m["splits"]["val"]["docs"] == sum(a["docs"] for a in mix_docs.values())


def test_shards_equal_a_document_at_a_time_reference(built):
    """Bit-equality with the straightforward implementation: each input document, in file order, encoded alone,
    EOS appended, routed by xxh64 of its id (without the copy suffix), appended to its split's shard."""
    mix_dir, tok_path, out = built
    tok = Tokenizer.from_file(str(tok_path))
    m = json.loads((out / "manifest.json").read_text())
    for i, f in enumerate(sorted((mix_dir / "data").glob("*.parquet"))):
        expected = {"train": [], "val": []}
        for row in pq.read_table(f, columns=["id", "text"]).to_pylist():
            key = row["id"].split("#e")[0]
            split = "val" if xxhash.xxh64_intdigest(key.encode()) / 2**64 < 0.02 else "train"
            expected[split] += tok.encode(row["text"], add_special_tokens=False).ids + [0]
        for split, ids in expected.items():
            path = out / split / f"part-{i:05d}.bin"
            assert (path.read_bytes() if ids else None) == (np.array(ids, "<u2").tobytes() if ids else None)
            assert (f"{split}/part-{i:05d}.bin" in [s["file"] for s in m["splits"][split]["shards"]]) == bool(ids)


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
        rows = [r for s in m["splits"][split]["shards"] for r in read_shard(out, s, "uint16")[0]]
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
    assert sorted(p.relative_to(out).as_posix() for p in out.glob("[tv]*/part-*")) == \
        ["train/part-00000.bin", "train/part-00000.idx", "val/part-00000.bin", "val/part-00000.idx"]
    assert m["splits"]["train"]["docs"] + m["splits"]["val"]["docs"] == 486


def test_urls_end_to_end(shared, tmp_path, monkeypatch):
    """Tokenizer training, tokenizing and loading with every path a URL: memory:// (an object store as far as
    the code can tell) and file://; the results equal the local run's byte for byte."""
    import fsspec

    mem = fsspec.filesystem("memory")
    mem.put(str(shared / PT), "/in/pt.jsonl")
    ex = LocalExecutor(1, progress=False)
    train_tokenizer(str(shared / PT), 512, tmp_path / "tok.json")
    local = tokenize(str(shared / PT), tmp_path / "tok.json", tmp_path / "k", val_fraction=0.05, executor=ex)
    info = train_tokenizer("memory://in/pt.jsonl", 512, "memory://models/tok.json")
    assert mem.cat("/models/tok.json") == (tmp_path / "tok.json").read_bytes() and info["path"].startswith("memory")
    for out in ("memory://out/k", f"file://{tmp_path}/fk"):
        m = tokenize("memory://in/pt.jsonl", "memory://models/tok.json", out, val_fraction=0.05, executor=ex)
        assert m["splits"]["train"]["tokens_per_source"] == local["splits"]["train"]["tokens_per_source"]
        for shard in m["splits"]["train"]["shards"] + m["splits"]["val"]["shards"]:
            with fsspec.open(f"{out}/{shard['file']}", "rb") as f:
                assert f.read() == (tmp_path / "k" / shard["file"]).read_bytes()
    monkeypatch.setenv("PENEIRA_TOKEN_CACHE", str(tmp_path / "cache"))
    remote, here = TokenDataset("memory://out/k"), TokenDataset(tmp_path / "k")
    assert remote.num_tokens == here.num_tokens and remote.path.is_relative_to(tmp_path / "cache")
    assert (remote.path / "tokenizer.json").read_bytes() == (tmp_path / "tok.json").read_bytes()
    assert np.array_equal(remote.read(0, 500), here.read(0, 500))


def test_cli_prints_realized_shares_against_the_plan(built, capsys):
    """The shares table is checked against the shards read independently; a warning exactly where a source
    is off by more than two points."""
    mix_dir, tok_path, out = built
    assert cli(["tokenize", str(mix_dir), "--tokenizer", str(tok_path), "--out", str(out), "--val-fraction",
                "0.02", "--no-progress"]) == 0  # a resume: nothing to redo, the table is printed again
    printed = capsys.readouterr()
    m = json.loads((out / "manifest.json").read_text())
    plan = json.loads((mix_dir / "manifest.json").read_text())["plan"]["sources"]
    counts: dict[str, int] = {}
    for split in m["splits"].values():
        for shard in split["shards"]:
            for row, s in zip(*read_shard(out, shard, "uint16"), strict=True):
                counts[s] = counts.get(s, 0) + len(row)
    total, planned = sum(counts.values()), sum(p["target_tokens"] for p in plan.values())
    for s in ("web", "wiki", "pt"):
        real, want = counts[s] / total, plan[s]["target_tokens"] / planned
        assert f"{want:>8.2%} {real:>9.2%}" in printed.out
        assert (f"source {s!r} holds" in printed.err) == (abs(real - want) > 0.02)


def test_progress_shows_documents(shared, built, tmp_path, capsys):
    _, tok_path, _ = built
    tokenize(str(shared / PT), tok_path, tmp_path / "k", val_fraction=0.05, executor=LocalExecutor(1))
    assert "486 docs" in capsys.readouterr().err


def test_a_task_reuses_the_tokenizer_of_the_last_task_until_its_file_changes(built, shared, tmp_path):
    from curate.tokens.tokenize import task_tokenizer

    _, tok_path, _ = built
    path = tmp_path / "tok.json"
    path.write_bytes(tok_path.read_bytes())
    first = task_tokenizer(path)
    assert task_tokenizer(path) is first and task_tokenizer(str(path)) is first
    train_tokenizer(str(shared / PT), 300, path)  # same path, another tokenizer
    assert task_tokenizer(path) is not first and task_tokenizer(path).get_vocab_size() == 300
    assert task_tokenizer(path).encode_special_tokens  # checked and set up as load_tokenizer does


_RSS_AFTER_TASKS = """
import json, sys
from curate.tokens.mix import _Measure, _measure
from curate.tokens.tokenize import _Task, _tokenize_file
phase, tok, path, out = sys.argv[1:]
rss = []
for i in range(12):
    if phase == "tokenize":
        _tokenize_file(_Task(i, path, out, tok, "uint16", 0.0, 1000, 1))
    else:
        _measure(_Measure(path, "web", f"{out}/counts-{i}.npy", tok, 0.0, 0))
    with open("/proc/self/status") as f:
        rss.append(next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024)
print(json.dumps(rss))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmRSS from /proc")
@pytest.mark.parametrize("phase", ["tokenize", "measure"])
def test_a_worker_does_not_grow_with_the_files_it_tokenizes(built, shared, tmp_path, phase):
    """Twelve file tasks (`tokenize`'s, or mix `measure`'s with a tokenizer) in one process, a pool worker's
    life: its resident memory does not trend up after the 3rd. A tokenizer built per task and never given back
    (tokenizers 0.23) cost 4-5 MiB per task and encoding thread on this file. The allocator moves RSS up and
    down by steps of ~9 MiB from task to task, so one reading against another (task 12 against task 3) failed
    one run in four with no leak; the least-squares slope over tasks 3-12 is well under 1 MiB a task then."""
    import subprocess
    import sys

    import pyarrow as pa

    _, tok_path, _ = built
    docs = [x for b in read_batches(str(shared / WEB)) for x in zip(b.ids, b.texts, strict=True)][:150]
    path = tmp_path / "web.parquet"
    pq.write_table(pa.table({"id": [i for i, _ in docs], "text": [t for _, t in docs]}), path)
    (tmp_path / "out" / "_done").mkdir(parents=True)
    got = subprocess.run([sys.executable, "-c", _RSS_AFTER_TASKS, phase, str(tok_path), str(path), str(tmp_path / "out")],
                         check=True, capture_output=True, text=True, env={**os.environ, "RAYON_NUM_THREADS": "1"})
    rss = json.loads(got.stdout)[2:]
    slope = np.polyfit(np.arange(len(rss)), rss, 1)[0]
    assert slope < 2.5, (slope, rss)
