"""train/data.py on real token shards: exact windows, deterministic order, resume by global sample count at any
world size / micro-batch, disjoint ranks, the old Parquet format, and shards read from a URL through a node cache."""

from __future__ import annotations

import json
import shutil
import threading

import fsspec
import numpy as np
import pytest
import torch
from _tokdata import legacy_copy, mixed_tokens, read_shard

import train.data as data
from train.data import Loader, TokenDataError, TokenDataset, permute

WEIGHTS = [None, {"web": 0.6, "wiki": 0.3, "pt": 0.1}]


@pytest.fixture(scope="module")
def tokens(shared, tmp_path_factory):
    return mixed_tokens(shared, tmp_path_factory.mktemp("load"), val_fraction=0.05)[2]


def reference_stream(tokens, split="train"):
    """The split's token stream and per-token source, read with plain numpy from the documented layout."""
    m = json.loads((tokens / "manifest.json").read_text())
    ids, srcs = [], []
    for shard in m["splits"][split]["shards"]:
        docs, names = read_shard(tokens, shard, m["dtype"])
        for d, s in zip(docs, names, strict=True):
            ids += d
            srcs += [s] * len(d)
    return np.array(ids), np.array(srcs)


def test_batches_are_windows_of_the_stream(tokens):
    ds = TokenDataset(tokens)
    assert ds.sources == ["pt", "web", "wiki"] and ds.vocab_size == 2048 and ds.eos_id == 0
    stream, _ = reference_stream(tokens)
    assert ds.num_tokens == len(stream)
    loader = Loader(ds, seq_len=64, batch_size=8)
    assert loader.tokens_per_batch == 512
    for _ in range(20):
        x, y = loader.next_batch()
        assert x.shape == y.shape == (8, 64) and x.dtype == y.dtype == torch.int64
        for row_x, row_y, start in zip(x, y, loader.last_window_starts, strict=True):
            assert start % 64 == 0
            assert row_x.tolist() == stream[start : start + 64].tolist()
            assert row_y.tolist() == stream[start + 1 : start + 65].tolist()
    assert ds.read(len(stream) - 70, 70).tolist() == stream[-70:].tolist()


def test_source_at_and_groups_match_the_stream(tokens):
    ds = TokenDataset(tokens)
    stream, srcs = reference_stream(tokens)
    pos = np.arange(0, len(stream), 97)
    assert (np.array(ds.sources)[ds.source_at(pos)] == srcs[pos]).all()
    loader = Loader(ds, seq_len=32, batch_size=4, source_weights={s: 1.0 for s in ds.sources})
    n = (len(stream) - 1) // 32
    for g in loader.groups:  # a group's windows are exactly those whose first token is in its source
        expected = [i for i in range(n) if srcs[i * 32] == g.name]
        assert g.window(np.arange(g.size)).tolist() == expected


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 1000, 4097])
def test_permutation_is_a_bijection(n):
    keys = np.random.default_rng(n).bit_generator.random_raw(6)
    p = permute(np.arange(n), n, keys)
    assert sorted(p.tolist()) == list(range(n))
    if n > 64:  # and it actually shuffles
        assert np.mean(p == np.arange(n)) < 0.05


