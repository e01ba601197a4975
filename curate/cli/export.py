"""curate export RUN --format hf|jsonl|parquet --out DIR: a curated run as a Hugging Face dataset folder.

The folder is what `huggingface-cli upload ORG/NAME DIR --repo-type dataset` publishes as it is (nothing is uploaded
from here): the run's documents under `data/` and a dataset card `README.md` whose YAML header tells the Hub's viewer
and `datasets.load_dataset(DIR)` where the files are, and whose text gives the pipeline, the funnel (documents and
characters in and out of every step, from the run's stats.json, with the reasons documents were dropped) and the
licence of each input where one was given (`--input-license`), else says it is unknown.

* `hf`: the run's Parquet shards named as the Hub names them (`data/train-00000-of-00002.parquet`);
* `parquet`: the shards under their own names;
* `jsonl`: one JSON object per document, gzipped (`data/train-00000-of-00002.jsonl.gz`), read a batch at a time.

Every shard is read once (page checksums verified), so a damaged run is one line naming the shard instead of a
damaged dataset on the Hub; each file is written under a temporary name and published whole, the card and
`export.json` last; the output is locked, and a second export of another run or format into it is refused in one line.
"""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import json
import os
from typing import Any

from curate.cli.common import add_overwrite
from curate.core.errors import UsageError
from curate.core.shown import for_markdown, for_yaml

FORMATS = ("hf", "parquet", "jsonl")
LAYOUT = ("export.json", "README.md", "data")
BLOCK = 1 << 22


def add_parser(sub):
    p = sub.add_parser("export", help="a curated run as a Hugging Face dataset folder (data files + dataset card)")
    p.add_argument("run", help="a finished `curate run` (or `curate mix`) output folder (local or URL)")
    p.add_argument("--format", choices=FORMATS, default="hf", help="hf (Parquet, Hub names), parquet, or jsonl")
    p.add_argument("--out", required=True, help="the dataset folder to write (then: huggingface-cli upload)")
    p.add_argument("--license", default="other", help="the card's licence (an SPDX id or the Hub's, e.g. odc-by)")
    p.add_argument("--input-license", action="append", default=[], metavar="GLOB=LICENCE",
                   help="the licence of the inputs matching GLOB, for the card (repeatable)")
    p.add_argument("--name", default=None, help="the dataset's name on the card (default: the pipeline's)")
    add_overwrite(p)
    return p


def main(args) -> int:
    info = export(args.run, args.out, args.format, license=args.license, input_licenses=args.input_license,
                  name=args.name, overwrite=args.overwrite)
    print(f"{info['documents']:,} documents in {len(info['files'])} file(s) under {args.out}/data; card "
          f"{args.out}/README.md\nupload with: huggingface-cli upload ORG/NAME {args.out} --repo-type dataset")
    return 0


def _licences(pairs: list[str]) -> list[tuple[str, str]]:
    out = []
    for pair in pairs:
        glob, sep, lic = pair.partition("=")
        if not sep or not glob or not lic:
            raise UsageError(f"--input-license {pair!r}: expected GLOB=LICENCE, e.g. '*/web_cc/*=ODC-By'")
        out.append((glob, lic))
    return out


def _run_files(run: str) -> tuple[dict, dict, list[str]]:
    """The run's manifest, its stats (empty for a mix), and its data shards; a folder that is not a finished output
    of ours is one line."""
    from curate.io import fs
    from curate.run.state import parse_json

    path = fs.join(run, "manifest.json")
    if not fs.isfile(path):
        raise UsageError(f"{run} has no manifest.json: not a finished `curate run` or `curate mix` output (rerun "
                         "that command to finish it)")
    manifest = parse_json(fs.read_bytes(path), path, "rerun the command that wrote it")
    stats_path = fs.join(run, "stats.json")
    stats = parse_json(fs.read_bytes(stats_path), stats_path, "rerun the command") if fs.isfile(stats_path) else {}
    files = sorted(f for f in fs.listdir(fs.join(run, "data")) if f.endswith(".parquet"))
    if not files:
        raise UsageError(f"{run}/data holds no Parquet shard: nothing to export")
    return manifest, stats, [fs.join(run, "data", f) for f in files]


