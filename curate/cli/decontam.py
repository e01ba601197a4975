"""curate decontam index|report: build a benchmark n-gram index; report what a run found.

    curate decontam index --benchmark humaneval=HumanEval.jsonl.gz --benchmark mmlu=mmlu/ \\
                          --benchmark mine=file.jsonl:question,answer --out index/
    curate decontam report OUT
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator

from curate.cli.common import add_overwrite, add_progress
from curate.core.errors import UsageError
from curate.io import fs
from curate.io.fs import expand_inputs, is_url
from curate.io.models import local_copy
from curate.io.outputs import LOCK_NAME, claim, locked

INDEX_LAYOUT = ("index.json", "hashes.npy", "items.npy", "items.json")  # what build_index writes


def add_parser(sub):
    p = sub.add_parser("decontam", help="benchmark decontamination: build an n-gram index, report hits of a run")
    dsub = p.add_subparsers(dest="decontam_command", required=True)

    ix = dsub.add_parser("index", help="build an n-gram index over benchmark sets")
    ix.add_argument("--benchmark", action="append", required=True, metavar="NAME=PATH[:FIELDS]",
                    help="a benchmark file or directory (format recognised), or PATH:field1,field2 for any "
                         "JSONL/JSON/CSV/TSV/Parquet; repeat for each benchmark")
    ix.add_argument("--out", required=True, help="index directory to write (a local path or an fsspec URL)")
    ix.add_argument("--n", type=int, default=13, help="words per n-gram (default 13)")
    ix.add_argument("--min-words", type=int, default=8,
                    help="segments shorter than n but at least this long are indexed whole (default 8)")
    ix.add_argument("--corpus-sample", action="append", metavar="GLOB",
                    help="JSONL/Parquet/text files from the corpus, for the frequency cap")
    ix.add_argument("--max-doc-freq", type=int, default=None,
                    help="drop index n-grams found in more than this many sample documents")
    ix.add_argument("--text-key", default="text", help="text field of the corpus sample (default text)")
    add_overwrite(ix)
    add_progress(ix)

    rp = dsub.add_parser("report", help="per benchmark: items hit / total, documents, examples")
    rp.add_argument("output", help="a run's output directory")
    rp.add_argument("--examples", type=int, default=3, help="matched spans to show per benchmark")
    rp.add_argument("--docs", type=int, default=5, help="documents to list per benchmark")
    rp.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def _parse_benchmarks(specs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--benchmark {spec!r}: expected NAME=PATH or NAME=PATH:field1,field2")
        if name in out:
            raise UsageError(f"--benchmark {name!r} given twice")
        out[name] = path
    return out


def _local_spec(spec: str) -> str:
    """A benchmark given as an fsspec URL (`s3://b/mmlu.csv`, `s3://b/x.jsonl:question,answer`) is read
    from a local copy of the file (the loaders recognise formats by file name, which the copy keeps)."""
    if not is_url(spec):
        return spec
    url, sep, fields = spec.rpartition(":")
    if not sep or "/" in fields:  # the colon was the scheme's: no field list
        url, fields = spec, ""
    return local_copy(url) + (f":{fields}" if fields else "")


def _sample_texts(paths: list[str], text_key: str) -> Iterator[str]:
    from curate.core.stats import StepStats
    from curate.io import readers

    for path in paths:
        if path.endswith(".parquet"):
            docs = readers.Parquet(text_key=text_key).read(path, StepStats("sample"))
        elif ".jsonl" in path or ".json" in path:
            docs = readers.Jsonl(text_key=text_key).read(path, StepStats("sample"))
        else:
            with fs.open(path, "r", encoding="utf-8", errors="replace") as f:
                yield f.read()
            continue
        for d in docs:
            yield d.text


def _index_names(out: str) -> set[str]:
    """The names in an index folder, less the lock and the temporary files of an interrupted build."""
    return {n for n in fs.listdir(out) if n != LOCK_NAME and not fs.TEMP_NAME.fullmatch(n)}


_SCALE_NOTE = "n and --min-words in English words; Han, kana, Thai, Lao, Khmer, Burmese letters scaled, curate.lang.scale"


def _index(args) -> int:
    """Everything the user gave is checked and every benchmark loaded before the output is touched: a bad
    --benchmark never costs the index that is there. From the claim to the last file the folder is locked."""
    from curate.decontam import BenchmarkError, build_index, load_benchmark
    from curate.decontam.index import check_indexable, check_params

    if (args.corpus_sample is None) != (args.max_doc_freq is None):
        raise UsageError("the frequency cap needs both --corpus-sample and --max-doc-freq")
    check_params(args.n, args.min_words)
    benchmarks = {}
    for name, spec in _parse_benchmarks(args.benchmark).items():
        try:
            benchmarks[name] = (spec, load_benchmark(_local_spec(spec)))
        except BenchmarkError as e:
            raise UsageError(f"--benchmark {name}: {e}") from None
        except FileNotFoundError:
            raise UsageError(f"--benchmark {name}: {spec} does not exist") from None
    sample = _sample_texts(expand_inputs(args.corpus_sample), args.text_key) if args.corpus_sample else None
    for name, (spec, items) in benchmarks.items():  # checked before the output is touched, as is the sample
        check_indexable(name, spec, items, args.min_words)
    if sample is not None:
        first = next(sample, None)
        if first is None:
            raise UsageError(f"--corpus-sample {' '.join(args.corpus_sample)}: no documents with a {args.text_key!r} "
                             "field, so the frequency cap would count nothing; name the text field with --text-key")
        sample = itertools.chain([first], sample)
    what = "`curate decontam index`"
    with locked(args.out, what=what):
        claim(args.out, what=what, option="--out", layout=INDEX_LAYOUT, overwrite=args.overwrite,
              own=lambda: _index_names(args.out) <= set(INDEX_LAYOUT))  # an earlier index is rebuilt in place
        meta = build_index(benchmarks, args.out, n=args.n, min_words=args.min_words, corpus_sample=sample,
                           max_doc_freq=args.max_doc_freq, progress=args.progress)
    print(f"{'benchmark':<24}{'items':>9}{'indexed':>9}{'n-grams':>12}")
    for name, b in meta["benchmarks"].items():
        print(f"{name:<24}{b['items']:>9,}{b['indexed_items']:>9,}{b['ngrams']:>12,}")
    print(f"\nper item language (by script: {_SCALE_NOTE}); also in {args.out}/index.json")
    print(f"{'benchmark':<24}{'language':<10}{'items':>9}{'indexed':>9}{'too short':>11}")
    for name, b in meta["benchmarks"].items():
        for lang, c in b["languages"].items():
            print(f"{name:<24}{lang:<10}{c['items']:>9,}{c['indexed']:>9,}{c['too_short']:>11,}")
    cap = meta["frequency_cap"]
    if cap:
        print(f"frequency cap: {cap['removed_ngrams']:,} n-grams in > {cap['max_doc_freq']} of "
              f"{cap['sample_docs']:,} sample documents removed")
    print(f"{meta['entries']:,} entries (n={meta['n']}, min_words={meta['min_words']}) written to {args.out} "
          f"in {meta['build_seconds']:.1f}s")
    return 0


def main(args) -> int:
    if args.decontam_command == "index":
        return _index(args)
    from curate.decontam.report import build_report, format_report

    rep = build_report(args.output, examples=args.examples)
    print(json.dumps(rep, indent=1) if args.json else format_report(rep, docs=args.docs))
    return 0
