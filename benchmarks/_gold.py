"""The extraction gold sets of ../shared/data/extraction, the fixed tuning split, and the token F1 score.

Shared by benchmarks/extract.py (scores) and benchmarks/extract_fit.py (fits extract.Main's weights),
so both see the same pages, decoded the same way, and the same split.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from _data import DATA

from curate.io.readers import decode_html

SETS = ("dragnet", "readability", "CleanPortalEval", "cleaneval-dev")
TUNE_PERCENT = 60
# How each set is scored: Dragnet's gold keeps comment threads (of its pages with 100+ words under comment cues,
# most keep over 70% of them), the other sets' gold drops them. So on Dragnet every extractor runs with
# keep_comments=True (extract.Main, trafilatura's include_comments, Resiliparse's comments) and elsewhere with
# False: whether comments are kept is the user's option, and each set is scored under the option its gold asks.
KEEP_COMMENTS = {"dragnet": True}
_WORD = re.compile(r"\w+")


def is_tune(page_id: str) -> bool:
    """The fixed tuning split: pages whose id hashes into the first 60 of 100 buckets."""
    return int.from_bytes(hashlib.blake2b(page_id.encode(), digest_size=8).digest(), "big") % 100 < TUNE_PERCENT


def pages(name: str, data: Path = DATA) -> Iterator[tuple[str, str, str | None, str]]:
    """(id, html, url, gold text) of every page of one gold set, the HTML decoded as the WARC readers do."""
    root = data / "extraction" / name
    with open(root / "gold.jsonl", encoding="utf-8") as f:
        for line in f:
            g = json.loads(line)
            with gzip.open(root / "html" / f"{g['id']}.html.gz") as h:
                html, _ = decode_html(h.read(), None)
            yield g["id"], html, g.get("url"), g["text"]


def bag(text: str) -> Counter:
    """The bag of lower-cased \\w+ tokens the gold sets are scored on."""
    return Counter(_WORD.findall(text.lower()))


def prf(pred: Counter, gold: Counter) -> tuple[float, float, float]:
    """Token precision, recall and F1 of one page (0 when either side is empty)."""
    overlap = sum((pred & gold).values())
    if not overlap:
        return 0.0, 0.0, 0.0
    p, r = overlap / sum(pred.values()), overlap / sum(gold.values())
    return p, r, 2 * p * r / (p + r)
