"""`python -m train ablate --spec FILE`: which curation makes the better model, one variable at a time.

One raw input (any number of files, each kind read by its own reader), several pipeline variants. Each variant's
output is measured in unique tokens with ONE tokenizer (trained once, on the output of the first variant, normally
extraction only: the raw text, and kept from then on); every variant is mixed to the same token budget (`curate mix`)
and trained on it, so no variant sees its text more than `max_epochs` times (default once: `tokens = "auto"` is the
smallest variant's unique tokens, and a larger budget is refused). Each run is trained with the same config and
seeds and evaluated with `train eval` on the same held-out sets and tasks. Held-out bits per byte is measured at
`eval_points` points during training (the run is stopped there with `stop_at`, evaluated, and resumed bit for
bit), the tasks at the end. Everything lands under `out`:

    tokenizer/tokenizer.json       the shared tokenizer
    variants/NAME/curated/         the pipeline's output      variants/NAME/mix/     the budgeted mix
    variants/NAME/tokens/          token shards               variants/NAME/seedK/   run, curve.jsonl, eval.json
    results.json, results.md, curves.png, tasks.png

Resumable: every stage directory has a record beside it (`.NAME.ablate.json`) with a key made of everything its
content depends on (the pipeline file's text, the inputs, the budget, the tokenizer, the training config, ...). A
stage whose key matches and that finished is skipped, a matching unfinished one is resumed (training continues from
its last checkpoint; an unfinished curation starts over), and one whose key changed is deleted and redone, with
everything after it. Each stage is built under a lock, so processes (`--jobs`, or several `--only` invocations)
never build one stage twice. A variant already trained is not retrained; adding a variant or a seed runs only what
is new. `--verify` curates again and compares with a recorded results.json. The spec format is in docs/ablation.md.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import heapq
import json
import shutil
import sys
from pathlib import Path

from curate.core.stats import StepStats
from curate.io.readers import Reader
from train.ablate.spec import (
    Spec,
    budget,
    digest,
    environment,
    input_reader,
    load_spec,
    mark,
    read_mark,
    seeds_of,
    stage_busy,
    stage_lock,
    stage_state,
)

ID_SAMPLE = 20  # ids recorded per curation (the smallest by hash), compared by --verify


class InputReader(Reader):
    """Reads each raw input file with the reader of the [[input]] it belongs to, so one run (and one dedup) covers
    WARC and text inputs together; documents keep their input's name as source."""

    def __init__(self, routes: dict[str, Reader]):
        super().__init__("ablation")
        self.routes = routes  # file -> reader

    def read(self, path: str, stats: StepStats):
        return self.routes[path].read(path, stats)


def input_routes(spec: Spec) -> dict[str, Reader]:
    from curate.io.fs import expand_inputs

    routes: dict[str, Reader] = {}
    for i in spec.inputs:
        reader = input_reader(i)
        for f in expand_inputs(i["path"]):
            routes.setdefault(f, reader)
    return routes


def curation_key(variant: dict, routes: dict[str, Reader], depends: dict) -> str:
    """The pipeline file's text, its env, the input files and readers, and the code of every part of the pipeline
    (`depends.variant_depends`): a changed step, reader or library module curates again."""
    text = Path(variant["pipeline"]).read_text()
    return digest("curate", text, variant.get("env", {}), sorted(routes), [str(r) for r in routes.values()], depends)


def curate_into(spec: Spec, variant: dict, routes: dict[str, Reader], out: Path) -> dict:
    """Run the variant's pipeline over the raw input into `out`; what it kept (`fingerprint`) and read."""
    from curate.run.pipeline import Pipeline

    with environment(variant.get("env", {})):
        p = Pipeline.from_file(variant["pipeline"])
    pipeline = Pipeline(name=variant["name"], reader=InputReader(routes), steps=p.steps, writer=p.writer)
    m = pipeline.run(inputs=list(routes), output=str(out), workers=spec.workers, progress=False)
    return {"docs_read": m["docs_read"], **fingerprint(out)}


