"""`python -m train eval`: log-likelihoods against a token-by-token hand computation, bits per byte by hand, the
llm-foundry prompt layout, and a model trained on a task's gold answers far above chance where an untrained one
stays at chance (planted ground truth)."""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from curate.models.checkpoint import Loaded
from curate.models.gpt import GPT, GPTConfig
from curate.models.scoring import score_spans
from train.evaluate import EvalPlan, evaluate
from train.evaluate.cli import main as eval_main
from train.evaluate.heldout import HeldoutSet, bits_per_byte
from train.evaluate.icl import Task, candidates, evaluate_task, load_task, shots_for

ICL = "benchmarks/llm_foundry_icl"
EOS = "<|endoftext|>"


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def bpe(texts: list[str], vocab: int = 400) -> Tokenizer:
    """A byte-level BPE made with the tokenizers library directly (EOS first, as the project's tokenizers have it)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=[EOS, "<|pad|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def tiny_model(vocab: int, seq_len: int = 32, seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    return GPT(GPTConfig(vocab_size=vocab, seq_len=seq_len, n_layer=2, n_head=2, n_embd=32)).eval()


@pytest.fixture(scope="module")
def web_run(shared) -> Loaded:
    texts = [json.loads(line)["text"] for line in
             __import__("gzip").open(shared / "text/web_cc/dolma_ccnet_cc_en_head-0091.jsonl.gz", "rt")]
    tok = bpe(texts)
    return Loaded(tiny_model(tok.get_vocab_size()), tok, tok.token_to_id(EOS), 0)


def hand_logprob(model: GPT, ids: list[int], k: int) -> tuple[float, bool]:
    """Sum of log p of the last k ids, one forward pass per token on exactly the prefix the model may see."""
    ids = ids[-(model.cfg.seq_len + 1):]
    total, greedy = 0.0, True
    with torch.no_grad():
        for j in range(len(ids) - k, len(ids)):
            logits = model(torch.tensor([ids[:j]]))[0, -1, : model.cfg.vocab_size]
            logp = F.log_softmax(logits.double(), dim=-1)
            total += float(logp[ids[j]])
            greedy &= int(logits.argmax()) == ids[j]
    return total, greedy


def test_span_logprobs_match_a_token_by_token_computation(web_run):
    run = web_run
    enc = lambda s: run.tokenizer.encode(s).ids  # noqa: E731
    long_context = enc("word " * 60)  # longer than the window: the oldest context tokens are cut
    requests = [([run.eos_id] + enc("The cat sat on"), len(enc(" the mat"))),
                ([run.eos_id] + enc("Hello"), 1),
                ([run.eos_id] + long_context + enc(" and more"), len(enc(" and more"))),
                ([run.eos_id] + enc("A much longer context sentence that goes on a while") + enc(" end"), 2)]
    requests[0] = (requests[0][0] + enc(" the mat"), requests[0][1])
    for batch_size in (1, 3):  # batches with padding give the numbers the unpadded rows give
        spans = score_spans(run.model, requests, run.eos_id, batch_size=batch_size)
        for (ids, k), span in zip(requests, spans, strict=True):
            lp, greedy = hand_logprob(run.model, ids, k)
            assert span.logprob == pytest.approx(lp, abs=1e-4)
            assert span.tokens == k and span.greedy == greedy


def test_bits_per_byte_by_hand(web_run, tmp_path):
    run, T = web_run, web_run.model.cfg.seq_len
    docs = [("a", "São Paulo é a maior cidade do Brasil — e não é a capital. " * 3), ("b", "Short text."),
            ("a", "Another document of source a, with enough words to span more than one window of tokens " * 2)]
    path = tmp_path / "held.jsonl"
    path.write_text("".join(json.dumps({"text": t, "source": s}) + "\n" for s, t in docs) + "not json\n")
    expect: dict[str, list[float]] = {}
    for src, text in docs:
        ids = [run.eos_id] + run.tokenizer.encode(text).ids
        nll = 0.0
        with torch.no_grad():
            for i in range(1, len(ids)):  # token i sees the tokens since the start of its window of T targets
                start = (i - 1) // T * T
                logits = run.model(torch.tensor([ids[start:i]]))[0, -1, : run.model.cfg.vocab_size]
                nll -= float(F.log_softmax(logits.double(), dim=-1)[ids[i]])
        acc = expect.setdefault(src, [0.0, 0])
        acc[0] += nll
        acc[1] += len(text.encode("utf-8"))
    got = bits_per_byte(run, HeldoutSet("held", str(path)), batch_size=2)
    for src, (nll, n_bytes) in expect.items():
        assert got["sources"][src]["bytes"] == n_bytes
        assert got["sources"][src]["bits_per_byte"] == pytest.approx(nll / (math.log(2) * n_bytes), rel=1e-5)
    total_nll, total_bytes = sum(v[0] for v in expect.values()), sum(v[1] for v in expect.values())
    assert got["bits_per_byte"] == pytest.approx(total_nll / (math.log(2) * total_bytes), rel=1e-5)
    assert got["docs"] == 3 and got["skipped"] == {"read:bad_json": 1}
    # a byte budget cuts at the last line break inside it; plain text is one document per file
    txt = tmp_path / "held.txt"
    txt.write_text("line one\nline two\nline three\n")
    cut = bits_per_byte(run, HeldoutSet("txt", str(txt), max_bytes=20))
    assert cut["bytes"] == len("line one\nline two") and cut["docs"] == 1


def test_shared_task_files_load_in_their_formats(shared):
    expect = {"copa": ("multiple_choice", 100), "arc_easy": ("multiple_choice", 2376),
              "winograd_wsc": ("schema", 273), "lambada_openai": ("language_modeling", 5153)}
    for name, (kind, n) in expect.items():
        task = load_task(name, str(shared / ICL / f"{name}.jsonl"))
        assert (task.kind, len(task.examples), task.skipped) == (kind, n, 0)
    with pytest.raises(ValueError, match="no task format"):
        load_task("trivia", str(shared / ICL / "triviaqa_sm_sub.jsonl"))  # a generation task: not scored here


def test_prompts_follow_the_llm_foundry_layout(shared):
    task = load_task("arc_easy", str(shared / ICL / "arc_easy.jsonl"))
    ex = task.examples[0]
    cands, gold = candidates(task, 0, 0, seed=1)
    assert gold == ex["gold"] == 0
    assert [c.context for c in cands] == [ex["query"] + "\nAnswer:"] * 4
    assert [c.continuation for c in cands] == [" " + c for c in ex["choices"]]
    (j,) = shots_for(len(task.examples), 0, 1, seed=1)
    shot = task.examples[j]
    one, _ = candidates(task, 0, 1, seed=1)
    assert one[0].context == f"{shot['query']}\nAnswer: {shot['choices'][shot['gold']]}\n{ex['query']}\nAnswer:"
    picks = shots_for(10, 3, 9, seed=5)
    assert sorted(picks) == [0, 1, 2, 4, 5, 6, 7, 8, 9]  # every other example, never the test example itself
    assert shots_for(100, 3, 5, seed=5) == shots_for(100, 3, 5, seed=5) != shots_for(100, 3, 5, seed=6)
    wsc = load_task("winograd_wsc", str(shared / ICL / "winograd_wsc.jsonl"))
    c, gold = candidates(wsc, 0, 0, seed=1)
    assert [x.context for x in c] == wsc.examples[0]["context_options"] and gold == wsc.examples[0]["gold"]
    assert {x.continuation for x in c} == {" " + wsc.examples[0]["continuation"]}


def test_accuracies_and_centring_by_hand(web_run):
    run = web_run
    examples = [{"query": "The sky is", "choices": ["blue", "a very long and unlikely answer here", "green"], "gold": 0},
                {"query": "Two plus two is", "choices": ["four", "five"], "gold": 1},
                {"query": "Paris is in", "choices": ["France and Europe", "Spain"], "gold": 0}]
    task = Task("hand", "-", "multiple_choice", examples, " ")
    got = evaluate_task(run, task, 0)
    hits = {"acc": 0, "acc_per_token": 0, "acc_per_char": 0}
    for ex in examples:
        ctx = [run.eos_id] + run.tokenizer.encode(ex["query"]).ids
        scored = []
        for c in ex["choices"]:
            cont = run.tokenizer.encode(" " + c).ids
            lp, _ = hand_logprob(run.model, ctx + cont, len(cont))
            scored.append((lp, lp / len(cont), lp / len(" " + c)))
        for i, key in enumerate(hits):
            best = max(range(len(scored)), key=lambda r: scored[r][i])
            hits[key] += best == ex["gold"]
    chance = (1 / 3 + 1 / 2 + 1 / 2) / 3
    assert got["chance"] == pytest.approx(chance)
    for key, h in hits.items():
        assert got[key] == pytest.approx(h / 3)
        assert got[f"{key}_centred"] == pytest.approx((h / 3 - chance) / (1 - chance))


def test_an_example_longer_than_the_window_is_left_out_and_counted(web_run):
    examples = [{"query": "Q", "choices": ["yes", "no"], "gold": 0},
                {"query": "Q", "choices": ["yes", "word " * 80], "gold": 0},  # 80 tokens: no 32-token window holds it
                {"query": "Q", "choices": ["no", "yes"], "gold": 1}]
    got = evaluate_task(web_run, Task("long", "-", "multiple_choice", examples, " "), 0)
    assert (got["examples"], got["skipped_too_long"]) == (2, 1)


def _train_on(texts: list[str], tok: Tokenizer, steps: int, seq_len: int = 48, seed: int = 0) -> GPT:
    """A plain next-token training loop written here, so this test does not rest on the project's trainer."""
    eos = tok.token_to_id(EOS)
    stream = []
    for t in texts:
        stream += [eos] + tok.encode(t).ids
    data = torch.tensor(stream)
    model = tiny_model(tok.get_vocab_size(), seq_len, seed).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        starts = torch.randint(0, len(data) - seq_len - 1, (16,), generator=gen)
        batch = torch.stack([data[s : s + seq_len + 1] for s in starts.tolist()])
        loss = model(batch[:, :-1], batch[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def test_a_model_trained_on_the_gold_answers_beats_chance_and_an_untrained_one_does_not(shared):
    task = load_task("copa", str(shared / ICL / "copa.jsonl"))
    gold_texts = [f"{ex['query']} {ex['choices'][ex['gold']]}" for ex in task.examples]  # the planted answers
    tok = bpe(gold_texts, vocab=512)
    eos = tok.token_to_id(EOS)
    trained = Loaded(_train_on(gold_texts, tok, steps=150), tok, eos, 150)
    untrained = Loaded(tiny_model(tok.get_vocab_size(), 48, seed=1), tok, eos, 0)
    good, chance = evaluate_task(trained, task, 0), evaluate_task(untrained, task, 0)
    for key in ("acc", "acc_per_token", "acc_per_char"):  # chance is 0.5 on these 100 two-way examples
        assert good[key] >= 0.9 and good[f"{key}_centred"] >= 0.8
    # An untrained model gives every token about the same probability, so per token it cannot prefer either
    # answer; its raw sum still prefers the answer with fewer tokens (a length bias, 0.68 on COPA, not skill).
    assert abs(chance["acc_per_token"] - 0.5) <= 0.2  # 4 standard deviations of 100 coin flips
    assert evaluate_task(trained, task, 0, batch_size=7) == good  # deterministic, whatever the batching


def _save_checkpoint(run: Loaded, out, step: int) -> None:
    out.mkdir()
    cfg = run.model.cfg
    torch.save({"model": run.model.state_dict(), "model_config": vars(cfg).copy(), "eos_id": run.eos_id,
                "step": step, "config": {"batch_tokens": 1024, "seed": 0, "data": None}, "tokenizer": None},
               out / "ckpt.pt")
    run.tokenizer.save(str(out / "tokenizer.json"))


def test_command_line_writes_json_markdown_and_a_plot(web_run, shared, tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    _save_checkpoint(web_run, a, 10)
    other = Loaded(tiny_model(web_run.model.cfg.vocab_size, seed=3), web_run.tokenizer, web_run.eos_id, 0)
    _save_checkpoint(other, b, 20)
    held = str(shared / "text/clean_en/botchan_gutenberg8868.txt")
    args = [str(a), str(b), "--heldout", f"book={held}", "--max-bytes", "3000", "--icl-dir", str(shared / ICL),
            "--task", "copa:0,1", "--limit", "8", "--out", str(tmp_path / "out")]
    assert eval_main(args) == 0
    out = capsys.readouterr().out
    assert "| book bpb |" in out
    results = json.loads((tmp_path / "out/eval.json").read_text())["results"]
    # issue 46: each task's centred score with the raw accuracy beside it, and 8-example tasks flagged as noise
    summary = out.split("## Tasks")[0]
    assert "| copa 0-shot † centred (acc) | copa 1-shot † centred (acc) |" in summary
    row = next(line for line in summary.splitlines() if line.startswith(f"| {a} |"))
    t = results[0]["tasks"][0]
    assert f"| {t['acc_per_char_centred']:.3f} ({t['acc_per_char']:.3f}) |" in row
    assert "† fewer than 100 examples (copa 0-shot, copa 1-shot): one standard error of an accuracy is up to ±0.177" in summary
    assert [r["step"] for r in results] == [10, 20] and [r["tokens"] for r in results] == [10240, 20480]
    assert [(t["task"], t["shots"], t["examples"]) for t in results[0]["tasks"]] == [("copa", 0, 8), ("copa", 1, 8)]
    direct = evaluate(a, EvalPlan(heldout=[HeldoutSet("book", held, max_bytes=3000)],
                                  tasks=[(load_task("copa", str(shared / ICL / "copa.jsonl")), [0, 1])], limit=8))
    assert direct["heldout"] == results[0]["heldout"] and direct["tasks"] == results[0]["tasks"]
    assert (tmp_path / "out/eval.png").stat().st_size > 0 and (tmp_path / "out/eval.md").is_file()
    assert eval_main([str(a), "--task", "nosuchtask", "--icl-dir", str(tmp_path)]) == 2  # one line, no traceback
    assert "error:" in capsys.readouterr().err


def test_progress_bars_go_to_stderr_and_no_progress_silences_them(web_run, shared, tmp_path, capsys):
    a = tmp_path / "a"
    _save_checkpoint(web_run, a, 10)
    held = str(shared / "text/clean_en/botchan_gutenberg8868.txt")
    args = [str(a), "--heldout", f"book={held}", "--max-bytes", "3000", "--icl-dir", str(shared / ICL),
            "--task", "copa", "--limit", "4"]
    assert eval_main(args) == 0
    err = capsys.readouterr().err
    assert "eval book" in err and "/3.00k" in err and "eval copa 0-shot" in err and "/4 " in err  # bytes, examples
    assert eval_main(args + ["--no-progress"]) == 0
    assert capsys.readouterr().err == ""
    assert eval_main(args + ["--max-bytes", "nosuchset=10"]) == 2  # a per-set limit for a set not held out
    assert "nosuchset" in capsys.readouterr().err
