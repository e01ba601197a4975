"""`curate tokenize --format` (issue 33): each trainer's own reader returns exactly our documents' token ids.

The reference is computed here, independently of the shard writers: every document of the corpus encoded with
`tokenizers` (the end-of-document token appended) in input order, put in `val` by the documented hash rule. Each
format's output is then read with the library the trainer uses (Megatron-Core's `IndexedDataset`, datatrove's
`DatatroveFolderDataset`, `datasets.load_dataset`), never with ours. Where a library is not installed the test skips
and says so (they are the `formats` extra: `pip install -e '.[formats]'`).
"""

from __future__ import annotations

import gzip
import json
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from curate.core.errors import UsageError
from curate.io.token_format import TokenDataError

WEB = "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
PT = "text/pt/bosque_docs.jsonl"
VAL = 0.1


def _lines(path: Path, n: int) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if d.get("text"):
                out.append(d)
            if len(out) == n:
                break
    return out


@pytest.fixture(scope="module")
def corpus(shared, tmp_path_factory) -> dict:
    """Two Parquet inputs of real text: one interleaving web and Portuguese documents, one Portuguese only, and a
    512-id byte-level BPE trained on them; `ref` holds the expected (ids, source) of every document per split."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import xxhash
    from tokenizers import Tokenizer

    from curate.tokens.tokenize import EOS, train_tokenizer

    tmp = tmp_path_factory.mktemp("formats")
    web, pt = _lines(shared / WEB, 60), _lines(shared / PT, 160)
    docs = [[], []]
    for i in range(60):
        docs[0].append((f"web-{i}", web[i]["text"], "web"))
        docs[0].append((f"pt-{i}", pt[i]["text"], "pt"))
    docs[1] = [(f"pt-{i}", pt[i]["text"], "pt") for i in range(60, 160)]
    (tmp / "in").mkdir()
    files = []
    for k, rows in enumerate(docs):
        f = tmp / "in" / f"part-{k}.parquet"
        pq.write_table(pa.table({"id": [r[0] for r in rows], "text": [r[1] for r in rows],
                                 "source": [r[2] for r in rows]}), f)
        files.append(str(f))
    train_tokenizer(files, 512, tmp / "tok.json", sample_chars=400_000)
    tok = Tokenizer.from_file(str(tmp / "tok.json"))
    tok.encode_special_tokens = True
    eos = tok.token_to_id(EOS)
    ref = {"train": [[] for _ in files], "val": [[] for _ in files]}
    for k, rows in enumerate(docs):
        for doc_id, text, src in rows:
            split = "val" if xxhash.xxh64_intdigest(doc_id.encode()) / 2.0**64 < VAL else "train"
            ref[split][k].append((tok.encode(text, add_special_tokens=False).ids + [eos], src))
    return {"tmp": tmp, "files": files, "tok": tmp / "tok.json", "ref": ref, "eos": eos}


def _tokenize(corpus, fmt: str, out: Path | None = None, **kw) -> tuple[Path, dict]:
    from curate.run.executors.local import LocalExecutor
    from curate.tokens.tokenize import tokenize

    out = out or corpus["tmp"] / fmt
    m = tokenize(corpus["files"], corpus["tok"], out, val_fraction=VAL, executor=LocalExecutor(1, progress=False),
                 format=fmt, **kw)
    return out, m


def _check_accounting(corpus, m: dict) -> None:
    """The manifest's per-source tokens and documents are the reference's."""
    for split in ("train", "val"):
        want = Counter()
        for shard in corpus["ref"][split]:
            for ids, src in shard:
                want[src] += len(ids)
        assert m["splits"][split]["tokens_per_source"] == dict(want)
        assert m["splits"][split]["docs"] == sum(len(s) for s in corpus["ref"][split])


def _import(module: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        extra = "litdata" if module.startswith("litdata") else "formats"  # litdata needs torchvision: its own extra
        return pytest.importorskip(module, reason=f"{module} is not installed (pip install -e '.[{extra}]')")


def test_megatron_indexed_dataset_reads_our_documents(corpus):
    idx = _import("megatron.core.datasets.indexed_dataset")
    out, m = _tokenize(corpus, "megatron")
    assert m["format"] == "megatron.indexed/1" and m["dtype"] == "uint16"  # Megatron's rule: < 65,500 ids
    _check_accounting(corpus, m)
    for split in ("train", "val"):
        shards = m["splits"][split]["shards"]
        assert len(shards) == 2
        for k, shard in enumerate(shards):
            prefix = str(out / shard["files"][0]).removesuffix(".bin")
            ds = idx.IndexedDataset(prefix)
            ref = corpus["ref"][split][k]
            assert len(ds) == len(ref)
            assert ds.index.dtype == np.uint16
            assert list(ds.document_indices) == list(range(len(ref) + 1))  # one sequence per document
            got = [ds[i].tolist() for i in range(len(ds))]
            assert got == [ids for ids, _ in ref]
            assert all(g[-1] == corpus["eos"] for g in got)
            codes = np.fromfile(out / shard["files"][2], "<u2")
            assert [shard["sources"][c] for c in codes] == [s for _, s in ref]


def test_megatron_builds_its_blend_and_tokenizer_from_the_hand_off_files(corpus):
    """Issue 46: the docs said `--data-path OUT/train/part-00000 ...` and left the blend of 2+ shards per split and the
    tokenizer to be built by hand. `megatron-data.json` is read by Megatron-Core's own blend parser and dataset builder
    (every shard, weighted by its tokens), and OUT loads as Megatron's HuggingFace tokenizer with our EOS as `eod`."""
    _import("megatron.core.datasets.gpt_dataset")
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.datasets.utils import get_blend_from_list
    from megatron.core.tokenizers import MegatronTokenizer

    from curate.tokens.formats.megatron import megatron_args

    out, m = _tokenize(corpus, "megatron")
    args = json.loads((out / "megatron-data.json").read_text())
    assert args["test"] is None
    blends = {split: get_blend_from_list(args[theirs]) for split, theirs in (("train", "train"), ("val", "valid"))}
    for split, (prefixes, weights) in blends.items():
        ref = corpus["ref"][split]
        assert [sum(len(ids) for ids, _ in shard) for shard in ref] == weights  # tokens per shard
        assert [Path(p).parts[-2:] for p in prefixes] == [(split, f"part-{k:05d}") for k in range(len(ref))]
    tok = MegatronTokenizer.from_pretrained(str(out), metadata_path={"library": "huggingface"})
    text = "Os anos 80 foram um divisor de águas na música. The web, too."  # (a literal EOS in text: see docs/tokens.md)
    from tokenizers import Tokenizer

    want = Tokenizer.from_file(str(corpus["tok"]))
    want.encode_special_tokens = True
    assert tok.eod == corpus["eos"] and tok.tokenize(text) == want.encode(text, add_special_tokens=False).ids
    cfg = GPTDatasetConfig(random_seed=1, sequence_length=32, tokenizer=tok, reset_position_ids=False,
                           reset_attention_mask=False, eod_mask_loss=False, path_to_cache=str(corpus["tmp"] / "mcache"),
                           blend_per_split=[blends["train"], blends["val"], None])
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{corpus['tmp'] / 'pg'}", rank=0, world_size=1)
    try:  # a blend of several shards asks the (one-rank) process group where it is built
        train, val, _ = BlendedMegatronDatasetBuilder(GPTDataset, [200, 20, None], lambda: True, cfg).build()
    finally:
        dist.destroy_process_group()
    for built, split in ((train, "train"), (val, "val")):
        parts = built.datasets
        assert [len(p.dataset) for p in parts] == [len(shard) for shard in corpus["ref"][split]]
        for p, shard in zip(parts, corpus["ref"][split], strict=True):
            assert [p.dataset[i].tolist() for i in range(len(p.dataset))] == [ids for ids, _ in shard]
        assert len(built[0]["tokens"]) == 32
    assert megatron_args(str(out)) == (f"--per-split-data-args-path {out}/megatron-data.json "
                                       f"--tokenizer-type HuggingFaceTokenizer --tokenizer-model {out}")