def fingerprint(curated: Path) -> dict:
    """What a curation kept, in a form two runs can be compared by: documents, characters, an order-free digest of
    all ids (the sum of their 64-bit hashes) and the ID_SAMPLE ids with the smallest hashes. One pass over the id
    and text columns, a bounded heap: memory does not grow with the output."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from curate.io.corpus import resolve_inputs

    docs = chars = total = 0
    smallest: list[tuple[int, str]] = []  # max-heap by negated hash
    for f in resolve_inputs(str(curated)):
        for batch in pq.ParquetFile(f).iter_batches(columns=["id", "text"], batch_size=4096):
            docs += batch.num_rows
            chars += int(pc.sum(pc.utf8_length(batch.column("text"))).as_py() or 0)
            for i in batch.column("id").to_pylist():
                h = int.from_bytes(hashlib.sha256(i.encode()).digest()[:8], "big")
                total = (total + h) % (1 << 64)
                if len(smallest) < ID_SAMPLE:
                    heapq.heappush(smallest, (-h, i))
                elif h < -smallest[0][0]:
                    heapq.heapreplace(smallest, (-h, i))
    return {"docs_written": docs, "chars_written": chars, "ids_digest": f"{total:016x}",
            "id_sample": [i for _, i in sorted(smallest, reverse=True)], "dropped": drop_reasons(curated)}


def drop_reasons(curated: Path) -> dict[str, int]:
    """Documents each step dropped, by reason (the run's stats.json): why two curations kept different counts,
    e.g. `extract:timeout` before issue 29, when extraction had a wall-clock limit."""
    stats = curated / "stats.json"
    steps = json.loads(stats.read_text())["steps"] if stats.is_file() else []
    return {reason: n for s in steps for reason, n in sorted(s.get("dropped", {}).items())}


def curate_variant(spec: Spec, variant: dict, routes: dict[str, Reader]) -> str:
    """Run the variant's pipeline over the raw input into variants/NAME/curated; returns the stage key."""
    from train.ablate.depends import variant_depends

    out = spec.out / "variants" / variant["name"] / "curated"
    depends = variant_depends(spec, variant)
    key = curation_key(variant, routes, depends)
    with stage_lock(out):
        state = stage_state(out, key)
        if state == "done":
            record = read_mark(out)
            if "dropped" not in record:  # recorded before fingerprints were: add it, the output is the same
                info = {k: v for k, v in record.items() if k not in ("key", "done")}
                mark(out, key, True, **{**info, **fingerprint(out)})
            return key
        if state == "partial":  # started over: the run it left may be from another version of the library's steps
            shutil.rmtree(out, ignore_errors=True)
        mark(out, key, False)
        print(f"ablate: curating {variant['name']} with {variant['pipeline']}", flush=True)
        mark(out, key, True, **curate_into(spec, variant, routes, out), depends=depends)
    return key


def shared_tokenizer(spec: Spec) -> tuple[Path, str]:
    """Trained once, on the first variant's output, and then kept while vocab_size and tokenizer_chars stay the same,
    even if that output changes later: any tokenizer serves the comparison as long as every variant shares it, and a
    new one would retrain every variant. Delete OUT/tokenizer to train it again."""
    from curate.tokens.tokenize import train_tokenizer

    out = spec.out / "tokenizer"
    path = out / "tokenizer.json"
    settings = {"vocab_size": spec.vocab_size, "tokenizer_chars": spec.tokenizer_chars}
    with stage_lock(out):
        record = read_mark(out)
        if record.get("done") and path.is_file() and all(record.get(k) == v for k, v in settings.items()):
            return path, record["key"]
        if out.exists():
            shutil.rmtree(out)
        print(f"ablate: training the shared tokenizer on {spec.variants[0]['name']}", flush=True)
        source = spec.out / "variants" / spec.variants[0]["name"] / "curated"
        info = train_tokenizer(str(source), spec.vocab_size, str(path), sample_chars=int(spec.tokenizer_chars))
        key = info["sha256"][:16]  # what the mixes and token shards depend on: this very file
        mark(out, key, True, **settings)
    return path, key


def unique_tokens(spec: Spec, variant: dict, curated_key: str, tok: Path, tok_key: str) -> int:
    """The variant's curated text in tokens of the shared tokenizer, one end-of-document token per document
    included: counted as `curate mix` counts them, so a budget of this many tokens is one epoch of the text."""
    import pyarrow.parquet as pq
    from tokenizers import Tokenizer

    from curate.io.corpus import resolve_inputs

    base = spec.out / "variants" / variant["name"]
    key = digest("unique", curated_key, tok_key)
    with stage_lock(base / "unique"):
        if stage_state(base / "unique", key) == "done":
            return read_mark(base / "unique")["tokens"]
        tokenizer, n = Tokenizer.from_file(str(tok)), 0
        for f in resolve_inputs(str(base / "curated")):
            for batch in pq.ParquetFile(f).iter_batches(columns=["text"], batch_size=1024):
                encs = tokenizer.encode_batch_fast(batch.column("text").to_pylist(), add_special_tokens=False)
                n += sum(len(e.ids) + 1 for e in encs)
        mark(base / "unique", key, True, tokens=n)
    return n


def mix_and_tokenize(spec: Spec, variant: dict, curated_key: str, tok: Path, tok_key: str, tokens: int) -> str:
    from curate.run.executors.local import LocalExecutor
    from curate.tokens.mix import mix
    from curate.tokens.tokenize import tokenize

    base = spec.out / "variants" / variant["name"]
    key = digest("mix", curated_key, tok_key, tokens, spec.max_epochs, spec.mix_seed)
    with stage_lock(base / "mix"):
        if stage_state(base / "mix", key) != "done":
            mark(base / "mix", key, False)
            m = mix({variant["name"]: (str(base / "curated"), 1.0)}, tokens, base / "mix",
                    max_epochs=spec.max_epochs, seed=spec.mix_seed, tokenizer=str(tok),
                    executor=LocalExecutor(spec.workers, progress=False))
            s = m["plan"]["sources"][variant["name"]]
            mark(base / "mix", key, True, planned_tokens=m["plan"]["planned_tokens"],
                 tokens=m["actual"][variant["name"]]["tokens"], available_tokens=s["available_tokens"],
                 epochs=s["epochs"], limited=s["limited_by_max_epochs"])
    tkey = digest("tokens", key)
    with stage_lock(base / "tokens"):
        if stage_state(base / "tokens", tkey) != "done":
            mark(base / "tokens", tkey, False)
            tokenize(str(base / "mix"), str(tok), str(base / "tokens"), val_fraction=0.0,
                     executor=LocalExecutor(spec.workers, progress=False))
            mark(base / "tokens", tkey, True)
    return tkey


# ---------------------------------------------------------------------------------------------- training


def eval_plan(spec: Spec):
    """The spec's [eval] as an EvalPlan. `max_bytes` is one number for every set, or a table by set name (a set
    it does not name is read whole)."""
    from train.evaluate import EvalPlan
    from train.evaluate.heldout import parse_set
    from train.evaluate.icl import load_task, parse_spec

    e = spec.eval
    sets = [parse_set(s, e.get("max_docs")) for s in e.get("heldout", [])]
    limits = e.get("max_bytes")
    if isinstance(limits, dict):
        unknown = set(limits) - {h.name for h in sets}
        if unknown:
            raise ValueError(f"[eval] max_bytes names sets that are not held out: {sorted(unknown)}")
        for h in sets:
            h.max_bytes = int(limits[h.name]) if h.name in limits else None
    elif limits:
        for h in sets:
            h.max_bytes = int(limits)
    plan = EvalPlan(heldout=sets, limit=e.get("limit"), seed=e.get("shot_seed", 1234),
                    batch_size=e.get("batch_size", 32))
    for t in e.get("tasks", []):
        name, path, shots = parse_spec(t, e.get("icl_dir"), e.get("shots", [0]))
        plan.tasks.append((load_task(name, path), shots))
    if not plan.heldout:
        raise ValueError("the spec's [eval] needs at least one heldout set")
    return plan


def trainable(tokens: int, seq_len: int) -> int:
    """Tokens a run can train on without repeating any: whole windows of seq_len (+1 shared) tokens of the mix."""
    return max(0, (tokens - 1) // seq_len * seq_len)


def train_config(spec: Spec, data: Path, out: Path, seed: int, tokens: int, stop_at: int = 0):
    """The trainer's config. `tokens` is the smallest mix of all variants (whole documents rarely meet the budget
    exactly). Without [train] steps, every run trains once over that many tokens: steps = its whole windows //
    the windows per step; with them, more is refused (the mix would be repeated)."""
    from train.config import load_config

    keys = {k: v for k, v in spec.train.items() if k not in ("config", "seeds", "eval_points")}
    base = {**keys, "data": str(data), "out": str(out), "seed": seed, "stop_at": stop_at, "progress": False}
    cfg = load_config(spec.train.get("config"), base)
    can = trainable(tokens, cfg.seq_len)
    if "steps" not in keys:
        steps = can // cfg.batch_tokens
        if steps < 1:
            raise ValueError(f"the budget of {tokens:,} tokens is less than one batch of {cfg.batch_tokens:,}")
        cfg = load_config(spec.train.get("config"), {**base, "steps": steps})
    elif cfg.steps * cfg.batch_tokens > can:
        raise ValueError(f"[train] steps = {cfg.steps} x batch_tokens = {cfg.batch_tokens} trains on more than the "
                         f"{can:,} tokens of the smallest mix: lower steps, or leave them out to train on it once")
    return cfg


def train_and_evaluate(spec: Spec, name: str, seed: int, tokens_key: str, tokens: int, plan,
                       progress: bool = False) -> None:
    """Train in segments, evaluating held-out bits per byte after each; the tasks after the last.

    The run's key is its data, its training config and the trainer's and evaluation's code (`trainer_code`, which
    the record keeps): a changed [eval] re-evaluates the final checkpoint without retraining (the curve's earlier
    points keep the sets they were measured on), changed code trains again."""
    from train.ablate.depends import trainer_code

    base = spec.out / "variants" / name
    out = base / f"seed{seed}"
    cfg = train_config(spec, base / "tokens", out, seed, tokens)
    n = spec.train.get("eval_points", 4)
    code = trainer_code()
    key = digest("train", tokens_key, {k: v for k, v in cfg.to_dict().items() if k not in ("out", "stop_at")}, n, code)
    ekey = digest("eval", [(h.name, h.path, h.max_docs, h.max_bytes) for h in plan.heldout],
                  [(t.name, t.path, s) for t, s in plan.tasks], plan.limit, plan.seed)
    with stage_lock(out):
        _train_segments(spec, name, seed, tokens, plan, cfg, key, ekey, n, progress, code)


def _train_segments(spec: Spec, name: str, seed: int, tokens: int, plan, cfg, key: str, ekey: str, n: int,
                    progress: bool, code: dict[str, str]) -> None:
    from dataclasses import replace

    from train.evaluate import evaluate
    from train.loop import train

    base = spec.out / "variants" / name
    out = base / f"seed{seed}"
    final_eval = out / "eval.json"
    evaluated = final_eval.is_file() and json.loads(final_eval.read_text()).get("eval_key") == ekey
    if stage_state(out, key) == "done" and evaluated:
        return
    mark(out, key, False)
    points = sorted({max(1, round(cfg.steps * i / n)) for i in range(1, n + 1)})
    curve_path = out / "curve.jsonl"
    curve = [json.loads(line) for line in curve_path.read_text().splitlines()] if curve_path.exists() else []
    for p in points:
        if any(c["step"] == p for c in curve) and (p != points[-1] or evaluated):
            continue
        print(f"ablate: {name} seed {seed}: training to step {p} of {cfg.steps}", flush=True)
        result = train(train_config(spec, base / "tokens", out, seed, tokens, stop_at=p), resume=True)
        if result.diverged:
            raise RuntimeError(f"{name} seed {seed}: {result.diverged}")
        if result.stopped:  # SIGTERM: the segment was checkpointed where it stopped; a rerun continues from there
            sys.exit(128 + result.stopped)
        final = p == points[-1]
        r = evaluate(out, plan if final else replace(plan, tasks=[]), progress=progress)
        curve = [c for c in curve if c["step"] != r["step"]] + [
            {"step": r["step"], "tokens": r["tokens"], "heldout": {h["set"]: h["bits_per_byte"] for h in r["heldout"]}}]
        tmp = curve_path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(c) + "\n" for c in curve))
        tmp.replace(curve_path)
        if final:
            tmp = final_eval.with_suffix(".tmp")
            tmp.write_text(json.dumps({**r, "eval_key": ekey}, indent=1) + "\n")
            tmp.replace(final_eval)
    mark(out, key, True, trainer_code=code)


