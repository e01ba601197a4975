"""What per-record fault isolation costs the WARC readers: each reader against its library alone.

`readers.Warc` decompresses a `.warc.gz` gzip member by member (`curate.io.members`), holds each
document back until its member's CRC checks out, and counts every record. `readers.FastWarc` reads
natively with FastWARC while each record starts the next gzip member, and member by member from the
first member not passed on (after an error, and for the file's last member); its member-by-member
path alone (what it did before, and what it does after a damaged member) is measured too. The
baselines iterate the same files with the library over the whole stream and decode the same HTML
pages the same way, which is what the readers did before issue 13. CPU seconds of this process (the
machine is shared), best of `--repeat` passes over the 10 real WARC/WET/WAT files of
../shared/data/warc, all measured in this one run.

    nice .venv/bin/python benchmarks/readers.py --repeat 5
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import DATA  # noqa: E402

from curate.core.stats import StepStats  # noqa: E402
from curate.io import readers  # noqa: E402
from curate.io.readers import decode_html  # noqa: E402
from curate.io.readers.warc import _http_payload, _split_http  # noqa: E402


def bare_warcio(path: Path) -> int:
    """warcio over the whole file, HTML decoded as the readers do: what `readers.Warc` did before."""
    from warcio.archiveiterator import ArchiveIterator

    n = 0
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f):
            if rec.rec_type == "conversion":
                rec.content_stream().read().decode("utf-8", "replace")
                n += 1
            elif rec.rec_type == "response" and rec.http_headers is not None:
                ctype = rec.http_headers.get_header("Content-Type") or ""
                if "html" in ctype.lower():
                    decode_html(rec.content_stream().read(), ctype)
                    n += 1
    return n


def bare_fastwarc(path: Path) -> int:
    """FastWARC over the whole file, HTTP and HTML decoded as the readers do: what `readers.FastWarc` did before."""
    from fastwarc.warc import ArchiveIterator

    n = 0
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f, parse_http=False, auto_decode="none"):
            kind = rec.headers.get("WARC-Type")
            if kind == "conversion":
                rec.reader.read().decode("utf-8", "replace")
                n += 1
            elif kind == "response" and (http := _split_http(rec.reader.read())) is not None:
                _, h, raw = http
                if "html" in h.get("content-type", "").lower():
                    body = _http_payload(raw, h.get("transfer-encoding", ""), h.get("content-encoding", ""), 5_000_000)
                    decode_html(body, h.get("content-type", ""))
                    n += 1
    return n


class MembersOnly(readers.FastWarc):
    """`readers.FastWarc` without its native path: every member decompressed in Python."""

    _stream = readers.Warc._stream


def best(fn, files: list[Path], repeat: int) -> tuple[float, int]:
    times, n = [], 0
    for _ in range(repeat):
        t = time.process_time()
        n = sum(fn(f) for f in files)
        times.append(time.process_time() - t)
    return min(times), n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    files = sorted((DATA / "warc").rglob("*.warc*.gz"))
    reader_fn = lambda r: (lambda f: sum(1 for _ in r.read(str(f), StepStats("read"))))  # noqa: E731
    rows = [("warcio alone (baseline)", bare_warcio), ("readers.Warc", reader_fn(readers.Warc())),
            ("FastWARC alone (baseline)", bare_fastwarc), ("readers.FastWarc", reader_fn(readers.FastWarc())),
            ("FastWarc, members only", reader_fn(MembersOnly()))]
    print(f"{len(files)} WARC files, best of {args.repeat}, one process")
    secs = {}
    for name, fn in rows:
        sec, n = best(fn, files, args.repeat)
        secs[name] = sec
        print(f"  {name:<28} {sec * 1000:8.1f} ms   ({n} records or documents)")
    print(f"  readers.Warc / warcio alone:        {secs['readers.Warc'] / secs['warcio alone (baseline)']:.2f}x the time")
    print(f"  readers.FastWarc / FastWARC alone:  {secs['readers.FastWarc'] / secs['FastWARC alone (baseline)']:.2f}x the time")
    print(f"  members only / FastWARC alone:      {secs['FastWarc, members only'] / secs['FastWARC alone (baseline)']:.2f}x the time")
    print(f"  peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
