"""`python -m train ablate`: a two-variant ablation end to end on real data (a WARC file and Common Crawl text),
small enough for the suite; then resumption: nothing done is redone, a new seed or a changed variant runs alone."""

from __future__ import annotations

import json

import pytest
import torch

import train.loop
from train.ablate.depends import stale
from train.ablate.stages import load_spec, main, run
from train.data import TokenDataset
from train.evaluate import EvalPlan, evaluate
from train.evaluate.heldout import HeldoutSet

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
GOPHER = '''from curate import Pipeline, extract, filters, readers, writers
pipeline = Pipeline(name="gopher", reader=readers.Warc(), steps=[extract.Trafilatura(), filters.GopherQuality()],
                    writer=writers.Parquet())
'''


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def write_spec(tmp, shared, gopher_seeds=(0,), gopher_text=GOPHER, budget='tokens = "40K"\nmax_epochs = 50'):
    (tmp / "gopher.py").write_text(gopher_text)
    book = shared / "text/clean_en/botchan_gutenberg8868.txt"
    spec = f'''
out = "{tmp / 'abl'}"
{budget}
vocab_size = 320
tokenizer_chars = 2e5
[[input]]
name = "warc"
path = "{shared / 'warc/wget/dolma_sample-0001.warc.gz'}"
reader = "warc"
[[input]]
name = "cc"
path = "{shared / 'text/web_cc/dolma_ccnet_cc_en_head-0174.jsonl.gz'}"
reader = "jsonl"
[[variant]]
name = "extract"
pipeline = "{ROOT / 'pipelines/ablation/extract.py'}"
[[variant]]
name = "gopher"
pipeline = "{tmp / 'gopher.py'}"
seeds = {list(gopher_seeds)}
[train]
config = "tiny"
n_layer = 1
n_head = 2
n_embd = 32
seq_len = 32
micro_batch = 16
batch_tokens = 512
steps = 6
warmup_steps = 1
eval_every = 0
plots = false
eval_points = 2
[eval]
heldout = ["book={book}"]
max_bytes = 3000
icl_dir = "{shared / 'benchmarks/llm_foundry_icl'}"
tasks = ["copa"]
limit = 6
'''
    (tmp / "spec.toml").write_text(spec)
    return tmp / "spec.toml"


def test_tiny_ablation_end_to_end_then_resumes(shared, tmp_path, monkeypatch, capsys):
    spec_file = write_spec(tmp_path, shared)
    assert main(["--spec", str(spec_file)]) == 0
    out = tmp_path / "abl"
    assert "| extract |" in capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    by_name = {v["name"]: v for v in results["variants"]}
    # the record carries what it was made with, and it is what the staleness check computes from the code now
    assert stale(results, load_spec(spec_file)) == []
    # the raw input: 15 HTML pages in the WARC (SOURCES.md) plus 10 JSONL documents; GopherQuality only removes
    assert by_name["extract"]["curated"]["docs_read"] == by_name["gopher"]["curated"]["docs_read"]
    assert by_name["gopher"]["curated"]["docs_written"] <= by_name["extract"]["curated"]["docs_written"]
    for v in by_name.values():
        # the same budget for every variant, met as closely as whole documents (here up to several thousand
        # tokens each) allow; how close `curate mix` gets is tests/test_mix.py's subject
        assert v["mix"]["planned_tokens"] == 40_000 and 0.8 * 40_000 <= v["mix"]["tokens"] <= 40_000
    shas = {TokenDataset(out / "variants" / n / "tokens").manifest["tokenizer"]["sha256"] for n in by_name}
    assert len(shas) == 1  # one tokenizer for all
    for v in by_name.values():
        (r,) = v["runs"]
        assert [c["step"] for c in r["curve"]] == [3, 6] and [c["tokens"] for c in r["curve"]] == [1536, 3072]
        assert r["eval"]["step"] == 6 and [t["task"] for t in r["eval"]["tasks"]] == ["copa"]
        plan = EvalPlan(heldout=[HeldoutSet("book", str(shared / "text/clean_en/botchan_gutenberg8868.txt"),
                                            max_bytes=3000)])
        again = evaluate(out / "variants" / v["name"] / "seed0", plan)  # the checkpoint the table describes
        assert again["heldout"][0]["bits_per_byte"] == pytest.approx(r["eval"]["heldout"][0]["bits_per_byte"])
    for f in ("results.md", "curves.png", "tasks.png"):
        assert (out / f).stat().st_size > 0

    trained: list[str] = []
    real_train = train.loop.train
    monkeypatch.setattr(train.loop, "train", lambda cfg, resume=False: trained.append(cfg.out) or real_train(cfg, resume))
    run(load_spec(spec_file))
    assert trained == []  # everything was done: nothing is retrained
    run(load_spec(write_spec(tmp_path, shared, gopher_seeds=(0, 1))))
    assert {p.split("/")[-1] for p in trained} == {"seed1"} and all("/gopher/" in p for p in trained)
    md = (out / "results.md").read_text()
    assert "Seed-to-seed range" in md and "| gopher | 1 |" in md
    trained.clear()
    run(load_spec(write_spec(tmp_path, shared, gopher_seeds=(0, 1), gopher_text=GOPHER + "# changed\n")))
    assert trained and all("/gopher/" in p for p in trained)  # a changed pipeline file: that variant is redone

    trained.clear()
    # a budget that repeats a variant's text more than max_epochs is refused, before anything is trained
    with pytest.raises(ValueError, match=r"tokens = 10M repeats variants more than max_epochs = 1: extract [0-9,]+ unique tokens"):
        run(load_spec(write_spec(tmp_path, shared, (0, 1), GOPHER + "# changed\n", 'tokens = "10M"\nmax_epochs = 1')))
    assert trained == []

    # --verify curates every variant again and compares with the record: the same, then a record that differs
    spec_file = write_spec(tmp_path, shared, (0, 1), GOPHER + "# changed\n")
    run(load_spec(spec_file))
    capsys.readouterr()
    assert main(["--spec", str(spec_file), "--verify", str(out / "results.json")]) == 0
    assert "the record reproduces" in capsys.readouterr().out
    record = json.loads((out / "results.json").read_text())
    gopher = record["variants"][1]["curated"]
    assert gopher["docs_written"] > 0 and len(gopher["id_sample"]) == min(20, gopher["docs_written"])
    gopher["chars_written"] += 1
    gopher["id_sample"][0] = "not-an-id"
    (tmp_path / "other.json").write_text(json.dumps(record))
    assert main(["--spec", str(spec_file), "--verify", str(tmp_path / "other.json")]) == 1
    said = capsys.readouterr().out
    assert f"gopher: chars_written {gopher['chars_written']} recorded, {gopher['chars_written'] - 1} now" in said
    assert "gopher: id sample differs: 1 recorded ids missing (e.g. ['not-an-id'])" in said
    assert "extract:" not in said and "2 differences" in said