def test_nanotron_datatrove_reads_our_documents(corpus):
    _import("datatrove")
    from datatrove.utils.dataset import DatatroveFolderDataset

    out, m = _tokenize(corpus, "nanotron")
    _check_accounting(corpus, m)
    seq = 63
    for k, shard in enumerate(m["splits"]["train"]["shards"]):
        ref = corpus["ref"]["train"][k]
        flat = [t for ids, _ in ref for t in ids]
        ds = DatatroveFolderDataset(str(out / "train"), seq_len=seq, token_size=2, filename_pattern=f"*{k:05d}.ds",
                                    return_positions=True)
        assert len(ds) == len(flat) // (seq + 1)
        got = [ds[i] for i in range(len(ds))]
        assert [t for g in got for t in g["input_ids"].tolist()] == flat[: len(ds) * (seq + 1)]
        # datatrove's positions come from our .ds.index: they restart at 0 right after every document's end
        ends = np.cumsum([len(ids) for ids, _ in ref])
        pos = np.concatenate([g["positions"].numpy() for g in got])
        assert len(pos) == len(ds) * (seq + 1)
        starts = {int(e) for e in ends[:-1]}
        for i in range(1, len(pos)):
            if i % (seq + 1) == 0:
                continue  # a window's first position is 0 whatever the documents
            assert (pos[i] == 0) == (i in starts), i
        meta = (out / shard["files"][2]).read_text().splitlines()
        assert meta[0].endswith("|2") and int(meta[1]) == len(flat)


