"""RayExecutor on a real local Ray cluster (2 CPUs): same outputs as local, retries, failure reports.

Functions and steps defined here reach Ray workers by reference, so the workers get this directory
on PYTHONPATH through the runtime environment.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate import Pipeline, Step, extract, readers, writers
from curate.core.errors import StepFailed
from curate.run.executors.base import TaskFailures
from curate.run.executors.local import LocalExecutor

ray = pytest.importorskip("ray")
from curate.run.executors.ray import RayExecutor  # noqa: E402

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module", autouse=True)
def ray_cluster():
    tests_dir = str(Path(__file__).resolve().parent)
    ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": tests_dir}})
    yield
    ray.shutdown()


# ---------------------------------------------------------------- helpers that run on workers


class DieOnce(Step):
    """Kills its worker process (no cleanup, like an OOM kill) at the `after`-th document, once per marker."""

    name = "die_once"

    def __init__(self, marker: str, after: int):
        self.marker, self.after = marker, after

    def setup(self) -> None:
        self.seen = 0

    def apply(self, doc):
        self.seen += 1
        if self.seen == self.after:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return doc
            os._exit(1)
        return doc


def flaky(item: tuple[str, str, int]) -> str:
    """Log the attempt, then fail the first `fails` attempts of this item (`fails` < 0: always)."""
    log_dir, name, fails = item
    with open(os.path.join(log_dir, name), "a") as f:
        f.write("x")
    attempts = len(Path(log_dir, name).read_text())
    if name == "verdict":
        raise StepFailed("step 'x' failed on all 10 documents")
    if fails < 0 or attempts <= fails:
        raise OSError(f"transient failure of {name}")
    return name


# ---------------------------------------------------------------- comparisons


def documents(out: Path) -> dict[str, list]:
    """Shard name -> [(id, text), …] in file order."""
    return {
        p.name: list(zip(*pq.read_table(p, columns=["id", "text"]).to_pydict().values(), strict=True))
        for p in sorted((out / "data").glob("*.parquet"))
    }


def counts(out: Path) -> list[dict]:
    """stats.json without timings (a step's own and its phases'), which differ from run to run."""
    steps = json.loads((out / "stats.json").read_text())["steps"]
    for s in steps:
        s.pop("seconds")
        s["extra"].pop("seconds", None)
        s["extra"].pop("cpu_seconds", None)  # dedup.Substrings' phases' CPU time
    return steps


def assert_same_run(a: Path, b: Path) -> None:
    docs_a, docs_b = documents(a), documents(b)
    assert docs_a and docs_a == docs_b
    ids = [i for rows in docs_a.values() for i, _ in rows]
    assert len(ids) == len(set(ids))
    for name in docs_a:  # same bytes, not just the same rows
        assert (a / "data" / name).read_bytes() == (b / "data" / name).read_bytes()
    assert counts(a) == counts(b)
    assert sorted(os.listdir(a / "_done")) == sorted(os.listdir(b / "_done"))
    assert not [p for p in (b / "data").iterdir() if p.name.startswith(".")], "temp files left behind"
    phases_a, phases_b = (sorted(p.relative_to(r) for p in (r / "_work").glob("*/_phases/*/*")) for r in (a, b))
    assert phases_a == phases_b  # global steps' phase markers too


# ---------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def extract_runs(shared, tmp_path_factory) -> tuple[Path, Path, int]:
    """The extract_only pipeline over every real WARC file, once on each executor."""
    warcs = sorted(str(p) for p in (shared / "warc").rglob("*.warc.gz"))
    root = tmp_path_factory.mktemp("extract")
    pipeline = Pipeline(
        name="extract_only",
        reader=readers.Warc(source="web"),
        steps=[extract.Trafilatura()],  # budgets on work, not a clock: a loaded CI box does not change the result
        writer=writers.Parquet(),
    )
    pipeline.run(warcs, str(root / "local"), executor=LocalExecutor(1, progress=False))
    pipeline.run(warcs, str(root / "ray"), executor=RayExecutor(progress=True))
    return root / "local", root / "ray", len(warcs)


def test_extract_pipeline_same_on_local_and_ray(extract_runs):
    local, ray_out, n_inputs = extract_runs
    assert_same_run(local, ray_out)
    assert len(os.listdir(ray_out / "_done")) == n_inputs == 8
    manifest = json.loads((ray_out / "manifest.json").read_text())
    assert manifest["docs_written"] == sum(len(v) for v in documents(ray_out).values()) > 200


def test_tokenize_same_on_local_and_ray(extract_runs, tmp_path):
    from curate.tokens.tokenize import tokenize, train_tokenizer

    shards = sorted(str(p) for p in (extract_runs[1] / "data").glob("*.parquet"))
    tok = tmp_path / "tok.json"
    train_tokenizer(shards, 512, tok, sample_chars=200_000)
    runs = {}
    for name, ex in (("local", LocalExecutor(1, progress=False)), ("ray", RayExecutor(progress=False))):
        runs[name] = tokenize(shards, tok, tmp_path / name, val_fraction=0.1, executor=ex)
    assert runs["local"]["splits"] == runs["ray"]["splits"]
    files = sorted(p.relative_to(tmp_path / "local") for p in (tmp_path / "local").glob("[tv]*/part-*"))  # bin, idx
    assert len(files) > len(shards)  # train and val shards
    for f in files:
        assert (tmp_path / "local" / f).read_bytes() == (tmp_path / "ray" / f).read_bytes()


def test_dedup_same_on_local_and_ray(extract_runs, tmp_path):
    """Exact and MinHash phases (hash, group, signatures, buckets, cluster, filter) run as Ray tasks."""
    from curate import dedup

    shards = sorted(str(p) for p in (extract_runs[0] / "data").glob("*.parquet"))
    pipeline = Pipeline(name="dedup", reader=readers.Parquet(), steps=[dedup.Exact(), dedup.MinHash(partitions=2)])
    pipeline.run(shards, str(tmp_path / "local"), executor=LocalExecutor(1, progress=False))
    pipeline.run(shards, str(tmp_path / "ray"), executor=RayExecutor(progress=False))
    assert_same_run(tmp_path / "local", tmp_path / "ray")
    steps = {s["name"]: s for s in counts(tmp_path / "ray")}
    assert steps["exact"]["dropped"] and steps["minhash"]["dropped"]  # real duplicates in the crawl were removed
    assert len(list((tmp_path / "ray" / "_work").glob("*/_phases/buckets/*"))) == 14 * 2


class Placed(RayExecutor):
    """A RayExecutor that records the Ray options of every map it runs (what each task asked of the cluster)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.options: list[dict] = []

    def task_options(self, resources=None):
        self.options.append(super().task_options(resources))
        return self.options[-1]


