"""Benchmark decontamination on the real benchmark files and real web text in ../shared/data."""

from __future__ import annotations

import gzip
import json
import random
import re
import shutil
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate import Pipeline, readers
from curate.cli.main import main as cli_main
from curate.core.document import Document
from curate.core.step import Reject
from curate.decontam import BenchmarkError, Decontaminate, NgramIndex, build_index, load_benchmark
from curate.decontam.index import IndexFormatError
from curate.decontam.text import words

WEB = "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"

# Record counts from shared/data/SOURCES.md.
COUNTS = {
    "humaneval/HumanEval.jsonl.gz": 164,
    "gsm8k/test.jsonl": 1319,
    "mmlu/test": 14042,
    "mmlu/dev": 285,
    "mmlu": 14042 + 285,
    "llm_foundry_icl/arc_challenge.jsonl": 1172,
    "llm_foundry_icl/arc_easy.jsonl": 2376,
    "llm_foundry_icl/piqa.jsonl": 1838,
    "llm_foundry_icl/siqa.jsonl": 1954,
    "llm_foundry_icl/openbook_qa.jsonl": 500,
    "llm_foundry_icl/commonsense_qa.jsonl": 1221,
    "llm_foundry_icl/copa.jsonl": 100,
    "llm_foundry_icl/winogrande.jsonl": 1267,
    "llm_foundry_icl/winograd_wsc.jsonl": 273,
    "llm_foundry_icl/lambada_openai.jsonl": 5153,
    "llm_foundry_icl/boolq.jsonl": 3270,
    "llm_foundry_icl/triviaqa_sm_sub.jsonl": 3000,
    "llm_foundry_icl/math.jsonl": 5000,
    "llm_foundry_icl/hellaswag_small.jsonl": 4,
    "llm_foundry_icl/mmlu_small.jsonl": 4,
}
INDEXED = {"humaneval": "humaneval/HumanEval.jsonl.gz", "gsm8k": "gsm8k/test.jsonl", "mmlu": "mmlu",
           "icl": "llm_foundry_icl"}


