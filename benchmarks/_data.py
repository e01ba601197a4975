"""Where benchmark scripts find the project and the shared real data (as tests/conftest.py does).

Scripts run as `python benchmarks/x.py`, so this folder is on sys.path and `import _data` works; it
also puts the repository root first, so `curate` and `train` import from this checkout.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = Path(os.environ.get("PENEIRA_SHARED_DATA", ROOT.parent / "shared" / "data"))

# Real web text (697 Common Crawl documents) and Portuguese news (486 Bosque documents).
WEB_AND_PT = [
    DATA / "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz",
    DATA / "text/pt/bosque_docs.jsonl",
]