def _train_job(spec: Spec, name: str, seed: int, tokens_key: str, tokens: int, progress: bool) -> tuple[str, int]:
    """One (variant, seed) in a worker process of --jobs: its own torch threads and its own evaluation plan."""
    import torch

    if spec.threads:
        torch.set_num_threads(spec.threads)
    train_and_evaluate(spec, name, seed, tokens_key, tokens, eval_plan(spec), progress)
    return name, seed


# ---------------------------------------------------------------------------------------------- command


def prepare(spec: Spec, only: list[str] | None = None) -> tuple[int, dict[str, str], dict[str, int]]:
    """Curate, measure and mix every variant (the budget and the steps depend on all of them: every run trains on as
    many tokens as the smallest mix holds), after training the shared tokenizer; returns (the smallest mix's
    tokens, the token keys of the variants to train, each variant's unique tokens)."""
    routes = input_routes(spec)
    keys = {v["name"]: curate_variant(spec, v, routes) for v in spec.variants}
    tok, tok_key = shared_tokenizer(spec)
    unique = {v["name"]: unique_tokens(spec, v, keys[v["name"]], tok, tok_key) for v in spec.variants}
    tokens = budget(spec, unique)
    (spec.out / "budget.json").write_text(json.dumps({"tokens": tokens, "rule": spec.tokens,
                                                      "max_epochs": spec.max_epochs, "unique_tokens": unique}) + "\n")
    print(f"ablate: budget {tokens:,} tokens ({spec.tokens}; unique tokens {unique})", flush=True)
    tkeys = {v["name"]: mix_and_tokenize(spec, v, keys[v["name"]], tok, tok_key, tokens) for v in spec.variants}
    mixed = min(read_mark(spec.out / "variants" / v["name"] / "mix")["tokens"] for v in spec.variants)
    return mixed, {n: k for n, k in tkeys.items() if not only or n in only}, unique