def test_substrings_and_importance_same_on_local_and_ray(shared, extract_runs, tmp_path):
    """dedup.Substrings' phases (text, pairs of parts, rewrite, top), then quality.Importance's (target, count,
    weigh, select, filter) as Ray tasks: the same documents, spans and sample; no task asks Ray for a GPU."""
    from curate import dedup, quality

    shards = sorted(str(p) for p in (extract_runs[0] / "data").glob("*.parquet"))
    target = str(shared / "text" / "clean_en" / "botchan_gutenberg8868.txt")
    steps = [dedup.Substrings(min_length=100, part_bytes=400_000, method="suffix"), quality.Importance(target, fraction=0.5)]
    pipeline = Pipeline(name="substrings", reader=readers.Parquet(), steps=steps)
    pipeline.run(shards, str(tmp_path / "local"), executor=LocalExecutor(1, progress=False))
    ex = Placed(progress=False)
    pipeline.run(shards, str(tmp_path / "ray"), executor=ex)
    assert_same_run(tmp_path / "local", tmp_path / "ray")
    st = {s["name"]: s for s in counts(tmp_path / "ray")}
    assert st["substrings"]["extra"]["parts"] >= 2 and st["substrings"]["extra"]["chars_struck"] > 0
    assert 0 < st["importance"]["docs_out"] < st["importance"]["docs_in"] and st["importance"]["extra"]["threshold"]["passes"]
    assert len(ex.options) >= 9 and not [o for o in ex.options if o.get("num_gpus")]  # every phase, none on a GPU