@pytest.fixture(scope="module")
def web(shared: Path) -> list[dict]:
    with gzip.open(shared / WEB, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def benches(shared: Path) -> dict:
    return {name: (rel, load_benchmark(str(shared / "benchmarks" / rel))) for name, rel in INDEXED.items()}


@pytest.fixture(scope="module")
def index_dir(benches, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("decontam") / "index"
    build_index(benches, out)
    return out


@pytest.fixture(scope="module")
def index(index_dir) -> NgramIndex:
    return NgramIndex.load(index_dir)


# ------------------------------------------------------------------ loaders


@pytest.mark.parametrize("rel", sorted(COUNTS))
def test_loader_counts(shared, rel):
    items = load_benchmark(str(shared / "benchmarks" / rel))
    assert len(items) == COUNTS[rel]
    assert all(it.segments for it in items if not rel.startswith("mmlu"))
    assert len({it.key for it in items}) == len(items)  # keys identify items


def test_loader_fields(shared):
    he = load_benchmark(str(shared / "benchmarks/humaneval/HumanEval.jsonl.gz"))
    assert he[0].key == "HumanEval/0" and "def has_close_elements" in he[0].segments[0]
    gsm = load_benchmark(str(shared / "benchmarks/gsm8k/test.jsonl"))
    assert gsm[0].segments[1].startswith("Janet sells 16 - 3 - 4 = 9 duck eggs")  # <<16-3-4=9>> removed
    csqa = load_benchmark(str(shared / "benchmarks/llm_foundry_icl/commonsense_qa.jsonl"))
    assert csqa[0].segments[0] == ("A revolving door is convenient for two direction travel, but it also "
                                   "serves as a security measure at a what?")  # no "Question:"/"Choices:" scaffolding
    wino = load_benchmark(str(shared / "benchmarks/llm_foundry_icl/winogrande.jsonl"))
    assert wino[0].segments[0] == "Sarah was a much better surgeon than Maria so Sarah always got the easier cases."


def test_generic_loader_jsonl_csv_parquet(shared, tmp_path):
    gsm = shared / "benchmarks/gsm8k/test.jsonl"
    assert len(load_benchmark(f"{gsm}:question,answer")) == 1319
    rows = [json.loads(line) for line in gsm.open()]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "g.parquet")
    items = load_benchmark(f"{tmp_path / 'g.parquet'}:question")
    assert len(items) == 1319 and items[0].segments == (rows[0]["question"],)
    csv_path = shared / "benchmarks/mmlu/test/anatomy_test.csv"
    assert len(load_benchmark(f"{csv_path}:question")) == 135
    (tmp_path / "anatomy_test.csv.gz").write_bytes(gzip.compress(csv_path.read_bytes()))  # MMLU layout, gzipped
    assert load_benchmark(str(tmp_path / "anatomy_test.csv.gz")) == load_benchmark(str(csv_path))
    assert load_benchmark(str(csv_path))[0].key == "anatomy_test:1"
    with pytest.raises(BenchmarkError, match="none of the fields"):
        load_benchmark(f"{gsm}:prompt")
    with pytest.raises(BenchmarkError, match="does not exist"):
        load_benchmark(str(tmp_path / "missing.jsonl"))
    (tmp_path / "odd.jsonl").write_text('{"foo": "bar"}\n')
    with pytest.raises(BenchmarkError, match="unknown benchmark record"):
        load_benchmark(str(tmp_path / "odd.jsonl"))


# ------------------------------------------------------------------ finding planted items


def _variants(s: str, rng: random.Random) -> dict[str, str]:
    """The same item as it might appear on a web page after copying, reflowing and restyling."""
    return {
        "verbatim": s,
        "upper": s.upper(),
        "spacing": re.sub(r"\s+", lambda _: rng.choice(["  ", "\n", " \t ", "\n\n"]), s),
        "punctuation": re.sub(r"[^\w\s]", lambda m: rng.choice([" , ", ";", " - ", "…"]), s),
        "fullwidth": "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s),  # NFKC folds back
        "html_flow": " ".join(s.split()).replace(" ", "\n", 3),
    }


def _long_segments(benches: dict, per_bench: int, rng: random.Random) -> list[tuple[str, str, str]]:
    out = []
    for name, (_, items) in benches.items():
        pool = [(it.key, seg) for it in items for seg in it.segments if len(words(seg)) >= 13]
        out += [(name, key, seg) for key, seg in rng.sample(pool, per_bench)]
    return out


def test_planted_items_found(index, benches, web):
    rng = random.Random(7)
    plants = _long_segments(benches, 10, rng)
    texts, truth = [], []
    for i, (bench, key, seg) in enumerate(plants):
        for variant, s in _variants(seg, rng).items():
            host = web[(7 * i + len(texts)) % len(web)]["text"]
            cut = rng.randrange(len(host) + 1)
            texts.append(f"{host[:cut]} Here it is: {s} and more text.\n{host[cut:]}")
            truth.append((bench, key, variant))
    found = index.scan(texts)
    missed = [t for t, ms in zip(truth, found, strict=True)
              if (t[0], t[1]) not in {(index.benchmark_of(m.item), index.key_of(m.item)) for m in ms}]
    assert len(truth) == 4 * 10 * 6
    assert missed == []


def test_short_items_use_full_length(index, benches):
    key, seg = next((it.key, s) for it in benches["icl"][1] if it.key.startswith("winograd_wsc")
                    for s in it.segments if 8 <= len(words(s)) < 13)
    assert (key, seg) == ("winograd_wsc.jsonl:25", "The sculpture rolled off the shelf because the sculpture wasn't anchored.")
    assert key in {index.key_of(m.item) for m in index.scan([f"Some text. {seg.upper()} More."])[0]}
    assert index.scan([" ".join(seg.split()[:-1])])[0] == []  # one word short: not the item
    assert index.scan([" ".join(words(seg)[:7])])[0] == []  # under the 8-word floor nothing is indexed


def _scan_all(index, texts):
    return [m for i in range(0, len(texts), 64) for m in index.scan(texts[i : i + 64])]


def test_unmodified_web_hits_are_true_overlaps(index, web):
    found = _scan_all(index, [d["text"] for d in web])
    hits = {(i, index.benchmark_of(m.item), index.key_of(m.item), web[i]["text"][m.start : m.end])
            for i, ms in enumerate(found) for m in ms}
    # Three pages of a numbering table list "1 2 3 ... 13", which a MATH solution spells out too:
    # a real 13-gram overlap (and the reason for the frequency cap, tested below).
    assert {(i, b, k) for i, b, k, _ in hits} == {(658, "icl", "math.jsonl:2816"), (659, "icl", "math.jsonl:2816"),
                                                 (660, "icl", "math.jsonl:2816")}
    assert {words(t)[:13] == [str(n) for n in range(1, 14)] for *_, t in hits} == {True}


def test_clean_prose_hits_are_quoted_speeches(index, shared):
    texts, names = [], []
    for z in ("nltk_inaugural.zip", "nltk_state_union.zip"):
        with zipfile.ZipFile(shared / "text/clean_en" / z) as f:
            for n in sorted(f.namelist()):
                if n.endswith(".txt"):
                    texts.append(f.read(n).decode("utf-8", errors="replace"))
                    names.append(n)
    for n in ("wikitext-2-test.txt", "botchan_gutenberg8868.txt", "tinyshakespeare.txt"):
        texts.append((shared / "text/clean_en" / n).read_text(encoding="utf-8"))
        names.append(n)
    found = _scan_all(index, texts)
    hit = {names[i]: sorted({index.key_of(m.item) for m in ms}) for i, ms in enumerate(found) if ms}
    # MMLU's US history and government questions quote these speeches and the Declaration of Independence.
    us_hist = "test/high_school_us_history_test"
    decl = ["test/high_school_government_and_politics_test:184"]
    # Each was read: the speeches say the quoted passage verbatim (Cleveland 1885 has the same line
    # about "the powers granted to the Federal Government" that Reagan's item quotes).
    assert hit == {
        "inaugural/1885-Cleveland.txt": [f"{us_hist}:126", f"{us_hist}:73"],
        "inaugural/1981-Reagan.txt": [f"{us_hist}:126", f"{us_hist}:73"],
        "inaugural/2013-Obama.txt": decl,
        "state_union/1980-Carter.txt": [f"{us_hist}:135", f"{us_hist}:169", f"{us_hist}:17", f"{us_hist}:59"],
        "state_union/1982-Reagan.txt": [f"{us_hist}:126", f"{us_hist}:73"],
        "state_union/1990-Bush.txt": decl,
        "state_union/1995-Clinton.txt": decl,
    }
    assert sum(map(len, found)) == 27


def test_frequency_cap_removes_corpus_boilerplate(shared, web, tmp_path):
    math = {"math": ("math.jsonl", load_benchmark(str(shared / "benchmarks/llm_foundry_icl/math.jsonl")))}
    texts = [d["text"] for d in web]
    meta = build_index(math, tmp_path / "capped", corpus_sample=iter(texts), max_doc_freq=2)
    # The "1 2 3 ... 13" 13-gram is on 3 pages (test above): over the cap of 2, so it leaves the index.
    assert meta["frequency_cap"] == {"sample_docs": 697, "max_doc_freq": 2, "removed_ngrams": 1}
    assert _scan_all(NgramIndex.load(tmp_path / "capped"), texts) == [[] for _ in texts]


# ------------------------------------------------------------------ the step: drop and redact


def _planted(host: str, seg: str, at: int) -> tuple[str, int, int]:
    at = host.rfind(" ", 0, at) + 1
    text = host[:at] + seg + " " + host[at:]
    return text, at, at + len(seg)


def test_redact_cuts_window_around_each_hit(index_dir, benches, web):
    seg = next(s for s in benches["gsm8k"][1][5].segments if len(words(s)) >= 13)
    host = web[0]["text"]
    text, s, e = _planted(host, seg, len(host) // 2)
    step = Decontaminate(str(index_dir), mode="redact")
    doc = step.apply(Document(id="d", text=text, source="web"))
    assert isinstance(doc, Document)
    [hit] = doc.metadata["decontam"]
    assert hit["benchmark"] == "gsm8k" and hit["item"] == "6" and hit["span"][0] == s
    assert seg.endswith("?") and hit["span"][1] == e - 1  # the match ends at the last word, not at the "?"
    assert hit["text"] == text[s : e - 1][:200]
    [(c0, c1)] = doc.metadata["decontam_cuts"]
    assert (c0, c1) == (s - 200, e - 1 + 200)
    # Everything outside the window stays, less the two words the cut lands in ("the ad|venture",
    # "Quarte|rs is") with their spaces, and the pieces are joined by one blank line.
    assert (text[c0 - 6 : c0], text[c1 : c1 + 6]) == ("the ad", "rs is ")
    assert doc.text == text[: c0 - 3].strip() + "\n\n" + text[c1 + 3 :].strip()
    assert text[c0 - 30 : c1 + 30] not in doc.text and NgramIndex.load(index_dir).scan([doc.text]) == [[]]


def test_redact_drops_fragmented_and_short(index_dir, benches, web):
    segs = [s for it in benches["gsm8k"][1][:40] for s in it.segments if len(words(s)) >= 13][:11]
    filler = web[1]["text"][:600]
    fragmented = "".join(f"{filler} {seg} " for seg in segs) + filler  # 11 hits leave 12 pieces
    short = "Read this: " + segs[0]
    step = Decontaminate(str(index_dir), mode="redact")
    out = step.apply_batch([Document(id=str(i), text=t, source="web") for i, t in enumerate([fragmented, short])])
    assert out == [Reject("too_fragmented"), Reject("too_short")]
    kept = Decontaminate(str(index_dir), mode="redact", max_pieces=12).apply(
        Document(id="x", text=fragmented, source="web"))
    assert len(kept.metadata["decontam_cuts"]) == 11 and len(kept.metadata["decontam"]) == 11


def test_index_errors(index_dir, tmp_path):
    with pytest.raises(IndexFormatError, match="no decontamination index"):
        Decontaminate(str(tmp_path / "nowhere")).setup()
    old = tmp_path / "old"
    shutil.copytree(index_dir, old)
    meta = json.loads((old / "index.json").read_text())
    (old / "index.json").write_text(json.dumps({**meta, "version": 0}))
    with pytest.raises(IndexFormatError, match="version 0.*rebuild"):
        NgramIndex.load(old)
    (old / "index.json").write_text(json.dumps({**meta, "normalization": "lower-only"}))
    with pytest.raises(IndexFormatError, match="normalisation"):
        NgramIndex.load(old)
    (old / "index.json").write_text(json.dumps(meta))
    (old / "items.npy").unlink()
    with pytest.raises(IndexFormatError, match="incomplete"):
        NgramIndex.load(old)
    with pytest.raises(ValueError, match="mode"):
        Decontaminate(str(index_dir), mode="mask")


def test_pipeline_drop_and_report(index_dir, benches, web, tmp_path, capsys):
    docs = [dict(d) for d in web[650:666]]  # includes the three "1 2 3 ... 13" pages
    he = benches["humaneval"][1][3].segments[0]
    docs[0]["text"], *_ = _planted(docs[0]["text"], he, 500)
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(d) + "\n" for d in docs))
    out = tmp_path / "out"
    pipe = Pipeline(name="dc", reader=readers.Jsonl(), steps=[Decontaminate(str(index_dir), mode="drop")])
    manifest = pipe.run(inputs=str(inp), output=str(out), rejected=True, progress=False)
    assert manifest["docs_read"] == 16 and manifest["docs_written"] == 12
    step = json.loads((out / "stats.json").read_text())["steps"][1]
    assert step["dropped"] == {"decontam:contaminated": 4}
    assert step["extra"]["docs_hit:icl"] == 3 and step["extra"]["docs_hit:humaneval"] == 1
    assert step["extra"]["benchmarks"]["humaneval"] == 164
    assert cli_main(["decontam", "report", str(out), "--json"]) == 0
    full = json.loads(capsys.readouterr().out)
    rep = full["benchmarks"]
    assert cli_main(["decontam", "report", f"file://{out}", "--json"]) == 0  # run files go through curate.io.fs
    assert json.loads(capsys.readouterr().out) == full
    assert rep["humaneval"]["items_hit"] == 1 and rep["humaneval"]["docs"][0]["items"] == ["HumanEval/3"]
    assert (rep["icl"]["items_hit"], rep["icl"]["docs_hit"], rep["icl"]["matches"]) == (1, 3, 6)
    assert rep["mmlu"]["items_hit"] == 0 and rep["mmlu"]["items_total"] == 14327
    assert cli_main(["decontam", "report", str(out)]) == 0
    text = capsys.readouterr().out
    assert "HumanEval/3" in text and "math.jsonl:2816" in text