def _stub_torchvision(monkeypatch) -> None:
    """`import streaming` imports its vision datasets, hence torchvision; here torch is a CPU build from PyTorch's
    index and PyPI's torchvision does not load beside it (`operator torchvision::nms does not exist`). The text
    reader never touches it: two names stand in for it, only when torchvision cannot be imported."""
    import importlib.machinery
    import sys
    import types

    try:
        import torchvision  # noqa: F401
        return
    except Exception:
        pass
    datasets, functional = types.ModuleType("torchvision.datasets"), types.ModuleType("torchvision.transforms.functional")
    datasets.VisionDataset = type("VisionDataset", (), {})
    functional.to_tensor = None
    for name, mod in (("torchvision", types.ModuleType("torchvision")), ("torchvision.datasets", datasets),
                      ("torchvision.transforms", types.ModuleType("torchvision.transforms")),
                      ("torchvision.transforms.functional", functional)):
        mod.__spec__ = importlib.machinery.ModuleSpec(name, None)
        monkeypatch.setitem(sys.modules, name, mod)


def test_mds_streaming_dataset_reads_our_documents(corpus, monkeypatch):
    """LLM Foundry's reader is `streaming.StreamingDataset` over `tokens: ndarray:int32` samples: each document, in
    order, with its source; and the shard cut (`SIZE_LIMIT`) puts several shards in one task's output."""
    _stub_torchvision(monkeypatch)
    _import("streaming")
    from streaming import StreamingDataset

    from curate.tokens.formats import mds

    monkeypatch.setattr(mds, "SIZE_LIMIT", 40_000)
    out, m = _tokenize(corpus, "mds")
    _check_accounting(corpus, m)
    assert len(m["splits"]["train"]["shards"][0]["mds_shards"]) > 1
    for split in ("train", "val"):
        ref = [d for shard in corpus["ref"][split] for d in shard]
        ds = StreamingDataset(local=str(out / split), shuffle=False, batch_size=1)
        assert ds.num_samples == len(ref)
        got = [ds[i] for i in range(len(ref))]
        assert [g["tokens"].dtype for g in got[:1]] == [np.dtype(np.int32)]
        assert [g["tokens"].tolist() for g in got] == [ids for ids, _ in ref]
        assert [g["source"] for g in got] == [s for _, s in ref]