def training_pool(jobs: int):
    """The processes of --jobs: a clean interpreter each (spawned: no forked torch state) that dies with this one,
    however it ends (a parent-death signal, as the curation pool's workers): a killed `ablate` leaves no training
    run writing on behind it."""
    import concurrent.futures
    import multiprocessing
    import os

    from curate.run.executors.local import die_with_parent

    ctx = multiprocessing.get_context("spawn")
    return concurrent.futures.ProcessPoolExecutor(jobs, mp_context=ctx, initializer=die_with_parent,
                                                  initargs=(os.getpid(),))


def run(spec: Spec, only: list[str] | None = None, jobs: int = 1, progress: bool = False) -> dict:
    import concurrent.futures

    import torch

    from train.ablate.report import collect, write

    if spec.threads:
        torch.set_num_threads(spec.threads)
    spec.out.mkdir(parents=True, exist_ok=True)
    plan = eval_plan(spec)  # fails early on a bad held-out set or task, before hours of curation
    tokens, tkeys, _ = prepare(spec, only)
    todo = [(name, seed) for v in spec.variants if (name := v["name"]) in tkeys for seed in seeds_of(spec, v)]
    if jobs <= 1:
        while todo:  # the next run no other process is training now; when all are, wait for the first
            name, seed = next((t for t in todo if not stage_busy(spec.out / "variants" / t[0] / f"seed{t[1]}")), todo[0])
            todo.remove((name, seed))
            train_and_evaluate(spec, name, seed, tkeys[name], tokens, plan, progress)
            write(spec, collect(spec))  # partial results are readable while the rest trains
    else:
        with training_pool(jobs) as pool:
            futures = [pool.submit(_train_job, spec, name, seed, tkeys[name], tokens, progress) for name, seed in todo]
            for f in concurrent.futures.as_completed(futures):
                f.result()
                write(spec, collect(spec))
    results = collect(spec)
    write(spec, results)
    return results


