"""train/data.py on real token shards: exact windows, deterministic order, exact resume, disjoint ranks."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from _tokdata import mixed_tokens

from train.data import Loader, TokenDataError, TokenDataset


@pytest.fixture(scope="module")
def tokens(shared, tmp_path_factory):
    return mixed_tokens(shared, tmp_path_factory.mktemp("load"), val_fraction=0.05)[2]


def test_batches_are_windows_of_the_stream(tokens):
    ds = TokenDataset(tokens)
    assert ds.sources == ["pt", "web", "wiki"] and ds.vocab_size == 2048 and ds.eos_id == 0
    loader = Loader(ds, seq_len=64, batch_size=8)
    assert loader.tokens_per_batch == 512
    x, y = loader.next_batch()
    assert x.shape == y.shape == (8, 64) and x.dtype == y.dtype == torch.int64
    for row_x, row_y, start in zip(x, y, loader.last_window_starts, strict=True):
        window = ds.read(int(start), 65).astype(np.int64)
        assert start % 64 == 0
        assert row_x.tolist() == window[:-1].tolist() and row_y.tolist() == window[1:].tolist()
    assert int(x.max()) < ds.vocab_size


def test_epoch_visits_every_window_once(tokens):
    ds = TokenDataset(tokens, "val")
    loader = Loader(ds, seq_len=32, batch_size=4, seed=3)
    n = loader.num_windows
    assert n == (ds.num_tokens - 1) // 32
    seen = np.concatenate([loader.last_window_starts for _ in range(n // 4) if loader.next_batch()])
    assert len(set(seen.tolist())) == len(seen) == (n // 4) * 4


def test_order_is_a_function_of_seed_step_rank(tokens):
    ds = TokenDataset(tokens)
    a, b, c = (Loader(ds, 16, 4, seed=s) for s in (0, 0, 1))
    for _ in range(3):
        xa, xb, xc = a.next_batch()[0], b.next_batch()[0], c.next_batch()[0]
        assert torch.equal(xa, xb) and not torch.equal(xa, xc)


@pytest.mark.parametrize("weights", [None, {"web": 0.6, "wiki": 0.3, "pt": 0.1}])
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
    single = Loader(ds, seq_len=64, batch_size=16, seed=1)  # ranks split what one process would read
    both = set()
    for _ in range(40):
        single.next_batch()
        both.update(single.last_window_starts.tolist())
    assert both == seen[0] | seen[1]


def test_source_weights_are_applied(tokens):
    ds = TokenDataset(tokens)
    loader = Loader(ds, seq_len=32, batch_size=32, seed=0, source_weights={"pt": 0.5, "wiki": 0.5})
    starts = np.concatenate([loader.last_window_starts for _ in range(30) if loader.next_batch()])
    names = np.array(ds.sources)[ds.source_at(starts)]
    assert set(names) == {"pt", "wiki"}
    assert abs((names == "pt").mean() - 0.5) < 0.06  # 960 draws: 4 standard deviations
    with pytest.raises(TokenDataError, match="not in the data"):
        Loader(ds, 32, 4, source_weights={"books": 1.0})


def test_bad_state_and_tampered_shards(tokens, tmp_path):
    ds = TokenDataset(tokens)
    state = Loader(ds, 32, 4).state_dict()
    with pytest.raises(ValueError, match="batch_size"):
        Loader(ds, 32, 8).load_state_dict(state)
    copy = tmp_path / "tokens"
    shutil.copytree(tokens, copy)
    m = json.loads((copy / "manifest.json").read_text())
    m["splits"]["train"]["tokens"] += 1
    (copy / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(TokenDataError, match="manifest says"):
        TokenDataset(copy)
    m["splits"]["train"]["tokens"] -= 1
    m["dtype"] = "uint32"
    (copy / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(TokenDataError, match="tokens are uint16, manifest says uint32"):
        TokenDataset(copy)
    with pytest.raises(TokenDataError, match="no split"):
        TokenDataset(tokens, "test")
