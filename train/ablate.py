"""`python -m train ablate --spec FILE`: which curation makes the better model, one variable at a time.

One raw input (any number of files, each kind read by its own reader), several pipeline variants. Each variant's
output is mixed to the same token budget (`curate mix`, counted with the shared tokenizer), tokenized with ONE
tokenizer (trained once, on the output of the first variant, normally extraction only: the raw text, and kept
from then on), trained with
the same config and seed, and evaluated with `train eval` on the same held-out sets and tasks. Held-out bits per
byte is measured at `eval_points` points during training (the run is stopped there with `stop_at`, evaluated, and
resumed bit for bit), the tasks at the end. Everything lands under `out`:

    tokenizer.json                 the shared tokenizer
    variants/NAME/curated/         the pipeline's output      variants/NAME/mix/     the budgeted mix
    variants/NAME/tokens/          token shards               variants/NAME/seedK/   run, curve.jsonl, eval.json
    results.json, results.md, curves.png, tasks.png

Resumable: every stage directory has a record beside it (`.NAME.ablate.json`) with a key made of everything its content depends on (the
pipeline file's text, the inputs, the budget, the tokenizer, the training config, ...). A stage whose key matches
and that finished is skipped, a matching unfinished one is resumed (training continues from its last checkpoint;
an unfinished curation starts over), and one whose key changed is deleted and redone, with everything after it. A variant already trained is
not retrained; adding a variant or a seed runs only what is new. The spec format is in docs/ablation.md.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from curate.core.stats import StepStats
from curate.io import readers
from curate.io.readers import Reader

READERS = {"warc": readers.Warc, "fastwarc": readers.FastWarc, "jsonl": readers.Jsonl, "parquet": readers.Parquet}


@dataclass
class Spec:
    out: Path
    inputs: list[dict]  # {name, path, reader}
    variants: list[dict]  # {name, pipeline, seeds?, env?}
    tokens: str = "1M"
    max_epochs: float = 100.0
    vocab_size: int = 4096
    tokenizer_chars: float = 2e7
    mix_seed: int = 0
    workers: int = 1
    threads: int = 0  # torch intra-op threads; 0 = torch's default
    train: dict[str, Any] = field(default_factory=dict)  # config = NAME or FILE, seeds, eval_points, any trainer key
    eval: dict[str, Any] = field(default_factory=dict)  # heldout, max_bytes, max_docs, icl_dir, tasks, limit, ...


def load_spec(path: str | Path) -> Spec:
    """The TOML spec; relative paths inside it are relative to the current directory, as on the command line."""
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    known = set(Spec.__dataclass_fields__)
    unknown = set(raw) - known - {"input", "variant"}
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)} (known: {sorted(known)})")
    inputs, variants = raw.pop("input", []), raw.pop("variant", [])
    if not inputs or not variants:
        raise ValueError(f"{path}: needs at least one [[input]] and one [[variant]]")
    for i in inputs:
        if i.get("reader", "warc") not in READERS or not {"name", "path"} <= i.keys():
            raise ValueError(f"{path}: an [[input]] needs name, path and a reader in {sorted(READERS)}: {i}")
    names = [v.get("name") for v in variants]
    if len(set(names)) != len(names) or not all(names) or not all("pipeline" in v for v in variants):
        raise ValueError(f"{path}: every [[variant]] needs a unique name and a pipeline file: {names}")
    return Spec(out=Path(raw.pop("out", "runs/ablation")), inputs=inputs, variants=variants, **raw)


# ---------------------------------------------------------------------------------------------- stages


def digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def mark_file(path: Path) -> Path:
    """A stage's record sits beside its directory, so the directory holds only what the stage's tool wrote there
    (`curate mix` refuses an output directory with foreign files in it)."""
    return path.parent / f".{path.name}.ablate.json"


def stage_state(path: Path, key: str) -> str:
    """'done', 'partial' (same key, unfinished: resume it) or 'new' (missing, or made from other inputs: redone)."""
    record_file = mark_file(path)
    if record_file.is_file():
        record = json.loads(record_file.read_text())
        if record["key"] == key:
            return "done" if record["done"] else "partial"
        record_file.unlink()
    if path.exists():
        shutil.rmtree(path)
    return "new"


def mark(path: Path, key: str, done: bool, **info: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = mark_file(path).with_suffix(".tmp")
    tmp.write_text(json.dumps({"key": key, "done": done, **info}, indent=1))
    tmp.replace(mark_file(path))


class InputReader(Reader):
    """Reads each raw input file with the reader of the [[input]] it belongs to, so one run (and one dedup) covers
    WARC and text inputs together; documents keep their input's name as source."""

    def __init__(self, routes: dict[str, Reader]):
        super().__init__("ablation")
        self.routes = routes  # file -> reader

    def read(self, path: str, stats: StepStats):
        return self.routes[path].read(path, stats)


