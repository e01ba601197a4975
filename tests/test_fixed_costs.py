"""Issue 45: what a run pays before its first record. A local pool is not started for a stage of one task (its
forkserver and worker would import the framework and set the steps up again: more than a small file's work)."""

from __future__ import annotations

import json

from curate import Pipeline, readers, writers
from curate.run.executors.local import LocalExecutor


class Counting(LocalExecutor):
    """Counts the pools it starts."""
    started = 0

    def _started_pool(self, *args, **kw):
        if self._pool is None:
            self.started += 1
        return super()._started_pool(*args, **kw)


def _pipeline() -> Pipeline:
    return Pipeline(name="one", reader=readers.Jsonl(source="t"), steps=[lambda d: len(d.text) > 40],
                    writer=writers.Parquet())


def test_a_stage_of_one_task_starts_no_pool(tmp_path):
    """One input with workers=2: no pool, the same shards byte for byte as with one worker (the reference); two
    inputs: the pool starts (the check can fail)."""
    for k in range(2):
        (tmp_path / f"in{k}.jsonl").write_text("".join(json.dumps({"id": f"{k}-{i}", "text": f"doc {i} " * (i + 1)})
                                                       + "\n" for i in range(30)))
    one = tmp_path / "in0.jsonl"
    with Counting(2, progress=False) as ex:
        _pipeline().run(inputs=str(one), output=str(tmp_path / "two"), executor=ex, progress=False)
    assert ex.started == 0
    _pipeline().run(inputs=str(one), output=str(tmp_path / "ref"), workers=1, progress=False)
    shards = sorted(p.name for p in (tmp_path / "ref" / "data").glob("*.parquet"))
    assert shards == sorted(p.name for p in (tmp_path / "two" / "data").glob("*.parquet"))
    for name in shards:
        assert (tmp_path / "two" / "data" / name).read_bytes() == (tmp_path / "ref" / "data" / name).read_bytes()
    with Counting(2, progress=False) as ex:
        _pipeline().run(inputs=[str(one), str(tmp_path / "in1.jsonl")], output=str(tmp_path / "both"), executor=ex,
                        progress=False)
    assert ex.started == 1