def verify(spec: Spec, record_file: Path) -> list[str]:
    """Curate every variant of the spec again, into OUT/verify/NAME, and compare what it kept with the record (a
    results.json): documents, characters, the digest of all ids and the sample of ids. Returns the differences,
    one line each (empty: the record reproduces)."""
    record = {v["name"]: v.get("curated", {}) for v in json.loads(record_file.read_text())["variants"]}
    routes = input_routes(spec)
    made = [d for d in (spec.out, *spec.out.parents) if not d.exists()]  # OUT, and the folders above it it makes
    try:
        return _compare_curations(spec, record, record_file, routes)
    finally:  # what it made goes: OUT/verify, and OUT (and above) when it made them and nothing else is in them
        shutil.rmtree(spec.out / "verify", ignore_errors=True)
        for d in made:
            with contextlib.suppress(OSError):
                d.rmdir()


def _compare_curations(spec: Spec, record: dict, record_file: Path, routes: dict[str, Reader]) -> list[str]:
    problems = []
    for v in spec.variants:
        if v["name"] not in record:
            problems.append(f"{v['name']}: not in the record {record_file}")
            continue
        out = spec.out / "verify" / v["name"]
        shutil.rmtree(out, ignore_errors=True)
        print(f"ablate: verifying {v['name']} with {v['pipeline']}", flush=True)
        now = curate_into(spec, v, routes, out)
        shutil.rmtree(out, ignore_errors=True)
        for k in ("docs_read", "docs_written", "chars_written", "ids_digest", "id_sample", "dropped"):
            was = record[v["name"]].get(k)
            if was is None:
                problems.append(f"{v['name']}: the record has no {k}")
            elif was != now[k]:
                if k == "dropped":
                    moved = sorted(r for r in set(was) | set(now[k]) if was.get(r, 0) != now[k].get(r, 0))
                    problems.append(f"{v['name']}: documents dropped, recorded -> now: "
                                    + ", ".join(f"{r} {was.get(r, 0)} -> {now[k].get(r, 0)}" for r in moved))
                elif k == "id_sample":
                    gone, new = sorted(set(was) - set(now[k])), sorted(set(now[k]) - set(was))
                    problems.append(f"{v['name']}: id sample differs: {len(gone)} recorded ids missing "
                                    f"(e.g. {gone[:2]}), {len(new)} new (e.g. {new[:2]})")
                else:
                    problems.append(f"{v['name']}: {k} {was} recorded, {now[k]} now")
    return problems


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m train ablate", description=__doc__.split("\n\n")[0])
    p.add_argument("--spec", required=True, help="the ablation's TOML file (docs/ablation.md)")
    p.add_argument("--only", action="append", default=None, metavar="VARIANT", help="train only these variants")
    p.add_argument("--jobs", type=int, default=1, help="variants and seeds trained at once, one process each")
    p.add_argument("--report", action="store_true", help="only rewrite the results from what is already done")
    p.add_argument("--verify", nargs="?", const="", default=None, metavar="RESULTS_JSON",
                   help="curate every variant again and compare with a recorded results.json (default: the one "
                        "beside the spec file, else OUT/results.json, whichever holds the spec's variants); exit 1 "
                        "when they differ")
    p.add_argument("--docs", default=None, metavar="MARKDOWN",
                   help="with --report: write the generated tables into this file between its "
                        "<!-- ablate:NAME --> markers, and results.json/.md and the plots beside it")
    p.add_argument("--deciles", default=None, metavar="TEXT:CLASSIFIER:MODELS",
                   help="bits per byte of TEXT's kept documents by decile of CLASSIFIER's score, under the final "
                        "checkpoints of MODELS (comma-separated variants); writes OUT/deciles.json and .md")
    p.add_argument("--no-progress", action="store_true", help="no progress bars for the evaluations (stderr)")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error(f"--jobs must be >= 1, got {args.jobs}")
    try:
        spec = load_spec(args.spec)
        if args.verify is not None:
            return _verify_command(spec, args)
        if args.deciles:
            return _deciles_command(spec, args.deciles)
        from train.ablate.report import collect, outputs, write, write_docs

        if args.report:
            results = collect(spec)
            write(spec, results)
        else:
            results = run(spec, args.only, args.jobs, progress=not args.no_progress)
        if args.docs:
            for f in write_docs(spec, results, Path(args.docs)):
                print(f"wrote {f}")
    except (FileNotFoundError, ValueError) as e:  # the user's input (UsageError is a ValueError): one line
        print(f"python -m train ablate: error: {e}", file=sys.stderr)
        return 2
    print((spec.out / "results.md").read_text(), end="")
    print(f"wrote {spec.out}/{', '.join(outputs(results))} ({len(results['variants'])} variants)")
    return 0


