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
    import curate.tokens.common as tk
    from curate.run.executors.base import TaskFailures

    _, tok_path, _ = built
    real = tk.read_batches

    def breaks_midway(path, batch_size, source=None):
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


def test_the_pool_ends_with_the_command(shared, built, tmp_path):
    """tokenize ends its executor's pool when it returns, as `Pipeline.run` does: no idle workers are left behind
    in a process that goes on (a notebook, a script that tokenizes then trains)."""
    _, tok_path, _ = built
    ex = LocalExecutor(2, progress=False)
    tokenize(str(shared / PT), tok_path, tmp_path / "k", val_fraction=0.05, executor=ex)
    assert ex._pool is None


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


# ---------------------------------------------------------------------------------------------- issue 29


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def _manifest(path: Path) -> dict:
    return json.loads((path / "manifest.json").read_text())


def test_shards_carry_checksums_and_max_id_checked_at_open(built, tmp_path):
    """Mechanism 5: each shard entry has its largest id and the xxh3-64 of both files; a byte changed in a `.bin`
    (a hole of zeros, case 29.3, or an id past the vocabulary, case 29.13) is one line naming the file at open."""
    import xxhash

    from curate.io.token_format import TokenDataError as FormatError

    _, _, out = built
    m = _manifest(out)
    for shard in m["splits"]["train"]["shards"] + m["splits"]["val"]["shards"]:
        ids = np.fromfile(out / shard["file"], "<u2")
        assert shard["max_id"] == int(ids.max()) < m["vocab_size"]
        assert shard["xxh3_64"] == {"file": xxhash.xxh3_64_hexdigest((out / shard["file"]).read_bytes()),
                                    "index": xxhash.xxh3_64_hexdigest((out / shard["index"]).read_bytes())}
    TokenDataset(out, verify=True)

    holed = _copy(out, tmp_path / "holed")
    first = m["splits"]["train"]["shards"][0]
    raw = bytearray((holed / first["file"]).read_bytes())
    raw[100:200] = bytes(100)  # what a second writer's temporary file left in the published shard
    (holed / first["file"]).write_bytes(bytes(raw))
    with pytest.raises(FormatError, match=rf"{first['file']}: checksum .* not the manifest's"):
        TokenDataset(holed)
    TokenDataset(holed, verify=False)  # the bytes are not read at open without `verify`

    # an id past the vocabulary in a shard whose manifest agrees with its bytes: the largest id says so
    bad = _copy(out, tmp_path / "bad")
    ids = np.fromfile(bad / first["file"], "<u2")
    ids[7] = m["vocab_size"] + 5
    ids.tofile(bad / first["file"])
    bm = _manifest(bad)
    bm["splits"]["train"]["shards"][0]["xxh3_64"]["file"] = xxhash.xxh3_64_hexdigest(ids.tobytes())
    (bad / "manifest.json").write_text(json.dumps(bm))
    with pytest.raises(FormatError, match=rf"{first['file']}: holds token id {m['vocab_size'] + 5}, outside"):
        TokenDataset(bad)
    # not verified at open: the batch that reads it says so, naming the shard, before the model sees it
    from train.data import Loader

    ds = TokenDataset(bad, verify=False)
    loader = Loader(ds, seq_len=64, batch_size=ds.num_tokens // 65)  # one batch covers every window
    with pytest.raises(FormatError, match=rf"bad/{first['file']} \(a window from token \d+\): token id "
                                          rf"{m['vocab_size'] + 5} is outside the vocabulary"):
        loader.next_batch()
    bm["splits"]["train"]["shards"][0]["max_id"] = m["vocab_size"]  # a manifest that says so itself
    (bad / "manifest.json").write_text(json.dumps(bm))
    with pytest.raises(FormatError, match=r"shards\[0\]\.max_id .* not an id below the vocabulary"):
        TokenDataset(bad, verify=False)


def test_a_bad_index_and_a_damaged_manifest_are_one_line_naming_the_file(built, tmp_path, capsys):
    """Case 29.13: a source code past the shard's sources, a manifest cut short, a missing key: `TokenDataError`
    naming the file (and the key), never an IndexError, JSONDecodeError or KeyError."""
    _, _, out = built
    m = _manifest(out)
    first = m["splits"]["train"]["shards"][0]

    codes = _copy(out, tmp_path / "codes")
    raw = bytearray((codes / first["index"]).read_bytes())
    raw[-2:] = (len(first["sources"]) + 3).to_bytes(2, "little")  # the last document's source code
    (codes / first["index"]).write_bytes(bytes(raw))
    with pytest.raises(TokenDataError, match=rf"{first['index']}: document {first['docs'] - 1} has source code "
                                             rf"{len(first['sources']) + 3}, but the shard lists"):
        TokenDataset(codes, verify=False)

    cut = _copy(out, tmp_path / "cut")
    text = (cut / "manifest.json").read_text()
    (cut / "manifest.json").write_text(text[: len(text) // 2])
    with pytest.raises(TokenDataError, match=r"cut/manifest.json: not valid JSON .*cut short; re-run `curate tokenize`"):
        TokenDataset(cut)

    for name, edit, says in (
        ("nokey", lambda d: d.pop("vocab_size"), "vocab_size is missing"),
        ("noshardkey", lambda d: d["splits"]["train"]["shards"][1].pop("docs"), r"splits.train.shards\[1\].docs is missing"),
        ("badtype", lambda d: d["splits"]["val"].update(shards="x"), "splits.val.shards is a str"),
    ):
        broken = _copy(out, tmp_path / name)
        d = _manifest(broken)
        edit(d)
        (broken / "manifest.json").write_text(json.dumps(d))
        with pytest.raises(TokenDataError, match=rf"{name}/manifest.json: {says}"):
            TokenDataset(broken, "train" if name != "badtype" else "val")

    # manifests written before issue 29 (no checksums, no largest id) load as before, with one warning
    old = _copy(out, tmp_path / "old")
    d = _manifest(old)
    for split in d["splits"].values():
        for s in split["shards"]:
            del s["xxh3_64"], s["max_id"]
    (old / "manifest.json").write_text(json.dumps(d))
    capsys.readouterr()
    assert TokenDataset(old).num_tokens == TokenDataset(out).num_tokens
    TokenDataset(old)
    err = capsys.readouterr().err
    assert err.count("written before they carried checksums") == 1 and "re-run `curate tokenize`" in err


def test_the_trainer_says_a_damaged_manifest_in_one_line(built, tmp_path):
    import subprocess
    import sys

    _, _, out = built
    cut = _copy(out, tmp_path / "cut")
    (cut / "manifest.json").write_text((cut / "manifest.json").read_text()[:100])
    done = subprocess.run([sys.executable, "-m", "train", "--data", str(cut), "--config", "train/configs/tiny.toml",
                           "--steps", "100", "--out", str(tmp_path / "run")], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cut/manifest.json: not valid JSON" in lines[0], done.stderr


def test_tokenize_refuses_to_resume_over_rewritten_inputs_or_an_older_folder(built, shared, tmp_path):
    """Case 29.4: the inputs are fingerprinted (size, mtime, ETag) when the folder is begun and compared on every
    resume; a rewritten input is refused with one line, --overwrite tokenizes again."""
    _, tok_path, _ = built
    src = tmp_path / "pt.jsonl"
    src.write_bytes((shared / PT).read_bytes())
    out = tmp_path / "k"
    ex = LocalExecutor(1, progress=False)
    first = tokenize(str(src), tok_path, out, val_fraction=0.05, executor=ex)
    assert tokenize(str(src), tok_path, out, val_fraction=0.05, executor=ex)["splits"] == first["splits"]  # resumes
    os.utime(src, ns=(src.stat().st_atime_ns, src.stat().st_mtime_ns + 10**9))  # rewritten (the same bytes, even)
    with pytest.raises(UsageError, match=rf"was tokenized from another version of {src} .*pass --overwrite"):
        tokenize(str(src), tok_path, out, val_fraction=0.05, executor=ex)
    with pytest.raises(UsageError, match=r"other settings \(val_fraction\)"):
        tokenize(str(src), tok_path, out, val_fraction=0.1, executor=ex, overwrite=False)
    assert tokenize(str(src), tok_path, out, val_fraction=0.05, executor=ex, overwrite=True)["splits"] == first["splits"]
    config = json.loads((out / "_done" / "config.json").read_text())
    del config["state"]  # a folder begun by curate before issue 29
    config["inputs"] = [r[0] for r in config["inputs"]]
    (out / "_done" / "config.json").write_text(json.dumps(config))
    with pytest.raises(UsageError, match="earlier version of curate, which did not record its inputs' versions"):
        tokenize(str(src), tok_path, out, val_fraction=0.05, executor=ex)
    (out / "_done" / "config.json").write_text("{trunc")
    with pytest.raises(UsageError, match=r"_done/config.json cannot be read .*pass --overwrite"):
        tokenize(str(src), tok_path, out, val_fraction=0.05, executor=ex)


def test_overwrite_checks_everything_before_it_deletes_anything(built, shared, tmp_path, capsys):
    """Mechanism 3: with --overwrite, a bad tokenizer, a missing input, an input inside --out are refused with the
    old folder untouched; the tokenizer may be the folder's own copy (read before the folder is cleared)."""
    _, tok_path, _ = built
    out = tmp_path / "k"

    def cmd(inputs=str(shared / PT), tokenizer=str(tok_path), *more):
        return ["tokenize", inputs, "--tokenizer", tokenizer, "--out", str(out), "--val-fraction", "0.05",
                "--workers", "1", "--no-progress", *more]

    assert cli(cmd()) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (tmp_path / "junk.json").write_text("{}")
    for args, says in (
        ((str(shared / PT), str(tmp_path / "junk.json")), "not a tokenizers JSON file"),
        ((str(shared / PT), str(tmp_path / "missing.json")), "no such tokenizer file"),
        ((str(tmp_path / "missing.jsonl"), str(tok_path)), "no such file or directory"),
        ((str(out / "train"), str(tok_path)), "no text shards"),
    ):
        capsys.readouterr()
        assert cli(cmd(*args, "--overwrite")) == 2
        assert says in capsys.readouterr().err
        assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    (out / "notes.jsonl").write_text(json.dumps({"id": "x", "text": "mine"}) + "\n")
    assert cli(cmd(str(out / "notes.jsonl"), str(tok_path), "--overwrite")) == 2
    assert "is inside --out" in capsys.readouterr().err and (out / "notes.jsonl").exists()
    (out / "notes.jsonl").unlink()
    assert cli(cmd(str(shared / PT), str(out / "tokenizer.json"), "--overwrite")) == 0  # its own copy
    assert (out / "tokenizer.json").read_bytes() == tok_path.read_bytes()
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != "manifest.json"} == \
        {p: b for p, b in before.items() if p.name != "manifest.json"}


def test_batches_are_cut_by_characters(tmp_path):
    """Case 29.9: `text_batches` gives `read_batches`'s documents in the same order, in batches of at most
    `batch_chars` characters (a larger document alone) and `max_docs` documents."""
    import pyarrow as pa

    from curate.tokens.common import text_batches

    rng = np.random.default_rng(0)
    sizes = rng.choice([10, 1_000, 50_000, 400_000], size=300, p=[0.5, 0.3, 0.15, 0.05])
    rows = [{"id": f"d{i}", "text": "x" * int(n)} for i, n in enumerate(sizes)]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "a.parquet", row_group_size=100)
    for name in ("a.jsonl", "a.parquet"):
        got = list(text_batches(str(tmp_path / name), batch_chars=200_000, max_docs=50))
        assert [i for b in got for i in b.ids] == [r["id"] for r in rows]
        for b in got:
            assert len(b.ids) <= 50 and (sum(map(len, b.texts)) <= 200_000 or len(b.ids) == 1)


_RSS_BIG_DOCS = """
import json, sys
from curate.tokens.tokenize import _Task, _tokenize_file, task_tokenizer
path, out, tok = sys.argv[1:]
task_tokenizer(tok)
def status(key):  # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forked parent (pytest)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":")) / 1024
before = status("VmRSS")
_tokenize_file(_Task(0, path, out, tok, "uint16", 0.0, 1000, 1))
print(json.dumps({"before": before, "peak": status("VmHWM")}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmRSS from /proc")
def test_large_documents_are_tokenized_in_bounded_memory(built, shared, tmp_path):
    """Case 29.9: 16 documents of 150 KB and 2 of 2 MB (6.4 MB of real text) in one task. By count (1,000 documents
    a batch) the task encoded all of it at once, and the encoder holds ~150-300 bytes a token: ~1 GB. By
    characters, and long documents in exact pieces, it holds `BATCH_CHARS` of text at a time (measured here:
    ~540 MiB when only the batches were cut, a 2 MB document being encoded whole); the shards equal a
    document-at-a-time encoding."""
    import subprocess
    import sys

    _, tok_path, _ = built
    text = "\n\n".join(t for b in read_batches(str(shared / WEB)) for t in b.texts)
    docs = [text[i * 150_000 : (i + 1) * 150_000] for i in range(16)]
    docs += [(text * 2)[j * 300_000 : j * 300_000 + 2_000_000] for j in range(2)]
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps({"id": f"b{i}", "text": d}) + "\n" for i, d in enumerate(docs)))
    out = tmp_path / "out"
    (out / "_done").mkdir(parents=True)
    got = subprocess.run([sys.executable, "-c", _RSS_BIG_DOCS, str(path), str(out), str(tok_path)], check=True,
                         capture_output=True, text=True, env={**os.environ, "RAYON_NUM_THREADS": "1"})
    rss = json.loads(got.stdout)
    assert rss["peak"] - rss["before"] < 150, rss
    tok = Tokenizer.from_file(str(tok_path))
    ids = [x for d in docs for x in [*tok.encode(d, add_special_tokens=False).ids, 0]]
    assert (out / "train" / "part-00000.bin").read_bytes() == np.array(ids, "<u2").tobytes()


def test_tokenizer_train_checks_its_output_before_training(shared, tmp_path, capsys):
    """`curate tokenizer train`: a folder, an input or a file that is not a tokenizer is never replaced (one line,
    before any training); an older tokenizer is replaced whole, under a temporary name of its own."""
    pt = str(shared / PT)
    train = ["tokenizer", "train", pt, "--vocab-size", "300", "--sample-chars", "2e5"]
    (tmp_path / "folder").mkdir()
    (tmp_path / "data.jsonl").write_text('{"id": "1", "text": "precious"}\n')
    for out, says in ((tmp_path / "folder", "is a folder"), (tmp_path / "data.jsonl", "not a tokenizer JSON"),
                      (shared / PT, "is one of the inputs")):
        capsys.readouterr()
        assert cli([*train, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "data.jsonl").read_text() == '{"id": "1", "text": "precious"}\n'
    assert cli([*train, "--out", str(tmp_path / "tok.json")]) == 0
    assert cli([*train[:3], "--vocab-size", "400", "--sample-chars", "2e5", "--out", str(tmp_path / "tok.json")]) == 0  # a tokenizer: replaced
    assert load_tokenizer(tmp_path / "tok.json").get_vocab_size() == 400
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.jsonl", "folder", "tok.json"]  # no temporary left
    assert cli([*train, "--min-frequency", "0", "--out", str(tmp_path / "t2.json")]) == 2


def test_long_documents_are_encoded_in_pieces_with_the_same_ids(built):
    """The cut `encode_ids` makes in a long document (after a non-space, before a space or newline) is one the
    byte-level pre-tokenizer always makes: pieces give the document's ids, on texts built from the characters that
    could break it (Unicode spaces Python and the regex disagree on, runs of spaces, contractions, the EOS string)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from curate.tokens.common import encode_ids, pieces, splits_exactly

    tok = load_tokenizer(built[1])
    assert splits_exactly(tok)
    chars = st.sampled_from([*"ab cd\n\t  \r'sl9.,=-", "\u00a0", "\u3000", "\x1c", "\x85", "é", "東", "🚀",
                             "\u200b", "'s", "'ll", EOS, "\u2028", "\v", "\f"])

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(st.lists(chars, max_size=300).map("".join), st.integers(4, 60))
    def same_ids(text, size):
        cut = pieces(text, size)
        assert "".join(cut) == text
        whole = tok.encode(text, add_special_tokens=False).ids
        assert [i for p in cut for i in tok.encode(p, add_special_tokens=False).ids] == whole
        assert encode_ids(tok, [text, text], np.uint32, batch_chars=size, exact_pieces=True)[1].tolist() == whole

    same_ids()
    no_regex = Tokenizer.from_str(tok.to_str().replace('"use_regex":true', '"use_regex":false'))
    assert not splits_exactly(no_regex)  # another pre-tokenizer: documents are encoded whole


def test_a_file_named_by_two_specs_is_read_once(tmp_path):
    """A mix folder and one of its shards, or a link beside its target, name one file: it is tokenized once."""
    from curate.tokens.tokenize import _all_inputs

    data = tmp_path / "mix" / "data"
    data.mkdir(parents=True)
    for name in ("a.jsonl", "b.jsonl"):
        (data / name).write_text('{"text": "x"}\n')
    (tmp_path / "link.jsonl").symlink_to(data / "a.jsonl")
    files = _all_inputs([str(tmp_path / "mix"), str(data / "a.jsonl"), str(tmp_path / "link.jsonl")])
    assert sorted(os.path.realpath(f) for f in files) == sorted(str(data / n) for n in ("a.jsonl", "b.jsonl"))


def test_a_killed_runs_output_is_refused_unless_allow_partial_which_the_manifest_records(built, shared, tmp_path,
                                                                                         capsys):
    """Issue 36.4: a run killed with some tasks done and no manifest.json was mixed and tokenized without a word.
    `mix` and `tokenize` refuse it in one line; `--allow-partial` reads it and says so in the manifest."""
    from curate.cli.main import main as cli

    tok_path = str(built[1])
    run = tmp_path / "run"
    (run / "data").mkdir(parents=True)
    (run / "_done").mkdir()
    (run / "data" / "part-00000-000.jsonl").write_text((shared / PT).read_text())
    capsys.readouterr()
    for argv in (["mix", "--source", f"pt={run}:1.0", "--tokens", "10K", "--out", str(tmp_path / "m")],
                 ["tokenize", str(run), "--tokenizer", tok_path, "--out", str(tmp_path / "t")]):
        assert cli([*argv, "--no-progress"]) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is not a finished output" in err[0] and "--allow-partial" in err[0], err
        assert not (tmp_path / argv[argv.index("--out") + 1]).exists()
    assert cli(["tokenize", str(run), "--tokenizer", tok_path, "--out", str(tmp_path / "t"), "--allow-partial",
                "--val-fraction", "0", "--no-progress", "--workers", "1"]) == 0
    manifest = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert manifest["partial_inputs"] == [str(run)] and manifest["splits"]["train"]["docs"] > 0
    (run / "manifest.json").write_text("{}")  # finished: read as it is, nothing recorded
    assert cli(["tokenize", str(run), "--tokenizer", tok_path, "--out", str(tmp_path / "t2"), "--val-fraction", "0",
                "--no-progress", "--workers", "1"]) == 0
    assert "partial_inputs" not in json.loads((tmp_path / "t2" / "manifest.json").read_text())