def test_epoch_visits_every_window_once(tokens):
    ds = TokenDataset(tokens, "val")
    loader = Loader(ds, seq_len=32, batch_size=4, seed=3)
    n = loader.num_windows
    assert n == (ds.num_tokens - 1) // 32
    seen = np.concatenate([loader.last_window_starts for _ in range(n // 4) if loader.next_batch()])
    assert len(set(seen.tolist())) == len(seen) == (n // 4) * 4


def test_order_is_a_function_of_seed_and_sample(tokens):
    ds = TokenDataset(tokens)
    a, b, c = (Loader(ds, 16, 4, seed=s) for s in (0, 0, 1))
    for _ in range(3):
        xa, xb, xc = a.next_batch()[0], b.next_batch()[0], c.next_batch()[0]
        assert torch.equal(xa, xb) and not torch.equal(xa, xc)


@pytest.mark.parametrize("weights", WEIGHTS)
def test_one_rank_equals_two_ranks_and_micro_batches(tokens, weights):
    """1 rank x batch 4 == 2 ranks x batch 2 (rank 0's rows, then rank 1's) == 1 rank x batch 2 called twice."""
    ds = TokenDataset(tokens)
    one = Loader(ds, 32, 4, seed=5, source_weights=weights)
    two = [Loader(ds, 32, 2, seed=5, rank=r, world_size=2, source_weights=weights) for r in (0, 1)]
    micro = Loader(ds, 32, 2, seed=5, source_weights=weights)
    for _ in range(300):  # crosses the 4,096-sample draw blocks
        x = one.next_batch()[0]
        assert torch.equal(x, torch.cat([two[0].next_batch()[0], two[1].next_batch()[0]]))
        assert torch.equal(x, torch.cat([micro.next_batch()[0], micro.next_batch()[0]]))
    assert one.state_dict()["samples"] == two[0].state_dict()["samples"] == micro.state_dict()["samples"] == 1200
    assert one.state_dict()["counts"] == two[1].state_dict()["counts"] == micro.state_dict()["counts"]


@pytest.mark.parametrize("weights", WEIGHTS)
def test_resume_mid_epoch_and_across_epochs(tokens, weights):
    ds = TokenDataset(tokens, "val")
    ref = Loader(ds, seq_len=32, batch_size=8, seed=7, source_weights=weights)
    epoch_steps = ref.num_windows // 8
    for _ in range(epoch_steps - 2):  # stop just before an epoch boundary
        ref.next_batch()
    state = json.loads(json.dumps(ref.state_dict()))  # JSON-safe
    expected = [ref.next_batch() for _ in range(5)]  # crosses into the next epoch
    resumed = Loader(TokenDataset(tokens, "val"), seq_len=32, batch_size=8, seed=7, source_weights=weights)
    resumed.load_state_dict(state)
    for x, y in expected:
        rx, ry = resumed.next_batch()
        assert torch.equal(x, rx) and torch.equal(y, ry)


@pytest.mark.parametrize("weights", WEIGHTS)
def test_resume_a_two_rank_state_in_one_rank(tokens, weights):
    """A state saved by 2 ranks x micro-batch 2 continues, in 1 rank x batch 4 or 1 x 1, at the same global sample."""
    ds = TokenDataset(tokens)
    ref = Loader(ds, 32, 4, seed=2, source_weights=weights)
    for _ in range(37):
        ref.next_batch()
    expected = torch.cat([ref.next_batch()[0] for _ in range(6)])
    ranks = [Loader(ds, 32, 2, seed=2, rank=r, world_size=2, source_weights=weights) for r in (0, 1)]
    for _ in range(37):
        for loader in ranks:
            loader.next_batch()
    state = json.loads(json.dumps(ranks[1].state_dict()))
    assert state["samples"] == 37 * 4 and state["world_size"] == 2
    for batch in (4, 1):
        single = Loader(ds, 32, batch, seed=2, source_weights=weights)
        single.load_state_dict(state)
        got = torch.cat([single.next_batch()[0] for _ in range(24 // batch)])
        assert torch.equal(got, expected)


def test_ranks_read_disjoint_windows(tokens):
    ds = TokenDataset(tokens)
    ranks = [Loader(ds, seq_len=64, batch_size=8, seed=1, rank=r, world_size=2) for r in (0, 1)]
    seen = [set(), set()]
    for _ in range(40):
        for r, loader in enumerate(ranks):
            loader.next_batch()
            seen[r].update(loader.last_window_starts.tolist())
    assert len(seen[0]) == len(seen[1]) == 320 and not seen[0] & seen[1]
    assert ranks[0].state_dict() == ranks[1].state_dict()  # one saved state resumes every rank


def test_source_weights_are_applied(tokens):
    ds = TokenDataset(tokens)
    loader = Loader(ds, seq_len=32, batch_size=32, seed=0, source_weights={"pt": 0.5, "wiki": 0.5})
    starts = np.concatenate([loader.last_window_starts for _ in range(30) if loader.next_batch()])
    names = np.array(ds.sources)[ds.source_at(starts)]
    assert set(names) == {"pt", "wiki"}
    assert abs((names == "pt").mean() - 0.5) < 0.06  # 960 draws: 4 standard deviations
    with pytest.raises(TokenDataError, match="not in the data"):
        Loader(ds, 32, 4, source_weights={"books": 1.0})


def test_legacy_parquet_shards_read_the_same(tokens, tmp_path):
    old = TokenDataset(legacy_copy(tokens, tmp_path / "v1"))
    new = TokenDataset(tokens)
    assert old.num_tokens == new.num_tokens and old.num_docs == new.num_docs and old.sources == new.sources
    assert len(old.shards) > len(new.shards)  # several Arrow chunks per shard
    pos = np.arange(0, new.num_tokens, 53)
    assert (old.source_at(pos) == new.source_at(pos)).all()
    for weights in WEIGHTS:
        a, b = (Loader(d, 48, 4, seed=9, source_weights=weights) for d in (old, new))
        for _ in range(50):
            assert torch.equal(a.next_batch()[0], b.next_batch()[0])


def test_url_shards_are_fetched_once_into_the_node_cache(tokens, tmp_path, monkeypatch):
    remote = "memory://bucket/tokens"
    mem = fsspec.filesystem("memory")
    mem.put(str(tokens), "/bucket/tokens", recursive=True)
    monkeypatch.setenv("PENEIRA_TOKEN_CACHE", str(tmp_path / "cache"))
    copies = []
    real_copy = data.shutil.copyfileobj
    monkeypatch.setattr(data.shutil, "copyfileobj", lambda *a: (copies.append(1), real_copy(*a)))
    opened = []
    threads = [threading.Thread(target=lambda: opened.append(TokenDataset(remote))) for _ in range(4)]
    for t in threads:  # four "ranks" on one node at once
        t.start()
    for t in threads:
        t.join()
    m = json.loads((tokens / "manifest.json").read_text())
    files = [s[k] for s in m["splits"]["train"]["shards"] for k in ("file", "index")] + ["tokenizer.json"]
    assert len(opened) == 4 and len(copies) == len(files)  # each file downloaded once
    local = TokenDataset(tokens)
    for ds in opened:
        assert ds.location == remote and ds.path.parent == tmp_path / "cache"
        assert ds.num_tokens == local.num_tokens
        assert torch.equal(Loader(ds, 32, 4).next_batch()[0], Loader(local, 32, 4).next_batch()[0])
    assert sorted(p.name for p in ds.path.rglob("*") if p.is_file() and not p.name.endswith(".lock")) == sorted(
        ["manifest.json"] + [f.split("/")[-1] for f in files])  # no temporary file left
    TokenDataset(remote)  # a later open finds everything cached
    assert len(copies) == len(files)


def test_bad_state_and_tampered_shards(tokens, tmp_path):
    ds = TokenDataset(tokens)
    state = Loader(ds, 32, 4).state_dict()
    Loader(ds, 32, 8, world_size=2).load_state_dict(state)  # another micro-batch and world size: fine
    with pytest.raises(ValueError, match="seq_len"):
        Loader(ds, 64, 4).load_state_dict(state)
    with pytest.raises(ValueError, match="no global sample count"):
        Loader(ds, 32, 4).load_state_dict({"step": 3, "counts": [12]})
    copy = tmp_path / "tokens"
    shutil.copytree(tokens, copy)
    m = json.loads((copy / "manifest.json").read_text())
    m["splits"]["train"]["shards"][0]["tokens"] += 1
    (copy / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(TokenDataError, match="manifest says"):
        TokenDataset(copy)
    m["splits"]["train"]["shards"][0]["tokens"] -= 1
    m["dtype"] = "uint32"
    (copy / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(TokenDataError, match="uint32 tokens, manifest says"):
        TokenDataset(copy)
    with pytest.raises(TokenDataError, match="no split"):
        TokenDataset(tokens, "test")


@pytest.mark.parametrize("key", ["file", "index"])
@pytest.mark.parametrize("name", ["../outside.bin", "/etc/passwd", "train/../../outside.bin", "C:/x.bin"])
def test_manifest_names_outside_the_token_directory_are_refused(tokens, tmp_path, key, name):
    """A shard named `../x` or by an absolute path would be read (or, for a URL, fetched) from outside the token
    directory: refused with the name, before anything is opened. The file is planted so only the check can refuse."""
    copy = tmp_path / "sub" / "tokens"
    shutil.copytree(tokens, copy)
    m = json.loads((copy / "manifest.json").read_text())
    first = m["splits"]["train"]["shards"][0]
    shutil.copy(copy / first[key], tmp_path / "sub" / "outside.bin")  # what `../outside.bin` would find
    first[key] = name
    (copy / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(TokenDataError, match="outside the token directory"):
        TokenDataset(copy)


def test_one_token_format_module():
    """curate tokenize and the trainer share one definition of the format (not two copies kept equal by comments)."""
    import curate.tokens.tokenize as tokenize
    from curate.io import token_format

    assert data.FORMAT is token_format.FORMAT and tokenize.FORMAT is token_format.FORMAT
    assert data.TokenDataError is token_format.TokenDataError
    ends, codes = np.array([3, 7, 7, 12]), np.array([0, 1, 1, 0])
    raw = token_format.encode_index(ends, codes)
    assert len(raw) == token_format.index_size(4) == 16 + 10 * 4
    got = token_format.decode_index(raw, len(raw), "x.idx")
    assert got[0].tolist() == ends.tolist() and got[1].tolist() == codes.tolist()
    with pytest.raises(TokenDataError, match="expected 56"):
        token_format.decode_index(raw + b"\0", len(raw) + 1, "x.idx")


def test_trainer_reads_url_data(tokens, tmp_path, monkeypatch):
    """`python -m train --data URL`: a few steps on shards at a memory:// URL, the same losses as the local path."""
    from train.config import load_config
    from train.loop import train

    mem = fsspec.filesystem("memory")
    mem.put(str(tokens), "/bucket/trainer-tokens", recursive=True)
    monkeypatch.setenv("PENEIRA_TOKEN_CACHE", str(tmp_path / "cache"))
    small = {"n_layer": 1, "n_head": 2, "n_embd": 32, "seq_len": 32, "micro_batch": 4, "batch_tokens": 128,
             "steps": 3, "warmup_steps": 1, "eval_every": 0, "ckpt_every": 0, "progress": False, "plots": False}
    losses = []
    for where in ("memory://bucket/trainer-tokens", str(tokens)):
        with torch.random.fork_rng():
            cfg = load_config("tiny", {**small, "data": where, "out": str(tmp_path / "run")})
            losses.append(train(cfg, overwrite=True).losses)  # the same directory for both runs
    assert len(losses[0]) == 3 and losses[0] == losses[1]
    assert (tmp_path / "run" / "tokenizer.json").read_bytes() == (tokens / "tokenizer.json").read_bytes()
