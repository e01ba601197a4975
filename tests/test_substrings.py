"""dedup.Substrings against brute force: every run of whole characters of at least `min_length` UTF-8 bytes that
occurs twice (or earlier, for keep="first") is struck, in every script, at any number of workers and parts, by
both methods (suffix arrays of pairs of parts; hashed windows sorted in hash partitions)."""

from __future__ import annotations

import glob
import gzip
import json
import random
import tracemalloc

import numpy as np
import pyarrow.parquet as pq
import pytest

from curate import Pipeline, dedup, readers
from curate.dedup import substrings as sub
from curate.dedup import windows
from curate.run.executors.local import LocalExecutor

WEB = "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
METHODS = ["suffix", "hash"]


# ---------------------------------------------------------------- the brute force


def _occurs(corpus: list[bytes], s: bytes, d: int, p: int, earlier: bool) -> bool:
    """Whether `s` occurs at a position of the corpus other than (d, p) (earlier: before it in corpus order)."""
    for e, data in enumerate(corpus):
        if earlier and e > d:
            return False
        i = data.find(s)
        while i >= 0:
            if (e, i) != (d, p) and (not earlier or (e, i) < (d, p)):
                return True
            i = data.find(s, i + 1)
    return False


def brute(texts: list[str], min_length: int, keep: str) -> list[list[tuple[int, int]]]:
    """Per document, the maximal byte intervals covered by a run of whole characters of >= min_length bytes that
    occurs elsewhere in the corpus (keep="first": earlier). A prefix of a repeat repeats, so the longest repeat
    at each start is found by bisection over the character ends."""
    corpus = [t.encode() for t in texts]
    out = []
    for d, t in enumerate(texts):
        bounds = np.cumsum([0] + [len(c.encode()) for c in t]).tolist()  # character boundaries in bytes
        spans = []
        for k, p in enumerate(bounds[:-1]):
            ends = [e for e in bounds[k + 1:] if e - p >= min_length]
            lo, hi = 0, len(ends)  # ends[:lo] repeat, ends[hi:] do not
            while lo < hi:
                mid = (lo + hi) // 2
                if _occurs(corpus, corpus[d][p:ends[mid]], d, p, keep == "first"):
                    lo = mid + 1
                else:
                    hi = mid
            if lo:
                spans.append((p, ends[lo - 1]))
        merged: list[list[int]] = []
        for a, b in spans:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        out.append([(a, b) for a, b in merged])
    return out


def expected(texts: list[str], min_length: int, keep: str) -> dict[int, str]:
    """Per document index, its text with the brute-force intervals removed."""
    result = {}
    for d, (t, spans) in enumerate(zip(texts, brute(texts, min_length, keep), strict=True)):
        data, at, kept = t.encode(), 0, []
        for a, b in spans:
            kept.append(data[at:a])
            at = b
        kept.append(data[at:])
        result[d] = b"".join(kept).decode()
    return result


# ---------------------------------------------------------------- corpora

SCRIPTS = ["the quick brown fox ", "répété à Genève ", "数据去重的测试文本", "ภาษาไทยไม่มีช่องว่าง", "😀🎉👍🏽🇧🇷",
           "مرحبا بالعالم ", "Привет мир ", "नमस्ते दुनिया "]