@contextlib.contextmanager
def environment(env: dict[str, str]):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update({k: str(v) for k, v in env.items()})
    try:
        yield
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def input_routes(spec: Spec) -> dict[str, Reader]:
    from curate.io.fs import expand_inputs

    routes: dict[str, Reader] = {}
    for i in spec.inputs:
        reader = READERS[i.get("reader", "warc")](source=i["name"])
        for f in expand_inputs(i["path"]):
            routes.setdefault(f, reader)
    return routes


def curate_variant(spec: Spec, variant: dict, routes: dict[str, Reader]) -> str:
    """Run the variant's pipeline over the raw input into variants/NAME/curated; returns the stage key."""
    from curate.cli.run import load_pipeline
    from curate.run.pipeline import Pipeline

    out = spec.out / "variants" / variant["name"] / "curated"
    text = Path(variant["pipeline"]).read_text()
    key = digest("curate", text, variant.get("env", {}), sorted(routes), [str(r) for r in routes.values()])
    state = stage_state(out, key)
    if state == "done":
        return key
    if state == "partial":  # started over: the run it left may be from another version of the library's steps
        shutil.rmtree(out, ignore_errors=True)
    mark(out, key, False)
    with environment(variant.get("env", {})):
        p = load_pipeline(variant["pipeline"])
    pipeline = Pipeline(name=variant["name"], reader=InputReader(routes), steps=p.steps, writer=p.writer)
    print(f"ablate: curating {variant['name']} with {variant['pipeline']}", flush=True)
    m = pipeline.run(inputs=list(routes), output=str(out), workers=spec.workers, progress=False)
    mark(out, key, True, docs_read=m["docs_read"], docs_written=m["docs_written"], chars_written=m["chars_written"])
    return key


def shared_tokenizer(spec: Spec) -> tuple[Path, str]:
    """Trained once, on the first variant's output, and then kept while vocab_size and tokenizer_chars stay the same,
    even if that output changes later: any tokenizer serves the comparison as long as every variant shares it, and a
    new one would retrain every variant. Delete OUT/tokenizer to train it again."""
    from curate.tokens.tokenize import train_tokenizer

    out = spec.out / "tokenizer"
    path = out / "tokenizer.json"
    settings = {"vocab_size": spec.vocab_size, "tokenizer_chars": spec.tokenizer_chars}
    record = json.loads(mark_file(out).read_text()) if mark_file(out).is_file() else {}
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


def mix_and_tokenize(spec: Spec, variant: dict, curated_key: str, tok: Path, tok_key: str) -> str:
    from curate.run.executors.local import LocalExecutor
    from curate.tokens.mix import mix, parse_count
    from curate.tokens.tokenize import tokenize

    base = spec.out / "variants" / variant["name"]
    key = digest("mix", curated_key, tok_key, spec.tokens, spec.max_epochs, spec.mix_seed)
    if stage_state(base / "mix", key) != "done":
        mark(base / "mix", key, False)
        m = mix({variant["name"]: (str(base / "curated"), 1.0)}, parse_count(spec.tokens), base / "mix",
                max_epochs=spec.max_epochs, seed=spec.mix_seed, tokenizer=str(tok),
                executor=LocalExecutor(spec.workers, progress=False))
        s = m["plan"]["sources"][variant["name"]]
        mark(base / "mix", key, True, planned_tokens=m["plan"]["planned_tokens"],
             tokens=m["actual"][variant["name"]]["tokens"], available_tokens=s["available_tokens"],
             epochs=s["epochs"], limited=s["limited_by_max_epochs"])
    tkey = digest("tokens", key)
    if stage_state(base / "tokens", tkey) != "done":
        mark(base / "tokens", tkey, False)
        tokenize(str(base / "mix"), str(tok), str(base / "tokens"), val_fraction=0.0,
                 executor=LocalExecutor(spec.workers, progress=False))
        mark(base / "tokens", tkey, True)
    return tkey


# ---------------------------------------------------------------------------------------------- training


def eval_plan(spec: Spec):
    from train.evaluate import EvalPlan
    from train.evaluate.heldout import parse_set
    from train.evaluate.icl import load_task, parse_spec

    e = spec.eval
    max_bytes = int(e["max_bytes"]) if e.get("max_bytes") else None
    plan = EvalPlan(heldout=[parse_set(s, e.get("max_docs"), max_bytes) for s in e.get("heldout", [])],
                    limit=e.get("limit"), seed=e.get("shot_seed", 1234), batch_size=e.get("batch_size", 32))
    for t in e.get("tasks", []):
        name, path, shots = parse_spec(t, e.get("icl_dir"), e.get("shots", [0]))
        plan.tasks.append((load_task(name, path), shots))
    if not plan.heldout:
        raise ValueError("the spec's [eval] needs at least one heldout set")
    return plan


