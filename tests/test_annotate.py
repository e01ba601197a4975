"""`curate quality annotate` against a fake teacher that misbehaves (tests/_chatserver.py): every document
graded exactly once as the server counts, unreadable answers counted by reason, a SIGKILL'd annotation resumed
to the output of an uninterrupted one without paying twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest
from _chatserver import TEMPLATE, ChatServer

from curate.cli.main import main as curate_main
from curate.quality.annotate import ScoreRule, sample

CURATE = [sys.executable, "-m", "curate"]
FAST = {"PENEIRA_CC_TRIES": "4", "PENEIRA_CC_BACKOFF_BASE": "0.01", "PENEIRA_CC_BACKOFF_CAP": "2"}


def _docs(shared, n: int) -> list[dict]:
    """`n` real paragraphs of clean English (Botchan), ids d00…"""
    text = (shared / "text/clean_en/botchan_gutenberg8868.txt").read_text(encoding="utf-8")
    paras = [p.strip() for p in text.split("\n\n") if len(p.strip()) > 200]
    return [{"id": f"d{i:02d}", "text": paras[i]} for i in range(n)]


def _write(path, docs) -> str:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return str(path)


def _args(inputs: str, out, url: str, template, n: int, *extra: str) -> list[str]:
    return ["quality", "annotate", inputs, "--out", str(out), "--endpoint", url, "--model", "teacher",
            "--template", str(template), "-n", str(n), "--timeout", "2", "--no-progress", *extra]


ANSWERS = {"d05": "I cannot grade this page.", "d06": "Educational score: 9", "d07": '{"score": 3,}',
           "d08": None, "d09": {"content": "The page is educational because", "finish_reason": "length"},
           "d11": '```json\n{"score": 2}\n```'}
FAULTS = {"d00": ["429"], "d01": ["500", "500"], "d02": ["hang"], "d03": ["garbage"], "d04": ["cut"],
          "d10": ["garbage"] * 10}


def _grade(doc_id: str, text: str):
    return ANSWERS.get(doc_id, f"Points added...\nEducational score: {int(doc_id[1:]) % 6}")


def test_score_rule():
    rule = ScoreRule(0, 5)
    assert rule.parse("blah\nEducational score: 3", "stop") == (3.0, None)
    assert rule.parse("Score: 1. On reflection, **Educational score:** 4", "stop") == (4.0, None)
    assert rule.parse("Educational score: 4", "length") == (None, "truncated")
    assert rule.parse('{"score": "2"}', "stop") == (2.0, None)
    assert rule.parse('{"grade": 2}', "stop") == (None, "no_score")
    assert rule.parse("{nope}", "stop") == (None, "malformed_json")
    assert rule.parse("score: -1", "stop") == (None, "out_of_range")
    assert rule.parse("no number here", "stop") == (None, "no_score")


def test_sample_is_seeded_and_order_free(tmp_path, shared):
    docs = _docs(shared, 40)
    a, b = _write(tmp_path / "a.jsonl", docs), _write(tmp_path / "b.jsonl", docs[::-1] + docs[:5])  # + repeats
    assert sample([a], 10, seed=1) == sample([b], 10, seed=1)
    assert len(sample([b], 10, seed=1)) == 10 and sample([a], 10, seed=1) != sample([a], 10, seed=2)
    assert {i for i, _ in sample([a], 40, seed=3)} == {d["id"] for d in docs}
    import pyarrow as pa  # a run folder's Parquet shards give the same sample as the same documents in JSONL

    (tmp_path / "run/data").mkdir(parents=True)
    for k in range(2):
        part = docs[k::2]
        pq.write_table(pa.table({"id": [d["id"] for d in part], "text": [d["text"] for d in part]}),
                       tmp_path / f"run/data/part-0000{k}-000.parquet")
    assert sample([str(tmp_path / "run")], 10, seed=1) == sample([a], 10, seed=1)


def test_misbehaving_server(tmp_path, shared, monkeypatch, capsys):
    for k, v in FAST.items():
        monkeypatch.setenv(k, v)
    docs = _docs(shared, 30)
    inputs, template = _write(tmp_path / "docs.jsonl", docs), tmp_path / "prompt.txt"
    template.write_text(TEMPLATE, encoding="utf-8")
    out = tmp_path / "ann"
    with ChatServer(_grade, FAULTS, hang_s=3) as server:  # a hang outlasts the 2 s timeout; an answer does not
        assert curate_main(_args(inputs, out, server.url, template, 30, "--concurrency", "4")) == 0
        t = pq.read_table(out / "annotations.parquet").to_pylist()
        assert [r["id"] for r in t] != sorted(r["id"] for r in t)  # sample order, not input order
        assert {r["id"] for r in t} == {d["id"] for d in docs}
        assert server.paid == {d["id"]: 1 for d in docs if d["id"] != "d10"}  # each paid once, d10 never
        reasons = {r["id"]: r["reason"] for r in t if r["reason"]}
        assert reasons == {"d05": "no_score", "d06": "out_of_range", "d07": "malformed_json", "d08": "empty_choice",
                           "d09": "truncated", "d10": "malformed_json"}
        want = {d["id"]: float(int(d["id"][1:]) % 6) for d in docs if d["id"] not in reasons}
        assert {r["id"]: r["score"] for r in t if not r["reason"]} == {**want, "d11": 2.0}
        assert server.seen["d00"][1] - server.seen["d00"][0] >= 0.95  # Retry-After: 1 honoured
        assert len(server.seen["d01"]) == 3 and len(server.seen["d10"]) == 4  # two 500s; tries spent
        summary = json.loads((out / "annotate.json").read_text())["summary"]
        assert summary["unparseable"] == {"truncated": 1, "empty_choice": 1, "malformed_json": 2, "no_score": 1,
                                          "out_of_range": 1}
        assert summary["prompt_tokens"] == server.tokens["prompt_tokens"] > 0
        assert summary["completion_tokens"] == server.tokens["completion_tokens"]
        assert sum(r["prompt_tokens"] for r in t) == server.tokens["prompt_tokens"]
        requests = sum(len(v) for v in server.seen.values())
        assert curate_main(_args(inputs, out, server.url, template, 30)) == 0  # done: nothing asked again
        assert sum(len(v) for v in server.seen.values()) == requests
        capsys.readouterr()
        assert curate_main(_args(inputs, out, server.url, template, 30, "--seed", "7")) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "--seed" in err and "--overwrite" in err


def _journaled(out) -> int:
    folder = out / "journal"
    if not folder.is_dir():
        return 0
    return sum(len(p.read_text().splitlines()) for p in folder.glob("part-*.jsonl"))


def test_sigkill_resumes_without_paying_twice(tmp_path, shared):
    docs = _docs(shared, 20)
    inputs, template = _write(tmp_path / "docs.jsonl", docs), tmp_path / "prompt.txt"
    template.write_text(TEMPLATE, encoding="utf-8")
    env = {**os.environ, **FAST}
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    with ChatServer(_grade) as server:
        server.hold_after = 8
        args = _args(inputs, killed, server.url, template, 20, "--concurrency", "4", "--timeout", "60")  # held, not retried
        proc = subprocess.Popen([*CURATE, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60

        def settled() -> bool:  # every client thread held, every answer paid so far journaled
            return server.holding == 4 and _journaled(killed) == sum(server.paid.values())

        while not settled() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert settled(), proc.stderr.read() if proc.poll() is not None else "no journal"
        paid = sum(server.paid.values())
        assert 8 <= paid < 20  # requests already in flight when the 8th was paid may be paid too
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        server.release.set()  # the held requests are dropped unanswered
        server.hold_after = None
        r = subprocess.run([*CURATE, *args], env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert f"resumed_from_journal: {paid}" in r.stdout
        assert server.paid == {d["id"]: 1 for d in docs}  # nobody paid twice, nobody lost
        assert len(list((killed / "journal").glob("part-*.jsonl"))) == 1  # merged once complete
    with ChatServer(_grade) as fresh:
        r = subprocess.run([*CURATE, *_args(inputs, whole, fresh.url, template, 20)], env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    assert pq.read_table(killed / "annotations.parquet").equals(pq.read_table(whole / "annotations.parquet"))


@pytest.mark.parametrize("bad", [["-n", "0"], ["--score-regex", "score: \\d"], ["--api-key-env", "PENEIRA_NO_SUCH"],
                                 ["--system", "/nonexistent/system.txt"]])
def test_refused_options(tmp_path, shared, bad, capsys):
    inputs, template = _write(tmp_path / "docs.jsonl", _docs(shared, 3)), tmp_path / "prompt.txt"
    template.write_text(TEMPLATE, encoding="utf-8")
    args = _args(inputs, tmp_path / "o", "http://127.0.0.1:9/v1", template, 3)
    if bad[0] == "-n":
        args[args.index("-n") + 1] = bad[1]
    else:
        args += bad
    assert curate_main(args) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_dead_server_stops_with_one_line_and_loses_nothing(tmp_path, shared, monkeypatch, capsys):
    monkeypatch.setenv("PENEIRA_CC_TRIES", "2")
    monkeypatch.setenv("PENEIRA_CC_BACKOFF_BASE", "0.01")
    docs = _docs(shared, 12)
    inputs, template = _write(tmp_path / "docs.jsonl", docs), tmp_path / "prompt.txt"
    template.write_text(TEMPLATE, encoding="utf-8")
    out = tmp_path / "ann"
    with ChatServer(_grade, {"d03": ["500", "500"]}) as server:
        assert curate_main(_args(inputs, out, server.url, template, 12, "--concurrency", "1")) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "HTTP 500" in err[0] and "rerun the same command" in err[0]
        assert curate_main(_args(inputs, out, server.url, template, 12)) == 0  # the server is back
        assert server.paid == {d["id"]: 1 for d in docs}
    with ChatServer(_grade, {"d00": ["404"] * 12}) as server:
        assert curate_main(_args(inputs, tmp_path / "b", server.url, template, 12)) == 2
        assert server.paid["d00"] == 0 and len(server.seen["d00"]) == 1  # not tried again
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "HTTP 404" in err[0] and "--model" in err[0]


def test_rate_limit_spaces_requests(monkeypatch):
    from curate.io import chat

    now, slept = [100.0], []
    monkeypatch.setattr(chat.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(chat.time, "sleep", lambda s: slept.append(round(s, 6)))
    limit = chat.RateLimit(10)
    for _ in range(4):
        limit.wait()
    assert slept == [0.1, 0.2, 0.3]  # the clock stood still: each caller takes the next slot, 0.1 s apart
    now[0] += 1.0
    limit.wait()
    assert slept == [0.1, 0.2, 0.3]  # a free slot: no wait