def test_report_of_a_drop_run_without_rejected_says_why(index_dir, web, tmp_path, capsys):
    """Issue 36.7: "items hit 0 of 14,327" beside "docs hit 3" contradicted itself; the dropped documents
    were not kept, so which items they hold is unknown, and the report says so."""
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(d) + "\n" for d in web[650:666]))  # the three "1 2 3 ... 13" pages
    out = tmp_path / "out"
    pipe = Pipeline(name="dc", reader=readers.Jsonl(), steps=[Decontaminate(str(index_dir), mode="drop")])
    pipe.run(inputs=str(inp), output=str(out), rejected=False, progress=False)
    assert cli_main(["decontam", "report", str(out), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    icl = rep["benchmarks"]["icl"]
    assert (icl["docs_hit"], icl["docs_listed"], icl["items_hit_complete"]) == (3, 0, False)
    assert rep["benchmarks"]["mmlu"]["items_hit_complete"] is True  # no hits: nothing is unknown
    assert cli_main(["decontam", "report", str(out)]) == 0
    text = capsys.readouterr().out
    [row] = [line for line in text.splitlines() if line.startswith("icl ")]
    assert row.split()[1:4] == ["?", f"{icl['items_total']:,}", "3"]  # items hit, of, docs hit
    assert "icl: the 3 documents with hits were dropped and not kept" in text and "rerun with --rejected" in text


def test_cli_index_and_errors(shared, tmp_path, capsys):
    he = shared / "benchmarks/humaneval/HumanEval.jsonl.gz"
    gsm = shared / "benchmarks/gsm8k/test.jsonl"
    argv = ["decontam", "index", "--benchmark", f"humaneval={he}", "--benchmark", f"mine={gsm}:question",
            "--out", str(tmp_path / "ix")]
    assert cli_main(argv) == 0
    meta = json.loads((tmp_path / "ix/index.json").read_text())
    assert meta["benchmarks"]["humaneval"]["items"] == 164 and meta["benchmarks"]["mine"]["items"] == 1319
    assert cli_main(["decontam", "index", "--benchmark", "x", "--out", str(tmp_path / "y")]) == 2
    assert cli_main(["decontam", "index", "--benchmark", f"x={gsm}:nope", "--out", str(tmp_path / "y")]) == 2
    assert "none of the fields" in capsys.readouterr().err