def export(run: str, out: str, format: str = "hf", license: str = "other", input_licenses: list[str] | None = None,
           name: str | None = None, overwrite: bool = False) -> dict[str, Any]:
    """Write the dataset folder; returns what export.json records. Everything is checked before `out` is touched."""
    from curate.io import fs
    from curate.io.outputs import claim, locked
    from curate.io.writers import atomic_write_text
    from curate.tokens.common import check_outside

    if format not in FORMATS:
        raise UsageError(f"--format {format!r}: choose one of {', '.join(FORMATS)}")
    run, out = os.fspath(run), os.fspath(out)
    licences = _licences(input_licenses or [])
    manifest, stats, files = _run_files(run)
    check_outside(files, out)
    config = {"run": run, "format": format, "run_manifest_sha256":
              hashlib.sha256(fs.read_bytes(fs.join(run, "manifest.json"))).hexdigest()}
    marker = fs.join(out, "export.json")
    with locked(out, what="`curate export`"):
        if claim(out, what="`curate export`", option="--out", own=lambda: fs.isfile(marker), layout=LAYOUT,
                 overwrite=overwrite, marker="export.json"):
            old = json.loads(fs.read_bytes(marker))
            if {k: old.get(k) for k in config} != config:
                what = "another format" if old.get("format") != format else "another run (or the run was rerun)"
                raise UsageError(f"{out} holds an export of {what} ({old.get('run')}, {old.get('format')}): pass "
                                 "--overwrite to replace it, or use a new --out")
        else:  # the marker first: an interrupted export is this command's to redo, not a stranger's folder
            atomic_write_text(marker, json.dumps({**config, "complete": False}, indent=1))
        written, docs = _write_files(files, out, format)
        card = dataset_card(manifest, stats, written, format, license, licences, name, _per_input(run))
        atomic_write_text(fs.join(out, "README.md"), card)
        info = {**config, "complete": True, "files": written, "documents": docs}
        atomic_write_text(marker, json.dumps(info, indent=1))
        fs.remove_temp_files(out)
    return info


def _write_files(files: list[str], out: str, format: str) -> tuple[list[str], int]:
    from curate.io import fs
    from curate.io.state import DAMAGED_SHARD, reading
    from curate.tokens.common import unique_tmp

    n, written, docs = len(files), [], 0
    for i, src in enumerate(files):
        ext = "jsonl.gz" if format == "jsonl" else "parquet"
        name = fs.basename(src) if format == "parquet" else f"train-{i:05d}-of-{n:05d}.{ext}"
        dst = fs.join(out, "data", name)
        staged = fs.Staged(dst, tmp_name=unique_tmp(name))
        try:
            with reading(src, DAMAGED_SHARD):
                docs += _write_one(src, staged.tmp, format)
            staged.commit()
        except BaseException:
            staged.discard()
            raise
        written.append(f"data/{name}")
    return written, docs


def _write_one(src: str, tmp: str, format: str) -> int:
    """One shard into `tmp`: read a batch at a time (pages verified); copied byte for byte unless JSONL."""
    from curate.io import fs

    rows = 0
    with fs.parquet_file(src) as pf:
        batches = pf.iter_batches(batch_size=256)
        if format == "jsonl":
            with gzip.open(tmp, "wt", encoding="utf-8") as f:
                for b in batches:
                    for row in b.to_pylist():
                        f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
                    rows += b.num_rows
            return rows
        for b in batches:  # every page read once: a damaged shard fails here, not on the Hub
            rows += b.num_rows
    with fs.open(src, "rb") as f, open(tmp, "wb") as g:
        while block := f.read(BLOCK):
            g.write(block)
    return rows


