"""curate mix on real text: planned vs actual tokens, repetition, determinism, manifest, bad input."""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _tokdata import PT, WEB, sources

from curate.cli.main import main as cli
from curate.core.errors import UsageError
from curate.run.executors.local import LocalExecutor
from curate.tokens.mix import mix, parse_count, parse_source


def _mix(srcs, out, **kw):
    """The mechanics tests count tokens as characters / 4 (fast, and hand-checkable); calibration is tested below."""
    return mix(srcs, out=out, executor=LocalExecutor(1, progress=False), **{"chars_per_token": 4.0, **kw})


@pytest.fixture(scope="module")
def mixed(shared, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mix")
    srcs = sources(shared, tmp)
    return srcs, tmp, _mix(srcs, tmp / "mix", tokens=500_000, seed=0)


def _rows(out):
    files = sorted((out / "data").glob("*.parquet"))
    return [r for f in files for r in pq.read_table(f).to_pylist()]


def test_actual_within_one_percent_of_plan(mixed, shared):
    srcs, tmp, m = mixed
    with gzip.open(shared / WEB, "rt", encoding="utf-8") as f:
        web_chars = sum(len(json.loads(line)["text"]) for line in f)
    assert m["plan"]["sources"]["web"]["available_tokens"] == round(web_chars / 4)
    assert m["plan"]["planned_tokens"] == 500_000
    for name, w in (("web", 0.5), ("wiki", 0.3), ("pt", 0.2)):
        planned = m["plan"]["sources"][name]["target_tokens"]
        assert planned == round(500_000 * w)
        assert abs(m["actual"][name]["tokens"] - planned) <= 0.01 * planned
    # pt has ~68.6K tokens for a 100K share: every document once, some twice, and the plan says 1.46 epochs
    assert m["plan"]["sources"]["pt"]["epochs"] == pytest.approx(
        100_000 / m["plan"]["sources"]["pt"]["available_tokens"], rel=1e-4
    )
    rows = _rows(tmp / "mix")
    by_src = {s: [r for r in rows if r["source"] == s] for s in ("web", "wiki", "pt")}
    assert {s: len(v) for s, v in by_src.items()} == {s: m["actual"][s]["docs"] for s in by_src}
    for s, v in by_src.items():  # the shards hold exactly the counted characters
        assert sum(len(r["text"]) for r in v) == m["actual"][s]["chars"]
        assert (
            abs(sum(len(r["text"]) for r in v) / 4 - m["plan"]["sources"][s]["target_tokens"])
            <= 0.01 * m["plan"]["sources"][s]["target_tokens"]
        )
    assert len({r["id"] for r in rows}) == len(rows)  # copies get #eN ids
    pt_epochs = [r["mix_epoch"] for r in by_src["pt"]]
    assert pt_epochs.count(0) == 486 and 0 < pt_epochs.count(1) < 486
    assert all(r["id"].endswith("#e1") for r in by_src["pt"] if r["mix_epoch"] == 1)


def test_manifest_records_inputs_and_hashes(mixed):
    srcs, tmp, m = mixed
    assert [i["source"] for i in m["inputs"]] == ["web", "wiki", "pt"]
    for i in m["inputs"]:
        assert i["sha256"] == hashlib.sha256(Path(i["path"]).read_bytes()).hexdigest()
    assert m["inputs"][2]["docs"] == 486 and m["inputs"][1]["docs"] == 62
    on_disk = json.loads((tmp / "mix" / "manifest.json").read_text())
    assert on_disk["actual"] == m["actual"] and on_disk["token_measure"] == "characters / 4.0"


def test_deterministic_from_seed(mixed):
    srcs, tmp, m = mixed
    again = _mix(srcs, tmp / "again", tokens=500_000, seed=0)
    assert [r["id"] for r in _rows(tmp / "again")] == [r["id"] for r in _rows(tmp / "mix")]
    assert again["actual"] == m["actual"]
    other = _mix(srcs, tmp / "other", tokens=500_000, seed=1)
    assert {r["id"] for r in _rows(tmp / "other")} != {r["id"] for r in _rows(tmp / "mix")}
    assert abs(other["actual"]["web"]["tokens"] - 250_000) <= 2_500


def test_max_epochs_caps_and_keeps_weights(mixed, capsys):
    srcs, tmp, m = mixed
    pt_avail = m["plan"]["sources"]["pt"]["available_tokens"]
    capped = _mix(srcs, tmp / "capped", tokens=1_000_000, max_epochs=2)
    p = capped["plan"]
    assert p["sources"]["pt"]["limited_by_max_epochs"] and not p["sources"]["web"]["limited_by_max_epochs"]
    assert p["planned_tokens"] == pytest.approx(pt_avail * 2 / 0.2, abs=2)
    assert p["sources"]["pt"]["epochs"] == pytest.approx(2.0)
    pt_rows = [r for r in _rows(tmp / "capped") if r["source"] == "pt"]
    assert len(pt_rows) == 2 * 486  # exactly two passes
    for name in ("web", "wiki"):
        assert (
            abs(capped["actual"][name]["tokens"] - p["sources"][name]["target_tokens"])
            <= 0.01 * p["sources"][name]["target_tokens"]
        )


def test_cli_prints_plan_and_rejects_bad_input(shared, tmp_path, capsys):
    rc = cli(
        [
            "mix",
            "--source",
            f"pt={shared / PT}:1",
            "--tokens",
            "50K",
            "--out",
            str(tmp_path / "m"),
            "--workers",
            "1",
            "--no-progress",
            "--calibration-vocab",
            "300",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "planned" in out and "pt " in out and "chars/token" in out
    assert cli(["mix", "--source", f"pt={shared / PT}:lots", "--tokens", "1M", "--out", str(tmp_path / "x")]) == 2
    assert "weight 'lots' is not a number" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # refused before any work
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(UsageError, match=r"\['none'\] have no text"):
        _mix({"pt": (str(shared / PT), 0.5), "none": (str(empty), 0.5)}, tmp_path / "e", tokens=1000)
    assert not list((tmp_path / "e").glob("data/*.parquet"))
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="holds no earlier `curate mix` output"):
        _mix({"pt": (str(shared / PT), 1.0)}, foreign, tokens=1000)
    with pytest.raises(UsageError, match=r"input .*bosque_docs.jsonl is inside --out"):  # --overwrite would delete it
        _mix({"pt": (str(shared / PT), 1.0)}, shared / "text", tokens=1000, overwrite=True)


@pytest.mark.parametrize(
    "spec", ["web", "web=out/web", "web=out/web:", "web=out:-1", "web=out:nan", "=out:1", "a b=x:1"]
)
def test_parse_source_rejects(spec):
    with pytest.raises(UsageError):
        parse_source(spec)


def test_parse_source_and_count():
    assert parse_source("web=s3://b/x:0.6").path == "s3://b/x"
    assert parse_source("web=out/web:6").weight == 6.0
    assert [parse_count(s) for s in ("50M", "1.5B", "200_000", "2e3", "7k")] == [
        50_000_000,
        1_500_000_000,
        200_000,
        2000,
        7000,
    ]
    with pytest.raises(UsageError):
        parse_count("many")


def test_interrupted_mix_reruns_into_the_same_output(shared, tmp_path, monkeypatch):
    """A mix killed while writing shards leaves data/ without a finished manifest; its rerun must still accept
    the directory, replace the partial shards and end with only its own."""
    import curate.tokens.mix as mix_mod

    def killed(item):
        raise KeyboardInterrupt  # the process dies in the write phase

    out = tmp_path / "m"
    src = {"pt": (str(shared / PT), 1.0)}
    monkeypatch.setattr(mix_mod, "_write", killed)
    with pytest.raises(KeyboardInterrupt):
        _mix(src, out, tokens=20_000)
    interim = json.loads((out / "manifest.json").read_text())
    assert interim["kind"] == "mix" and interim["complete"] is False and interim["config"]["tokens"] == 20_000
    stale = out / "data" / "part-00099-000.parquet"
    stale.write_bytes(b"partial")
    (out / "data" / ".part-00000-000.parquet.tmp.123").write_bytes(b"partial")
    monkeypatch.undo()
    m = _mix(src, out, tokens=20_000)
    assert sorted(p.name for p in (out / "data").iterdir()) == [Path(o).name for o in m["outputs"]]
    assert json.loads((out / "manifest.json").read_text())["actual"] == m["actual"]


@pytest.mark.parametrize("command", ["mix", "tokenize"])
@pytest.mark.parametrize("workers", ["0", "-2"])
def test_cli_refuses_workers_below_one(tmp_path, capsys, command, workers):
    """`--workers 0` is an error, as in `curate run`, not a silent "all CPUs"."""
    args = {"mix": ["mix", "--source", f"a={tmp_path}:1", "--tokens", "1K"],
            "tokenize": ["tokenize", str(tmp_path), "--tokenizer", str(tmp_path / "tok.json")]}[command]
    assert cli([*args, "--out", str(tmp_path / "o"), "--workers", workers]) == 2
    err = capsys.readouterr().err
    assert f"--workers must be >= 1, got {workers}" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def _shares(tokens_dir: Path) -> dict[str, float]:
    """Token shares per source, read from the token shards with plain numpy."""
    from _tokdata import read_shard

    m = json.loads((tokens_dir / "manifest.json").read_text())
    counts: dict[str, int] = {}
    for split in m["splits"].values():
        for shard in split["shards"]:
            for row, s in zip(*read_shard(tokens_dir, shard, m["dtype"]), strict=True):
                counts[s] = counts.get(s, 0) + len(row)
    return {s: n / sum(counts.values()) for s, n in counts.items()}


def test_token_shards_hold_the_requested_shares(shared, tmp_path, capsys):
    """web 0.7 / pt 0.3 without --tokenizer: the token shards of a tokenizer trained on the mix hold 0.7 / 0.3
    within one point; the fixed characters / 4 estimate misses by more than two, and `curate tokenize` says so."""
    from tokenizers import Tokenizer

    from curate.io.corpus import read_batches
    from curate.tokens.tokenize import train_tokenizer

    srcs = {"web": (str(shared / WEB), 0.7), "pt": (str(shared / PT), 0.3)}
    shares = {}
    for name, cpt in (("calibrated", None), ("chars4", 4.0)):
        out = tmp_path / name
        m = _mix(srcs, out / "mix", tokens=300_000, chars_per_token=cpt, calibration_vocab=2048)
        train_tokenizer(out / "mix", 2048, out / "tok.json")
        assert cli(["tokenize", str(out / "mix"), "--tokenizer", str(out / "tok.json"), "--out", str(out / "k"),
                    "--val-fraction", "0", "--workers", "1", "--no-progress"]) == 0
        shares[name], printed = _shares(out / "k"), capsys.readouterr()
        assert f"{0.7:>8.2%} {shares[name]['web']:>9.2%}" in printed.out
        assert ("source 'web' holds" in printed.err) == (abs(shares[name]["web"] - 0.7) > 0.02)
        if name == "calibrated":  # the measured ratios are those of the saved reference BPE on each whole source
            ref = Tokenizer.from_file(str(out / "mix" / "reference-tokenizer.json"))
            for s, (path, _) in srcs.items():
                texts = [t for b in read_batches(path) for t in b.texts]
                n = sum(len(ref.encode(t, add_special_tokens=False).ids) for t in texts)
                assert m["chars_per_token"][s] == pytest.approx(sum(map(len, texts)) / n, abs=1e-4)
    assert abs(shares["calibrated"]["web"] - 0.7) <= 0.01 and abs(shares["calibrated"]["pt"] - 0.3) <= 0.01
    assert abs(shares["chars4"]["web"] - 0.7) > 0.02


def test_driver_gets_no_per_document_state(shared, tmp_path, monkeypatch):
    """What the tasks send back to the driver is per-file totals, plus a calibration sample bounded by
    --calibration-chars; never one value per document."""
    results = {}
    real_map = LocalExecutor.map

    def recording_map(self, fn, items, desc="tasks", labels=()):
        out = real_map(self, fn, items, desc, labels)
        results[desc] = copy.deepcopy(out)  # the driver consumes the samples in place
        return out

    monkeypatch.setattr(LocalExecutor, "map", recording_map)
    srcs = {"web": (str(shared / WEB), 0.5), "pt": (str(shared / PT), 0.5)}
    _mix(srcs, tmp_path / "m", tokens=100_000, chars_per_token=None, calibration_vocab=300, calibration_chars=200_000)
    for r in results["mix: measure"] + results["mix: write"]:
        assert all(v is None or isinstance(v, (int, float, str, list)) for v in r.values())
        assert all(k == "sample" for k, v in r.items() if isinstance(v, list))
    sampled = sum(len(t) for r in results["mix: measure"] for t in r["sample"])
    assert 0 < sampled < 2 * 200_000  # ~100K characters per source by weight (the rate comes from a size estimate)
    assert not list((tmp_path / "m" / "_work").glob("*"))  # the spilled counts are gone


def test_copies_follow_whole_passes(mixed):
    """Each copy of a document is its original, text for text, and every epoch-1 copy has an epoch-0 original."""
    srcs, tmp, m = mixed
    rows = [r for r in _rows(tmp / "mix") if r["source"] == "pt"]
    first = {r["id"]: r["text"] for r in rows if r["mix_epoch"] == 0}
    for r in rows:
        if r["mix_epoch"]:
            assert r["id"] == f"{r['id'].split('#')[0]}#e{r['mix_epoch']}" and first[r["id"].split("#")[0]] == r["text"]
    files = sorted((tmp / "mix" / "data").glob("*.parquet"))
    assert all(pq.ParquetFile(f).metadata.row_group(0).num_rows <= 10_000 for f in files)


@pytest.mark.parametrize("scheme", ["memory", "file"])
def test_mix_reads_and_writes_urls(mixed, shared, tmp_path, scheme):
    import fsspec

    srcs, tmp, m = mixed
    if scheme == "memory":
        mem = fsspec.filesystem("memory")
        for name, (path, _) in srcs.items():
            mem.put(path, f"/src/{name}/{Path(path).name}")
        urls = {name: (f"memory://src/{name}", w) for name, (_, w) in srcs.items()}
        out = "memory://mixes/m"
    else:
        urls = {name: (f"file://{path}", w) for name, (path, w) in srcs.items()}
        out = f"file://{tmp_path}/m"
    got = _mix(urls, out, tokens=500_000, seed=0)
    assert got["actual"] == m["actual"] and got["outputs"] == m["outputs"]
    for rel in m["outputs"]:
        with fsspec.open(f"{out}/{rel}", "rb") as f:
            assert pq.read_table(f).equals(pq.read_table(tmp / "mix" / rel))


def test_progress_shows_documents(shared, tmp_path, capsys):
    mix({"pt": (str(shared / PT), 1.0)}, 20_000, tmp_path / "m", chars_per_token=4.0, executor=LocalExecutor(1))
    err = capsys.readouterr().err
    assert "486 docs" in err and " 0 docs" not in err.split("mix: write")[-1]


# ---------------------------------------------------------------------------------------------- issue 29


def _files(out: Path) -> dict:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "manifest.json" and p.name != ".peneira.lock"}


def test_a_different_mix_into_a_mix_folder_is_refused_and_tokenize_never_resumes_over_it(shared, tmp_path, capsys):
    """Case 29.4: `curate mix` over a different mix is refused with one line unless --overwrite; a tokenize of the
    old mix then refuses to resume over the rewritten one (its shards would be kept under the new plan)."""
    from curate.tokens.tokenize import train_tokenizer

    mix_dir, tok, tokens = tmp_path / "mix", tmp_path / "tok.json", tmp_path / "tokens"

    def mix_cli(weights, *more):
        return cli(["mix", "--source", f"pt={shared / PT}:{weights[0]}", "--source", f"web={shared / WEB}:{weights[1]}",
                    "--tokens", "200K", "--chars-per-token", "4", "--out", str(mix_dir), "--workers", "1",
                    "--no-progress", *more])

    def tokenize_cli(*more):
        return cli(["tokenize", str(mix_dir), "--tokenizer", str(tok), "--out", str(tokens), "--val-fraction", "0",
                    "--workers", "1", "--no-progress", *more])

    assert mix_cli((0.9, 0.1)) == 0
    first = _files(mix_dir)
    assert mix_cli((0.9, 0.1)) == 0 and _files(mix_dir) == first  # the same mix again: the same bytes
    train_tokenizer(mix_dir, 512, tok)
    assert tokenize_cli() == 0
    capsys.readouterr()
    assert mix_cli((0.1, 0.9)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds another mix (--source was pt=" in err and "pass --overwrite" in err
    assert _files(mix_dir) == first  # refused before anything was touched
    assert mix_cli((0.1, 0.9), "--overwrite") == 0
    capsys.readouterr()
    assert tokenize_cli() == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "was tokenized from another version of" in err
    assert tokenize_cli("--overwrite") == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip().startswith(("pt ", "web "))]
    assert any(line.split()[1] == "10.00%" for line in lines if line.strip().startswith("pt"))  # the new plan


def test_overwrite_checks_every_argument_and_input_before_deleting(shared, tmp_path, capsys):
    out = tmp_path / "m"
    base = ["mix", "--source", f"pt={shared / PT}:1", "--tokens", "20K", "--chars-per-token", "4", "--out", str(out),
            "--workers", "1", "--no-progress", "--overwrite"]
    assert cli(base) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (tmp_path / "junk.json").write_text("{}")
    (out / "data" / "x.jsonl").write_text(json.dumps({"id": "a", "text": "mine"}) + "\n")
    before[out / "data" / "x.jsonl"] = (out / "data" / "x.jsonl").read_bytes()
    for args, says in (
        (["--tokenizer", str(tmp_path / "junk.json")], "not a tokenizers JSON file"),
        (["--source", f"web={tmp_path / 'missing'}:1"], "no such file or directory"),
        (["--source", f"web={out / 'data' / 'x.jsonl'}:1"], "is inside --out"),
    ):
        capsys.readouterr()
        assert cli([*base, *args]) == 2
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1
        assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    (out / "manifest.json").write_text('{"kind": "mi')
    assert cli(base[:-1]) == 2
    err = capsys.readouterr().err
    assert f"{out / 'manifest.json'} cannot be read" in err and "pass --overwrite" in err


def test_row_groups_are_cut_by_bytes(shared, tmp_path, monkeypatch):
    """Case 29.2 for the mix: 150 KB documents make row groups of at most ROW_GROUP_BYTES (here 1 MiB), not 10,000
    documents (1.5 GB), so whatever reads the mix can read every row group; a larger document is a group alone."""
    import curate.tokens.mix as mix_mod

    monkeypatch.setattr(mix_mod, "ROW_GROUP_BYTES", 1 << 20)
    from curate.io.corpus import read_batches

    text = "\n\n".join(t for b in read_batches(str(shared / WEB)) for t in b.texts)
    docs = [{"id": f"d{i}", "text": text[i * 150_000 : (i + 1) * 150_000]} for i in range(16)]
    docs.append({"id": "huge", "text": (text * 2)[:1_500_000]})
    src = tmp_path / "big.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs))
    m = _mix({"big": (str(src), 1.0)}, tmp_path / "m", tokens=2_000_000, max_epochs=2)
    pf = pq.ParquetFile(tmp_path / "m" / m["outputs"][0])
    sizes = [pf.metadata.row_group(g).column(1).total_uncompressed_size for g in range(pf.metadata.num_row_groups)]
    rows = [pf.metadata.row_group(g).num_rows for g in range(pf.metadata.num_row_groups)]
    assert len(sizes) > 3 and sum(rows) == m["actual"]["big"]["docs"]
    assert all(s <= (1 << 20) + 100_000 or r == 1 for s, r in zip(sizes, rows, strict=True)), (sizes, rows)


def test_a_copy_of_a_source_under_another_name_and_an_empty_mix_are_refused(shared, tmp_path, capsys):
    """Issue 36.7: a byte-identical copy of one source's file given as another source was mixed (its text counted
    twice), and `--tokens 1` published empty shards with exit 0 that tokenize then failed on."""
    a, b = tmp_path / "a" / "pt.jsonl", tmp_path / "b" / "copy.jsonl"
    for p in (a, b):
        p.parent.mkdir()
        p.write_bytes((shared / PT).read_bytes())
    capsys.readouterr()
    assert cli(["mix", "--source", f"x={a}:0.5", "--source", f"y={b}:0.5", "--tokens", "10K", "--chars-per-token",
                "4", "--out", str(tmp_path / "m"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "byte-identical copy" in err[0] and str(b) in err[0], err
    assert not (tmp_path / "m").exists()
    assert cli(["mix", "--source", f"x={a}:1", "--tokens", "1", "--chars-per-token", "4", "--out",
                str(tmp_path / "one"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "selects no document of 'x'" in err[0], err