def test_litdata_streaming_dataset_reads_our_documents(corpus, monkeypatch, tmp_path):
    """LitGPT's reader: `litdata.StreamingDataset` with `TokensLoader(block_size)` serves the split as one stream of
    blocks: our documents end to end, each ending with the end-of-document token, and nothing else."""
    _import("litdata")
    from litdata import StreamingDataset
    from litdata.streaming.item_loader import TokensLoader

    from curate.tokens.formats import litdata

    monkeypatch.setattr(litdata, "CHUNK_BYTES", 20_000)
    monkeypatch.setenv("HOME", str(tmp_path))  # litdata's cache of chunk copies, if any
    out, m = _tokenize(corpus, "litdata")
    _check_accounting(corpus, m)
    assert len(m["splits"]["train"]["shards"][0]["litdata_chunks"]) > 1
    block = 64
    for split in ("train", "val"):
        ref = [d for shard in corpus["ref"][split] for d in shard]
        flat = np.array([t for ids, _ in ref for t in ids])
        ds = StreamingDataset(str(out / split), item_loader=TokensLoader(block_size=block), shuffle=False)
        got = np.concatenate([np.asarray(ds[i]) for i in range(len(ds))])  # numpy items (torch tensors in a DataLoader)
        # TokensLoader never cuts a block across chunks: each chunk gives its whole blocks, the rest is dropped
        dims = [c["dim"] for e in m["splits"][split]["shards"] for c in e["litdata_chunks"]]
        assert sum(dims) == len(flat)
        starts = np.cumsum([0] + dims[:-1])
        want = np.concatenate([flat[a : a + d // block * block] for a, d in zip(starts, dims, strict=True)])
        assert got.tolist() == want.tolist()
    from litdata import StreamingDataLoader

    batch = next(iter(StreamingDataLoader(ds, batch_size=4)))  # what LitGPT's loop receives: a (4, block) tensor
    assert tuple(batch.shape) == (4, block) and batch.flatten().tolist() == got[: 4 * block].tolist()


def test_hf_parquet_loads_with_datasets(corpus):
    datasets = _import("datasets")
    out, m = _tokenize(corpus, "hf")
    _check_accounting(corpus, m)
    ds = datasets.load_dataset("parquet", data_files={"train": str(out / "train" / "*.parquet"),
                                                      "validation": str(out / "val" / "*.parquet")},
                               cache_dir=str(corpus["tmp"] / "hf-cache"))
    for split, name in (("train", "train"), ("val", "validation")):
        ref = [d for shard in corpus["ref"][split] for d in shard]
        assert ds[name]["input_ids"] == [ids for ids, _ in ref]
        assert ds[name]["source"] == [s for _, s in ref]
    ds.save_to_disk(str(corpus["tmp"] / "hf-disk"))  # the load_from_disk layout, as docs/tokens.md gives it
    back = datasets.load_from_disk(str(corpus["tmp"] / "hf-disk"))
    assert back["train"]["input_ids"] == ds["train"]["input_ids"] and back["validation"].num_rows == ds["validation"].num_rows


def test_a_rerun_with_another_format_is_refused(corpus, tmp_path):
    out, _ = _tokenize(corpus, "megatron", tmp_path / "t")
    with pytest.raises(UsageError, match=r"in format 'megatron.indexed/1', not 'hf.parquet-tokens/1' \(--format\)"):
        _tokenize(corpus, "hf", out)
    _, m = _tokenize(corpus, "megatron", out)  # the same format resumes
    assert m["token_format"] == "megatron"
    with pytest.raises(UsageError, match="Megatron reads uint16"):
        _tokenize(corpus, "megatron", tmp_path / "u", dtype="uint32")


@pytest.mark.parametrize("fmt", ["megatron", "nanotron", "mds", "litdata", "hf"])
def test_a_damaged_shard_is_named_by_verify(corpus, tmp_path, fmt):
    """Flip one byte in the middle of a shard's token file: ours names the file; the library's reader (where it has a
    check) fails too, else it reads other ids silently, which is why `verify` exists."""
    from curate.tokens.formats import verify

    if fmt == "litdata":  # our litdata writer is litdata's own BinaryWriter: without the library there is no shard
        _import("litdata")
    out, m = _tokenize(corpus, fmt, tmp_path / fmt)
    verify(str(out))
    name = m["splits"]["train"]["shards"][0]["files"][0]
    path = out / name
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(TokenDataError, match=rf"{name}: checksum .* changed or damaged"):
        verify(str(out))
    if fmt == "hf":  # Parquet page checksums: the library's own error
        pq = pytest.importorskip("pyarrow.parquet")
        with pytest.raises(OSError, match="(?i)crc|checksum|corrupt"):
            pq.read_table(path, page_checksum_verification=True)


def test_megatron_truncated_index_is_megatrons_error(corpus, tmp_path):
    idx = _import("megatron.core.datasets.indexed_dataset")
    out, m = _tokenize(corpus, "megatron", tmp_path / "m")
    shard = m["splits"]["train"]["shards"][0]
    index = out / shard["files"][1]
    index.write_bytes(index.read_bytes()[:-20])
    with pytest.raises(Exception):  # noqa: B017 (numpy's or Megatron's own error: not a silent read)
        ds = idx.IndexedDataset(str(out / shard["files"][0]).removesuffix(".bin"))
        [ds[i] for i in range(len(ds))]


def test_the_trainer_reads_a_megatron_folder_as_the_same_stream(corpus):
    """`python -m train --data MEGATRON_DIR`: the same tokens, documents and sources as the default format, read
    through Megatron's own .idx (its sequence lengths and pointers), and the same batches."""
    from train.data import Loader, TokenDataset

    meg, _ = _tokenize(corpus, "megatron", corpus["tmp"] / "meg-train")
    pen, _ = _tokenize(corpus, "peneira", corpus["tmp"] / "pen-train")
    for split in ("train", "val"):
        a, b = TokenDataset(meg, split), TokenDataset(pen, split)
        assert a.num_tokens == b.num_tokens and a.num_docs == b.num_docs
        ref = [t for shard in corpus["ref"][split] for ids, _ in shard for t in ids]
        assert a.read(0, a.num_tokens).tolist() == ref
        assert a.source_runs() == b.source_runs() and a.sources == b.sources
    la, lb = Loader(TokenDataset(meg), 32, 4, seed=1), Loader(TokenDataset(pen), 32, 4, seed=1)
    for _ in range(3):
        xa, ya = la.next_batch()
        xb, yb = lb.next_batch()
        assert xa.equal(xb) and ya.equal(yb)


def test_the_trainer_refuses_a_damaged_megatron_index(corpus, tmp_path):
    from train.data import TokenDataset

    out, m = _tokenize(corpus, "megatron", tmp_path / "m")
    index = out / m["splits"]["train"]["shards"][0]["index"]
    raw = bytearray(index.read_bytes())
    raw[-8 * 3] ^= 0x01  # a document index
    index.write_bytes(bytes(raw))
    with pytest.raises(TokenDataError, match="part-00000.idx"):
        TokenDataset(out, "train", verify=False)


def test_the_trainer_names_a_folder_written_for_another_trainer(corpus):
    from train.data import TokenDataset

    out = corpus["tmp"] / "hf"
    if not (out / "manifest.json").exists():
        out, _ = _tokenize(corpus, "hf")
    with pytest.raises(TokenDataError, match=r"for another trainer \(--format hf\)"):
        TokenDataset(out)


@pytest.mark.parametrize("fmt", ["megatron", "nanotron", "mds", "litdata", "hf"])
def test_an_object_store_output_holds_the_local_bytes(corpus, tmp_path, fmt, monkeypatch):
    """`--out memory://…` (an object store as far as the code can tell: spooled, uploaded once per file): every file
    of every format, split indexes included, is the local output's byte for byte."""
    import fsspec

    if fmt == "litdata":
        _import("litdata")
    local, _ = _tokenize(corpus, fmt, tmp_path / fmt)
    url = f"memory://fmt-{fmt}"
    _tokenize(corpus, fmt, url)
    mem = fsspec.filesystem("memory")
    names = sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file()
                   and p.parts[-2] in ("train", "val"))
    assert names and any(n.endswith("index.json") for n in names) == (fmt in ("mds", "litdata"))
    for name in names:
        assert mem.cat(f"/fmt-{fmt}/{name}") == (local / name).read_bytes(), name
    if fmt == "megatron":
        from train.data import TokenDataset

        monkeypatch.setenv("PENEIRA_TOKEN_CACHE", str(tmp_path / "cache"))
        remote, here = TokenDataset(url), TokenDataset(local)
        assert remote.read(0, remote.num_tokens).tolist() == here.read(0, here.num_tokens).tolist()


@pytest.mark.parametrize("fmt", ["megatron", "nanotron", "mds", "litdata", "hf"])
def test_a_write_fault_is_loud_and_the_rerun_gives_the_clean_bytes(corpus, tmp_path, fmt, monkeypatch):
    """A full disk at the k-th file published after the folder's config and tokenizer copy (a task's first file,
    between a token file and its index, later shards): the command fails with the error naming a file, and the same
    command rerun gives the bytes of a clean run."""
    import errno

    from curate.io import fs

    if fmt == "litdata":
        _import("litdata")
    clean, _ = _tokenize(corpus, fmt, tmp_path / "clean")
    real = fs.Staged.commit
    for k in (3, 4, 6):
        calls = {"n": 0}

        def commit(self, real=real, calls=calls, k=k):
            calls["n"] += 1
            if calls["n"] == k:
                raise OSError(errno.ENOSPC, "No space left on device", self.path)
            return real(self)

        out = tmp_path / f"f{k}"
        monkeypatch.setattr(fs.Staged, "commit", commit)
        with pytest.raises(Exception, match="No space left") as e:
            _tokenize(corpus, fmt, out)
        assert str(out) in str(e.value) or any(str(out) in str(c) for c in getattr(e.value, "causes", []))
        monkeypatch.setattr(fs.Staged, "commit", real)
        _tokenize(corpus, fmt, out)
        files = sorted(p.relative_to(clean).as_posix() for p in clean.rglob("*") if p.is_file()
                       and p.parts[-2] in ("train", "val"))
        assert files == sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()
                               and p.parts[-2] in ("train", "val"))
        for name in files:
            assert (out / name).read_bytes() == (clean / name).read_bytes(), (k, name)


def test_megatron_int32_shards_for_large_vocabularies(tmp_path):
    """At 65,500 ids and above Megatron reads int32 (`DType.optimal_dtype`): ids past uint16 round-trip through
    Megatron-Core's reader, and the dtype rule refuses anything else."""
    idx = _import("megatron.core.datasets.indexed_dataset")
    from curate.tokens.formats.megatron import MegatronWriter

    assert MegatronWriter.choose_dtype(65_499, None) == "uint16" and MegatronWriter.choose_dtype(65_500, None) == "int32"
    assert idx.DType.optimal_dtype(65_499) == np.uint16 and idx.DType.optimal_dtype(65_500) == np.int32
    docs = [np.array([70_000, 5, 0]), np.array([0]), np.array([100_000, 99_999, 1, 0])]
    w = MegatronWriter(str(tmp_path), "train", "part-00000", "int32")
    w.add(np.concatenate(docs), np.array([len(d) for d in docs]), ["a", "b", "a"])
    entry = w.commit()
    ds = idx.IndexedDataset(str(tmp_path / "train" / "part-00000"))
    assert ds.index.dtype == np.int32 and [ds[i].tolist() for i in range(len(ds))] == [d.tolist() for d in docs]
    assert entry["tokens_per_source"] == {"a": 7, "b": 1} and entry["max_id"] == 100_000


def test_cli_format_and_the_one_line_refusal(corpus, tmp_path, capsys):
    from curate.cli.main import main

    args = ["tokenize", *corpus["files"], "--tokenizer", str(corpus["tok"]), "--val-fraction", str(VAL),
            "--workers", "1", "--no-progress", "--out", str(tmp_path / "t")]
    assert main([*args, "--format", "nanotron"]) == 0
    assert json.loads((tmp_path / "t" / "manifest.json").read_text())["token_format"] == "nanotron"
    capsys.readouterr()
    assert main([*args, "--format", "mds"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'datatrove.tokens/1', not 'mds.tokens/2' (--format)" in err[0]