def planted(seed: int = 0, docs: int = 40, min_length: int = 24) -> list[str]:
    """Random characters of every script (1- to 4-byte UTF-8) with planted repeats of min_length - 2 .. + 3
    bytes (cut to whole characters), some inside one document, plus empty and one-character documents."""
    rng = random.Random(seed)
    alphabet = "".join(SCRIPTS)

    def noise(n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    def chars_of(nbytes: int) -> str:
        s = rng.choice(SCRIPTS) * 8
        start = rng.randrange(len(s) // 2)
        out = ""
        for c in s[start:]:
            if len((out + c).encode()) > nbytes:
                break
            out += c
        return out

    seeds = [chars_of(min_length + delta) for delta in (-2, -1, 0, 1, 2, 3) for _ in range(2)]
    texts = []
    for _ in range(docs):
        parts = [noise(rng.randint(0, 12))]
        for _ in range(rng.randint(0, 3)):
            parts += [rng.choice(seeds), noise(rng.randint(0, 6))]
        texts.append("".join(parts))
    texts += ["", "x", "😀", "", "ก"]
    rng.shuffle(texts)
    return texts


def shared_texts(shared, docs: int = 14, chars: int = 400) -> list[str]:
    """Real pages cut short, with a few of their paragraphs quoted in other pages."""
    with gzip.open(shared / WEB, "rt", encoding="utf-8") as f:
        pages = [json.loads(line)["text"][:chars] for line in f][:docs]
    rng = random.Random(1)
    for _ in range(4):
        src = pages[rng.randrange(docs)]
        a = rng.randrange(max(1, len(src) - 120))
        i = rng.randrange(docs)
        pages[i] = pages[i][:50] + src[a:a + 120] + pages[i][50:]
    return pages


# ---------------------------------------------------------------- running the step


def run(texts: list[str], out, step, workers: int = 1, files: int = 1) -> dict:
    paths = []
    for k in range(files):
        p = out.parent / f"{out.name}-in{k}.jsonl"
        if not p.exists():  # a rerun (resume) reads the same file, untouched
            p.write_text("".join(json.dumps({"id": f"d{i:04d}", "text": t}) + "\n"
                                 for i, t in enumerate(texts) if i % files == k))
        paths.append(str(p))
    pipe = Pipeline(name="substrings", reader=readers.Jsonl(), steps=[step])
    pipe.run(inputs=paths, output=str(out), executor=LocalExecutor(workers, progress=False), rejected=True,
             progress=False)
    return json.loads((out / "stats.json").read_text())["steps"][-1]


def kept(out) -> dict[int, tuple[str, int]]:
    rows = [r for p in sorted(glob.glob(f"{out}/data/*.parquet"))
            for r in pq.read_table(p, columns=["id", "text", "substrings_struck"]).to_pylist()]
    return {int(r["id"].split("#")[0][1:]): (r["text"], r["substrings_struck"]) for r in rows}


def check(texts: list[str], out, min_length: int, keep: str) -> None:
    """The output equals the brute force's: kept text, characters struck per document, emptied ones dropped."""
    want = expected(texts, min_length, keep)
    got = kept(out)
    for d, t in enumerate(texts):
        if not want[d].strip() and want[d] != t:
            assert d not in got, (d, t)
            continue
        assert got[d] == (want[d], len(t) - len(want[d])), (d, t, got[d], want[d])


# ---------------------------------------------------------------- tests


def test_brute_force_itself():
    """The reference finds what is planted: a repeat of exactly min_length, not one byte shorter."""
    texts = ["ab" + "x" * 10 + "cd", "ef" + "x" * 10 + "gh", "😀" * 3 + "q", "z😀😀😀"]
    assert brute(texts, 10, "none")[:2] == [[(2, 12)], [(2, 12)]]
    assert brute(texts, 11, "none") == [[], [], [(0, 12)], [(1, 13)]]  # 3 emoji = 12 bytes
    assert brute(texts, 13, "none") == [[], [], [], []]  # "😀😀😀q" and "z😀😀😀" share no 13 bytes, nor a split emoji
    assert brute(texts, 10, "first") == [[], [(2, 12)], [], [(1, 13)]]  # the first copies stay
    assert brute(texts, 12, "first") == [[], [], [], [(1, 13)]]
    assert brute(["x" * 11], 10, "none") == [[(0, 11)]]  # overlapping occurrences in one document count
    assert brute(["x" * 11], 10, "first") == [[(1, 11)]]
    assert brute(["😀abX", "Y😀abZ"], 4, "none") == [[(0, 6)], [(1, 7)]]  # more than the start window of 😀


def window_spans(texts: list[str], min_length: int, keep: str) -> list[list[tuple[int, int]]]:
    """The hash method's windows of one piece, repeated ones merged into per-document intervals."""
    text = np.frombuffer(b"".join(t.encode() + b"\xff" for t in texts), np.uint8)
    h1, h2, key = windows.window_records(text, min_length, 0, 0)
    first, size, _ = windows.groups(h1, h2, key)
    key = key[(size > 1) if keep == "none" else ~first]
    lo = ((key >> np.uint64(3)) & np.uint64((1 << windows.OFFSET_BITS) - 1)).astype(np.int64)
    hi = lo + min_length + ((key >> np.uint64(1)) & np.uint64(3)).astype(np.int64)
    order = np.argsort(lo)
    lo, hi = windows.merge(lo[order], hi[order])
    starts = np.cumsum([0] + [len(t.encode()) + 1 for t in texts])
    out: list[list[tuple[int, int]]] = [[] for _ in texts]
    for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
        d = int(np.searchsorted(starts, a, side="right")) - 1
        out[d].append((a - int(starts[d]), b - int(starts[d])))
    return out


@pytest.mark.parametrize("keep", ["none", "first"])
def test_windows_union_equals_brute_force(keep):
    """Start and end windows of min_length - 2 .. + 3 byte repeats, every script, several lengths: their union is
    the brute force's (start windows alone would miss the end of "😀ab")."""
    for min_length, seed in ((4, 0), (10, 1), (24, 2)):
        texts = planted(seed=seed, docs=30, min_length=min_length) + ["😀abX", "Y😀abZ"]
        assert window_spans(texts, min_length, keep) == brute(texts, min_length, keep), (min_length, seed)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("keep", ["none", "first"])
def test_planted_every_script_equals_brute_force(tmp_path, keep, method, monkeypatch):
    monkeypatch.setattr(sub, "CHUNK", 97)  # repeats collected 97 positions at a time: chunk edges everywhere
    texts = planted()
    stats = run(texts, tmp_path / "out", dedup.Substrings(min_length=24, keep=keep, method=method))
    check(texts, tmp_path / "out", 24, keep)
    assert stats["extra"]["chars_struck"] > 100 and stats["extra"].get("parts", 1) == 1
    assert stats["dropped"].get("substrings:emptied", 0) == sum(
        1 for d, t in expected(texts, 24, keep).items() if not t.strip() and t != texts[d])


@pytest.mark.parametrize("method", METHODS)
def test_shared_text_equals_brute_force(tmp_path, shared, method):
    texts = shared_texts(shared)
    run(texts, tmp_path / "out", dedup.Substrings(min_length=50, part_bytes=1500, method=method))
    check(texts, tmp_path / "out", 50, "none")


@pytest.mark.parametrize("keep", ["none", "first"])
def test_same_output_at_any_workers_and_parts(tmp_path, keep):
    """Either method, any workers, parts (pieces for "hash") and hash partitions: one output, the brute force's."""
    texts = planted(seed=2, docs=60)
    total = sum(len(t.encode()) + 1 for t in texts)
    outputs, parts = [], []
    configs = ([("suffix", 1, 1, 1, None), ("suffix", 2, 2, 2, None), ("suffix", 3, 5, 3, None), ("hash", 1, 5, 3, 4),
                ("hash", 2, 2, 1, 1)] if keep == "none" else
               [("suffix", 1, 1, 1, None), ("suffix", 2, 5, 1, None), ("hash", 1, 1, 1, 8), ("auto", 1, 5, 1, None)])
    for k, (method, workers, nparts, files, partitions) in enumerate(configs):  # files: one for "first" (its order)
        step = dedup.Substrings(min_length=24, keep=keep, part_bytes=-(-total // nparts) + 40, method=method,
                                partitions=partitions)
        stats = run(texts, tmp_path / f"out{k}", step, workers=workers, files=files)
        outputs.append(kept(tmp_path / f"out{k}"))
        assert stats["extra"]["method"] == (method if method != "auto" else "hash")  # 5 parts: over AUTO_PARTS
        parts.append(stats["extra"]["parts"] if method == "suffix" else stats["extra"]["partitions"])
        if method == "auto":
            assert parts[-1] == 16, parts  # partitions of part_bytes / 3 records, a fifteenth: the next power of two
    assert parts[0] == 1 and all(p >= n for p, (m, _, n, *_) in zip(parts, configs, strict=True) if m == "suffix")
    assert all(o == outputs[0] for o in outputs)  # pieces never span files, so "suffix" gets more parts than asked
    check(texts, tmp_path / "out0", 24, keep)


@pytest.mark.parametrize("method", METHODS)
def test_repeat_across_parts_found(tmp_path, method):
    """The two copies of a span fall in different parts (pieces): found by the pair task (the partition's sort),
    struck in both (or the later)."""
    span = "a boilerplate sentence that repeats once, far apart. "
    filler = [f"unique text number {i} " + chr(0x4E00 + i) * 20 for i in range(30)]
    texts = ["Begin: " + span + "one", *filler, "Close; " + span + "two"]
    step = dedup.Substrings(min_length=40, part_bytes=400, method=method)
    stats = run(texts, tmp_path / "a", step)
    got = kept(tmp_path / "a")
    assert stats["extra"].get("parts", 3) >= 3 and stats["extra"].get("partitions", 2) >= 2
    assert got[0][0] == "Begin:one" and got[len(texts) - 1][0] == "Close;two"
    run(texts, tmp_path / "b", dedup.Substrings(min_length=40, part_bytes=400, keep="first", method=method))
    got = kept(tmp_path / "b")
    assert got[0][0] == texts[0] and got[len(texts) - 1] == ("Close;two", len(span) + 1)  # the space before it repeats too


def test_budget_held_on_corpus_three_times_a_part(tmp_path, shared):
    """A corpus 3x the part budget: every piece and part within it, every pair task's text within two parts (its
    memory per byte of text is test_peak_memory_per_byte's)."""
    texts = shared_texts(shared, docs=14, chars=300) * 2
    total = sum(len(t.encode()) + 1 for t in texts)
    budget = total // 4
    stats = run(texts, tmp_path / "out", dedup.Substrings(min_length=50, part_bytes=budget, method="suffix"))
    extra = stats["extra"]
    assert extra["parts"] >= 3 and extra["pair_tasks"] == extra["parts"] * (extra["parts"] - 1) // 2
    assert extra["max_pair_bytes"] <= 2 * budget
    shards = [json.loads(p.read_text()) for p in sorted((tmp_path / "out" / "_work").glob("global*/_phases/text/*"))]
    assert all(hi - lo <= budget for s in shards for _, _, lo, hi in s["pieces"])
    assert all(sum(hi - lo for *_, lo, hi in part) <= budget for part in sub.plan_parts(shards, budget))
    check(texts, tmp_path / "out", 50, "none")


def test_hash_budget_held_on_corpus_three_times_a_part(tmp_path, shared):
    """method="hash" on a corpus 3x `part_bytes`: window pieces within a third of it, partitions holding about a third
    of it in records (a record per window, a window per character start or end), the output the brute force's."""
    texts = shared_texts(shared, docs=14, chars=300) * 2
    total = sum(len(t.encode()) + 1 for t in texts)
    budget = total // 3
    stats = run(texts, tmp_path / "out", dedup.Substrings(min_length=50, part_bytes=budget, method="hash"))
    extra = stats["extra"]
    assert extra["partitions"] == 16 and extra["windows"] <= 2 * total
    assert 0 < extra["max_partition_records"] <= budget / 2  # hashes spread evenly; a piece's repeats settle at home
    work = next((tmp_path / "out" / "_work").glob("global*"))
    [shard] = [json.loads(p.read_text()) for p in sorted((work / "_phases" / "text").glob("*"))]
    starts = np.fromfile(work / "text" / "00000.offsets", "<i8")
    pieces = windows.cut(shard["pieces"], starts, budget // 3)
    assert pieces[0][0] == 0 and pieces[-1][1] == starts[-1] and all(a[1] == b[0] for a, b in zip(pieces, pieces[1:], strict=False))
    assert all(hi - lo <= budget // 3 or np.isin([lo, hi], starts).all() and ((starts > lo) & (starts < hi)).sum() == 0
               for lo, hi in pieces) and set(np.ravel(pieces)) <= set(starts.tolist())
    check(texts, tmp_path / "out", 50, "none")


@pytest.mark.parametrize("keep", ["none", "first"])
def test_peak_memory_per_byte(keep):
    """What a pair task allocates (tracemalloc sees numpy's and pydivsufsort's arrays) is a fixed multiple of its
    text: the budget docs/dedup.md states."""
    rng = np.random.default_rng(0)
    text = np.frombuffer(bytearray(rng.integers(97, 101, 400_000, dtype=np.uint8).tobytes()), dtype=np.uint8)
    tracemalloc.start()
    sub.longest_repeats(text, keep)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak <= {"none": 13.5, "first": 20.5}[keep] * len(text), peak / len(text)  # docs/dedup.md's figures


@pytest.mark.parametrize("method", METHODS)
def test_report_shows_most_repeated(tmp_path, capsys, method):
    from curate.cli.main import main

    span = "Subscribe to our newsletter for the latest offers and news! "
    texts = [f"page {i} {chr(0x0E01 + i)}{span}{chr(0x0E21 + i)}" for i in range(6)] + ["x " * 40, "y " * 40]
    run(texts, tmp_path / "out", dedup.Substrings(min_length=30, method=method))
    top = sub.top_spans(str(tmp_path / "out"))
    assert top["count"][0] == 6 and top["text"][0] == span
    assert main(["dedup-report", str(tmp_path / "out")]) == 0
    assert "Subscribe to our newsletter" in capsys.readouterr().out


def test_resume_after_interrupted_pairs(tmp_path, monkeypatch):
    """A run killed in the pairs phase resumes: the finished pair tasks are not redone, the output is the same."""
    texts = planted(seed=3, docs=30)
    total = sum(len(t.encode()) + 1 for t in texts)
    step = dedup.Substrings(min_length=24, part_bytes=total // 3, method="suffix")
    calls = {"n": 0}
    real = sub.pair_task

    def dies_second(task):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("killed")
        return real(task)

    monkeypatch.setattr(sub, "pair_task", dies_second)
    with pytest.raises(Exception, match="killed"):
        run(texts, tmp_path / "out", step)
    monkeypatch.setattr(sub, "pair_task", real)
    seen = []
    monkeypatch.setattr(sub, "pair_task", lambda task: seen.append(task.out) or real(task))
    stats = run(texts, tmp_path / "out", step)
    assert stats["extra"]["pair_tasks"] >= 3 and len(seen) == 1  # only the task that failed runs again
    check(texts, tmp_path / "out", 24, "none")


def test_resume_after_interrupted_repeats(tmp_path, monkeypatch):
    """method="hash" killed in its repeats phase resumes: finished partitions are not redone, the output is the same."""
    texts = planted(seed=3, docs=30)
    step = dedup.Substrings(min_length=24, method="hash", partitions=4)
    real, calls = windows.repeat_partition, {"n": 0}

    def dies_second(task):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("killed")
        return real(task)

    monkeypatch.setattr(windows, "repeat_partition", dies_second)
    with pytest.raises(Exception, match="killed"):
        run(texts, tmp_path / "out", step)
    seen = []
    monkeypatch.setattr(windows, "repeat_partition", lambda task: seen.append(task.out) or real(task))
    stats = run(texts, tmp_path / "out", step)
    assert stats["extra"]["partitions"] == 4 and len(seen) == 1  # only the partition that failed runs again
    check(texts, tmp_path / "out", 24, "none")


def test_chunks_change_nothing(monkeypatch):
    """Repeats are collected CHUNK positions at a time: intervals across chunk edges merge as in one pass."""
    rng = np.random.default_rng(1)
    words = [w.encode() for w in ["ab", "çé", "数据", "😀", "ก", " "]]
    docs = [b"".join(rng.choice(words, rng.integers(0, 200))) for _ in range(150)]
    text = np.frombuffer(bytearray(b"".join(d + b"\xff" for d in docs)), dtype=np.uint8)
    starts = np.cumsum([0] + [len(d) + 1 for d in docs[:-1]])
    for keep in ("none", "first"):
        best = sub.longest_repeats(text, keep)
        whole = sub.intervals(text, starts, best, 9)
        monkeypatch.setattr(sub, "CHUNK", 37)
        chunked = sub.intervals(text, starts, best, 9)
        monkeypatch.undo()
        assert len(whole[0]) > 50 and all((a == b).all() for a, b in zip(whole, chunked, strict=True))


@pytest.mark.parametrize("method", METHODS)
def test_floor_drops_short_leftovers_with_reasons(tmp_path, method):
    """Documents left under min_chars after striking are dropped (substrings:emptied); a short document that lost
    nothing stays; rejected/ holds what was cut from each changed document, then the dropped ones whole."""
    span = "This paragraph is copied onto several pages of the same site. "
    texts = ["short", "Kept long enough after the cut, surely!" + span, "Too short?" + span, span + "tiny"]
    stats = run(texts, tmp_path / "out", dedup.Substrings(min_length=40, min_chars=20, method=method))
    got = kept(tmp_path / "out")
    assert got[0] == ("short", 0) and got[1] == ("Kept long enough after the cut, surely!", len(span))
    assert 2 not in got and 3 not in got and stats["dropped"] == {"substrings:emptied": 2}
    rejected = [r for p in glob.glob(f"{tmp_path}/out/rejected/*.parquet")
                for r in pq.read_table(p, columns=["id", "text", "drop_reason"]).to_pylist()]
    cut = sorted((r["id"].split("#")[0], r["text"]) for r in rejected if r["drop_reason"] == "substrings:duplicate")
    assert cut == [("d0001", span), ("d0002", span), ("d0003", span)]
    assert sorted((r["id"].split("#")[0], r["text"]) for r in rejected if r["drop_reason"] == "substrings:emptied") == [
        ("d0002", "Too short?"), ("d0003", "tiny")]


def test_missing_library_is_said_when_the_pipeline_is_built(monkeypatch):
    from curate.core.errors import UsageError

    real = sub.importlib.util.find_spec
    monkeypatch.setattr(sub.importlib.util, "find_spec", lambda name: None if name == "pydivsufsort" else real(name))
    with pytest.raises(UsageError, match=r"peneira\[substrings\]"):
        dedup.Substrings(method="suffix")
    assert dedup.Substrings(method="hash").method == "hash"  # hashing needs numba only, a core dependency