def _verify_command(spec: Spec, args) -> int:
    record = Path(args.verify) if args.verify else _own_record(spec, Path(args.spec))
    problems = verify(spec, record)
    for line in problems:
        print(f"ablate --verify: {line}")
    print(f"ablate --verify: {len(spec.variants)} variants against {record}: "
          + ("the record reproduces" if not problems else f"{len(problems)} differences"))
    return 1 if problems else 0


def _own_record(spec: Spec, spec_file: Path) -> Path:
    """The record --verify compares with when none is named: the results.json beside the spec file, else OUT's, the
    first whose variants are the spec's. Several specs share docs/ablation/, and a record of another spec's variants
    would only report that every variant differs."""
    names = [v["name"] for v in spec.variants]
    for record in (spec_file.parent / "results.json", spec.out / "results.json"):
        if record.is_file() and [v["name"] for v in json.loads(record.read_text())["variants"]] == names:
            return record
    raise ValueError(f"--verify: no results.json of this spec's variants ({', '.join(names)}) beside {spec_file} or in "
                     f"{spec.out}: name the record, e.g. --verify docs/NAME/results.json")


def _deciles_command(spec: Spec, arg: str) -> int:
    from train.ablate.deciles import deciles, markdown

    parts = arg.split(":")
    if len(parts) != 3:
        raise ValueError(f"--deciles {arg!r}: expected TEXT:CLASSIFIER:MODELS, e.g. dedup:quality:extract,dedup")
    result = deciles(spec, parts[0], parts[1], parts[2].split(","))
    (spec.out / "deciles.json").write_text(json.dumps(result, indent=1) + "\n")
    table = markdown(result)
    (spec.out / "deciles.md").write_text(table + "\n")
    print(table)
    return 0
