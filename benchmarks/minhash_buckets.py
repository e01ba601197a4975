"""MinHash `buckets` phase against the corpus size, with shards and partitions growing with it.

    .venv/bin/python benchmarks/minhash_buckets.py 50000 32 8     # documents, input files, partitions
    .venv/bin/python benchmarks/minhash_buckets.py 100000 64 16
    PYTHONPATH=/tmp/base .venv/bin/python benchmarks/minhash_buckets.py ...   # a baseline checkout

`benchmarks/minhash.py` keeps 8 files and the default partitions (one below 16 M rows), where the
buckets phase's per-shard costs do not show; here both grow with the corpus, as at scale (about
150,000 documents per partition there, fewer here to keep it short). Runs `dedup.MinHash` alone on
`LocalExecutor(2)` over documents generated as in `benchmarks/minhash.py` and prints the module
used, each phase's seconds and the candidate / verified pair and cluster counts (equal across
versions when results are identical).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import minhash as bench  # noqa: E402  (the generator of benchmarks/minhash.py)


def main() -> None:
    import curate.dedup.minhash as module
    from curate import Pipeline, dedup, readers
    from curate.run.executors.local import LocalExecutor

    docs, files, parts = (int(a) for a in sys.argv[1:4])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "in").mkdir()
        bench.generate(bench.load_web(), docs, root / "in", files)
        Pipeline(name="buckets", reader=readers.Jsonl(), steps=[dedup.MinHash(partitions=parts)]).run(
            inputs=sorted(str(p) for p in (root / "in").glob("*.jsonl")), output=str(root / "out"),
            executor=LocalExecutor(2, progress=False), progress=False)
        extra = json.loads((root / "out" / "stats.json").read_text())["steps"][-1]["extra"]
    print(module.__file__, f"{docs} docs, {files} files, {parts} partitions:", extra["seconds"],
          f"candidates {extra['candidate_pairs']}, verified {extra['verified_pairs']}, clusters {extra.get('clusters')}")


if __name__ == "__main__":
    main()