def seeds_of(spec: Spec, variant: dict) -> list[int]:
    return list(variant.get("seeds", spec.train.get("seeds", [0])))


def train_config(spec: Spec, data: Path, out: Path, seed: int, stop_at: int = 0):
    from train.config import load_config

    keys = {k: v for k, v in spec.train.items() if k not in ("config", "seeds", "eval_points")}
    return load_config(spec.train.get("config"), {**keys, "data": str(data), "out": str(out), "seed": seed,
                                                  "stop_at": stop_at, "progress": False})


def train_and_evaluate(spec: Spec, variant: dict, seed: int, tokens_key: str, plan) -> None:
    """Train in segments, evaluating held-out bits per byte after each; the tasks after the last.

    The run's key is its data and training config only: a changed [eval] re-evaluates the final checkpoint without
    retraining (the curve's earlier points keep the sets they were measured on)."""
    from dataclasses import replace

    from train.evaluate import evaluate
    from train.loop import train

    base = spec.out / "variants" / variant["name"]
    out = base / f"seed{seed}"
    cfg = train_config(spec, base / "tokens", out, seed)
    n = spec.train.get("eval_points", 4)
    key = digest("train", tokens_key, {k: v for k, v in cfg.to_dict().items() if k not in ("out", "stop_at")}, n)
    ekey = digest("eval", [(h.name, h.path, h.max_docs, h.max_bytes) for h in plan.heldout],
                  [(t.name, t.path, s) for t, s in plan.tasks], plan.limit, plan.seed)
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
        print(f"ablate: {variant['name']} seed {seed}: training to step {p} of {cfg.steps}", flush=True)
        result = train(train_config(spec, base / "tokens", out, seed, stop_at=p), resume=True)
        if result.diverged:
            raise RuntimeError(f"{variant['name']} seed {seed}: {result.diverged}")
        final = p == points[-1]
        r = evaluate(out, plan if final else replace(plan, tasks=[]))
        curve = [c for c in curve if c["step"] != r["step"]] + [
            {"step": r["step"], "tokens": r["tokens"], "heldout": {h["set"]: h["bits_per_byte"] for h in r["heldout"]}}]
        curve_path.write_text("".join(json.dumps(c) + "\n" for c in curve))
        if final:
            final_eval.write_text(json.dumps({**r, "eval_key": ekey}, indent=1) + "\n")
    mark(out, key, True)


# ---------------------------------------------------------------------------------------------- command


def run(spec: Spec, only: list[str] | None = None) -> dict:
    import torch

    from train.ablate_report import collect, write

    if spec.threads:
        torch.set_num_threads(spec.threads)
    spec.out.mkdir(parents=True, exist_ok=True)
    plan = eval_plan(spec)  # fails early on a bad held-out set or task, before hours of curation
    routes = input_routes(spec)
    keys = {}
    for v in spec.variants:  # the first variant is curated even under --only: the tokenizer is trained on it
        if not only or v["name"] in only or v is spec.variants[0]:
            keys[v["name"]] = curate_variant(spec, v, routes)
    tok, tok_key = shared_tokenizer(spec)
    for v in spec.variants:
        if v["name"] not in keys or (only and v["name"] not in only):
            continue
        tkey = mix_and_tokenize(spec, v, keys[v["name"]], tok, tok_key)
        for seed in seeds_of(spec, v):
            train_and_evaluate(spec, v, seed, tkey, plan)
            write(spec, collect(spec))  # partial results are readable while the rest trains
    results = collect(spec)
    write(spec, results)
    return results


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m train ablate", description=__doc__.split("\n\n")[0])
    p.add_argument("--spec", required=True, help="the ablation's TOML file (docs/ablation.md)")
    p.add_argument("--only", action="append", default=None, metavar="VARIANT", help="run only these variants")
    p.add_argument("--report", action="store_true", help="only rewrite the results from what is already done")
    args = p.parse_args(argv)
    try:
        spec = load_spec(args.spec)
        if args.report:
            from train.ablate_report import collect, write

            results = collect(spec)
            write(spec, results)
        else:
            results = run(spec, args.only)
    except (FileNotFoundError, ValueError) as e:  # the user's input (UsageError is a ValueError): one line
        print(f"python -m train ablate: error: {e}", file=sys.stderr)
        return 2
    print((spec.out / "results.md").read_text(), end="")
    print(f"wrote {spec.out}/results.json, results.md, curves.png, tasks.png ({len(results['variants'])} variants)")
    return 0