def trigram_embedding(doc):
    """A bag of hashed character trigrams (256 dims) in `emb`: an embedding every process computes alike."""
    import zlib

    v = [0.0] * 256
    t = doc.text.lower()
    for i in range(len(t) - 2):
        v[zlib.crc32(t[i:i + 3].encode()) % 256] += 1.0
    doc.extra["emb"] = v
    return doc


def test_semantic_same_on_local_and_ray(extract_runs, tmp_path):
    """dedup.Semantic's phases (embed, kmeans, assign, pairs, filter) as Ray tasks: the same documents and groups."""
    from curate import dedup

    shards = sorted(str(p) for p in (extract_runs[0] / "data").glob("*.parquet"))
    step = dedup.Semantic(embeddings_column="emb", eps=0.01, clusters=4, partitions=2)
    pipeline = Pipeline(name="semantic", reader=readers.Parquet(), steps=[trigram_embedding, step])
    pipeline.run(shards, str(tmp_path / "local"), executor=LocalExecutor(1, progress=False))
    pipeline.run(shards, str(tmp_path / "ray"), executor=RayExecutor(progress=False))
    assert_same_run(tmp_path / "local", tmp_path / "ray")
    st = {s["name"]: s for s in counts(tmp_path / "ray")}["semantic"]
    assert st["dropped"]["semantic:duplicate"] > 0 and st["extra"]["pair_tasks"] == 2


def test_killed_worker_is_retried_without_loss_or_duplicates(shared, tmp_path):
    warcs = sorted(str(p) for p in (shared / "warc" / "wget").glob("*.warc.gz"))

    def pipeline(marker: Path) -> Pipeline:
        return Pipeline(
            name="die",
            reader=readers.Warc(source="web"),
            steps=[DieOnce(str(marker), after=10), extract.Trafilatura()],
            writer=writers.Parquet(row_group_docs=4),  # so a partial temp shard is on disk when the worker dies
        )

    spent = tmp_path / "spent"
    spent.touch()  # the local reference run never dies
    pipeline(spent).run(warcs, str(tmp_path / "local"), executor=LocalExecutor(1, progress=False))
    marker = tmp_path / "marker"
    pipeline(marker).run(warcs, str(tmp_path / "ray"), executor=RayExecutor(progress=False, max_retries=2))
    assert marker.exists(), "no worker was killed: the test proves nothing"
    assert_same_run(tmp_path / "local", tmp_path / "ray")


def test_raising_task_is_retried_then_reported(tmp_path):
    items = [(str(tmp_path), "ok", 0), (str(tmp_path), "flaky", 1), (str(tmp_path), "broken", -1),
             (str(tmp_path), "verdict", 0)]
    ex = RayExecutor(progress=False, max_retries=2)
    with pytest.raises(TaskFailures) as info:
        ex.map(flaky, items, labels=[name for _, name, _ in items])
    errors = {e.label: e for e in info.value.errors}
    assert sorted(errors) == ["broken", "verdict"]
    assert errors["broken"].error == "OSError: transient failure of broken (after 3 attempts)"
    assert "Traceback" in errors["broken"].detail
    assert errors["verdict"].error.startswith("StepFailed")
    attempts = {name: len((tmp_path / name).read_text()) for _, name, _ in items}
    assert attempts == {"ok": 1, "flaky": 2, "broken": 3, "verdict": 1}  # a verdict on the data is not retried
    assert "2 of 4 task(s) failed" in str(info.value)


def test_results_in_order_and_no_retry_of_exceptions_when_disabled(tmp_path):
    items = [(str(tmp_path), f"i{k}", 0) for k in range(6)] + [(str(tmp_path), "once", 1)]
    assert RayExecutor(workers=2, progress=False).map(flaky, items[:6]) == [f"i{k}" for k in range(6)]
    with pytest.raises(TaskFailures) as info:
        RayExecutor(progress=False, retry_exceptions=False).map(flaky, items[6:], labels=["once"])
    assert info.value.errors[0].error == "OSError: transient failure of once"
