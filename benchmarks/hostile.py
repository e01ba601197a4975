"""Hostile input to the readers (issue 22): time and peak memory of each reader on files of a few KB or MB.

Each file is built here: a WARC whose page is a 4 GiB brotli bomb, a `.warc.gz` of 2 MB holding a 2 GiB
header line between two good records, a 200 MiB JSONL line, a `.jsonl.gz` of 2 MB holding a 2 GiB line
and a `.jsonl.zst` of 32 KB holding a 1 GiB line. Each (reader, file) runs in a fresh process (its peak
RSS is its own); wall and CPU seconds, peak RSS, documents read and reasons counted go to `--out` (JSON).
Run it with a checkout's interpreter to measure that checkout (`--python /work/main/.venv/bin/python`);
`--cases` picks some (a reader of main on the JSONL cases takes many GB: keep those out there).

    nice .venv/bin/python benchmarks/hostile.py --out /tmp/hostile.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

HTML = b"<html><body><p>" + b"A perfectly ordinary paragraph. " * 20 + b"</p></body></html>"


def record(url: str, http_extra: bytes, body: bytes, rid: str) -> bytes:
    block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n" + http_extra + b"\r\n" + body
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\nWARC-Record-ID: {rid}\r\n"
            f"Content-Length: {len(block)}\r\n\r\n").encode()
    return head + block + b"\r\n\r\n"


def streamed(compressor, parts) -> bytes:
    return b"".join(compressor.compress(p) for p in parts) + compressor.flush()


def build(tmp: Path, cases: list[str] | None) -> dict[str, Path]:
    """The hostile files of `cases` (default: all), built in `tmp`."""
    import brotli
    import zstandard

    mib = b"y" * (1 << 20)
    first, last = b'{"text": "first"}\n{"text": "', b'"}\n{"text": "last"}\n'
    head = b"WARC/1.0\r\nWARC-Type: response\r\nX-Long: "

    def bomb() -> bytes:
        c = brotli.Compressor(quality=5)
        page = c.process(b"") + b"".join(c.process(bytes(1 << 20)) for _ in range(4096)) + c.finish()
        return (gzip.compress(record("http://bomb/", b"Content-Encoding: br\r\n", page, "<b>"))
                + gzip.compress(record("http://ok/", b"", HTML, "<ok>")))

    def header() -> bytes:
        long = streamed(zlib.compressobj(9, zlib.DEFLATED, 31), [head, *([mib] * 2048), b"\r\nContent-Length: 0\r\n\r\n"])
        return gzip.compress(record("http://a/", b"", HTML, "<a>")) + long + gzip.compress(record("http://b/", b"", HTML, "<b>"))

    makers = {
        "warc_brotli_bomb_4GiB": ("bomb.warc.gz", bomb),
        "warc_header_line_2GiB": ("header.warc.gz", header),
        "jsonl_line_200MiB": ("long.jsonl", lambda: first + mib * 200 + last),
        "jsonl_gz_line_2GiB": ("long.jsonl.gz", lambda: streamed(zlib.compressobj(9, zlib.DEFLATED, 31),
                                                                 [first, *([mib] * 2048), last])),
        "jsonl_zst_line_1GiB": ("long.jsonl.zst", lambda: streamed(zstandard.ZstdCompressor().compressobj(),
                                                                   [first, *([mib] * 1024), last])),
    }
    files = {}
    for case, (name, make) in makers.items():
        if not cases or case in cases:
            files[case] = tmp / name
            files[case].write_bytes(make())
    return files


def measure(reader: str, path: str) -> dict:
    """One read in this (fresh) process."""
    import time

    from curate import readers
    from curate.core.stats import StepStats

    stats, wall, cpu = StepStats("read"), time.perf_counter(), time.process_time()
    try:
        docs = sum(1 for _ in getattr(readers, reader)().read(path, stats))
    except Exception as e:  # noqa: BLE001 (a reader of an older checkout may raise: that is the finding)
        docs = f"{type(e).__name__}: {e}"[:200]
    return {"docs": docs, "dropped": dict(stats.dropped), "wall_s": round(time.perf_counter() - wall, 2),
            "cpu_s": round(time.process_time() - cpu, 2), "peak_rss_mib": peak_rss_mib()}


def peak_rss_mib() -> int:
    """This process's peak RSS since its exec (VmHWM; getrusage's maxrss keeps the forked parent's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return -1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--python", default=sys.executable, help="the interpreter (and so the checkout) to measure")
    ap.add_argument("--cases", nargs="*", help="file names to run (default: all)")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        json.dump(measure(*args.worker), sys.stdout)
        return
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, path in build(Path(tmp), args.cases).items():
            for reader in (("Warc", "FastWarc") if case.startswith("warc") else ("Jsonl",)):
                row = {"case": case, "file_bytes": path.stat().st_size, "reader": reader}
                try:
                    out = subprocess.run([args.python, __file__, "--out", "-", "--worker", reader, str(path)],
                                         capture_output=True, text=True, timeout=args.timeout, check=True)
                    row.update(json.loads(out.stdout))
                except subprocess.TimeoutExpired:
                    row["result"] = f"not finished after {args.timeout:.0f} s"
                except subprocess.CalledProcessError as e:
                    row["result"] = f"exit {e.returncode}: {e.stderr.strip().splitlines()[-1:]}"
                print(json.dumps(row), flush=True)
                results.append(row)
    Path(args.out).write_text(json.dumps({"python": args.python, "results": results}, indent=1))


if __name__ == "__main__":
    main()