def _funnel(stats: dict) -> list[str]:
    steps = stats.get("steps") or []
    if not steps:
        return ["(no stats.json: the folder is not a `curate run` output)"]
    lines = ["| step | documents in | documents out | kept | characters out | dropped (reason: documents) |",
             "|---|---:|---:|---:|---:|---|"]
    for s in steps:
        kept = s["docs_out"] / s["docs_in"] if s.get("docs_in") else 1.0
        why = ", ".join(f"{for_markdown(k)}: {v:,}" for k, v in sorted((s.get("dropped") or {}).items())) or "-"
        lines.append(f"| {for_markdown(s['name'])} | {s['docs_in']:,} | {s['docs_out']:,} | {kept:.1%} | {s.get('chars_out', 0):,} "
                     f"| {why} |")
    return lines


def _per_input(run: str) -> dict:
    """Records read and documents kept per input file (`curate.report.inputs`, as `curate stats --by-input`); empty
    for a mix, whose inputs are runs, not files read by a first stage."""
    from curate.report.inputs import by_input

    return by_input(run)["inputs"]


def dataset_card(manifest: dict, stats: dict, files: list[str], format: str, license: str,
                 licences: list[tuple[str, str]], name: str | None, per_input: dict | None = None) -> str:
    """The dataset card: the Hub's YAML header (licence, where the files are) and the curation's record, with what
    each input gave (records read, documents kept) beside its licence: who publishes it sees whose text it is."""
    pipeline = manifest.get("pipeline") if isinstance(manifest.get("pipeline"), dict) else {}
    title = name or pipeline.get("name") or manifest.get("kind") or "curated dataset"
    pattern = "data/*.jsonl.gz" if format == "jsonl" else "data/*.parquet"
    inputs = manifest.get("inputs") or []
    inputs = [i if isinstance(i, str) else i.get("path", str(i)) for i in inputs]
    rows, per_input = [], per_input or {}
    for path in inputs:
        lic = next((lic for glob, lic in licences if fnmatch.fnmatch(path, glob)), None)
        counts = per_input.get(path)
        read, kept = (f"{counts['records']:,}", f"{counts['kept']:,}") if counts else ("", "")
        rows.append(f"| {for_markdown(path, code=True)} | {read} | {kept} | "
                    f"{for_markdown(lic or 'unknown: check before publishing')} |")
    steps = "\n".join(f"{k + 1}. {for_markdown(s, code=True)}" for k, s in enumerate(pipeline.get("steps") or [])) or "(none recorded)"
    return "\n".join([
        "---", f"license: {for_yaml(license)}", f"pretty_name: {for_yaml(title)}", "configs:",
        f"- config_name: {for_yaml('default')}", "  data_files:", f"  - split: {for_yaml('train')}",
        f"    path: {for_yaml(pattern)}", "---", "",
        f"# {for_markdown(title)}", "",
        f"Curated with Peneira `curate run`: {manifest.get('docs_written', '?'):,} documents "
        f"kept of {manifest.get('docs_read', '?'):,} read, in {len(files)} file(s) ({format})."
        if isinstance(manifest.get("docs_written"), int) and isinstance(manifest.get("docs_read"), int)
        else f"Curated with Peneira; {len(files)} file(s) ({format}).", "",
        "## Pipeline", "", f"Reader: {for_markdown(pipeline.get('reader', '?'), code=True)}", "", steps, "",
        "## Funnel", "", *_funnel(stats), "",
        "## Inputs and their licences", "", "| input | records read | documents kept | licence |", "|---|---|---|---|",
        *(rows or ["| (none recorded) | | | |"]),
        "", "The licence above (`license:`) is the one given to `curate export`; each input's own terms still apply.",
        "", "## Files", "", *(f"* {for_markdown(f, code=True)}" for f in files), "",
        f"Versions: {json.dumps(manifest.get('versions', {}))}", "",
    ])
