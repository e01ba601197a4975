"""Build what docs/ablation/selection-spec.toml selects with, from the shared clean English text only (books and
speeches: tinyshakespeare, the inaugural addresses, the State of the Union addresses; none of them is a held-out set
of the ablation): the target corpus of DSIR, the reference model of the perplexity buckets (this project's trainer),
and the fastText classifier (the same positives against SMS spam and web chat, as docs/ablation.md's).

    python scripts/selection_models.py --shared ../shared/data --out runs/ablation-selection/models

Writes OUT/clean.jsonl (one document per speech, per 60 lines of a play), OUT/tokenizer.json, OUT/tokens/,
OUT/reference/ (a `python -m train` run: `ckpt.pt` and its tokenizer) and OUT/quality.bin. With --head it then
runs scripts/selection_head.py: the teacher, its grades of the dedup pool and the head fitted on them (OUT/head/,
the `head` variant's classifier); that step needs PENEIRA_LID_MODEL, as the ablation does.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import zipfile
from pathlib import Path

CLEAN = ("clean_en/tinyshakespeare.txt", "clean_en/nltk_inaugural.zip", "clean_en/nltk_state_union.zip")
NEGATIVE = ("low_quality/SMSSpamCollection.tsv", "low_quality/nltk_webtext.zip")
PLAY_LINES = 60  # a play has no documents of its own: pieces of 60 lines, about a scene's worth


def clean_documents(text_dir: Path) -> list[str]:
    """The clean English text as documents: each speech of the two zips, the play in pieces."""
    docs = []
    lines = (text_dir / CLEAN[0]).read_text(encoding="utf-8").splitlines()
    docs += ["\n".join(lines[i : i + PLAY_LINES]).strip() for i in range(0, len(lines), PLAY_LINES)]
    for name in CLEAN[1:]:
        with zipfile.ZipFile(text_dir / name) as z:
            for member in sorted(z.namelist()):
                if member.endswith(".txt") and "README" not in member:
                    docs.append(z.read(member).decode("utf-8", errors="replace").strip())
    return [d for d in docs if d]


def run(*cmd: str) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--out", default="runs/ablation-selection/models")
    ap.add_argument("--steps", type=int, default=400, help="training steps of the reference model")
    ap.add_argument("--head", action="store_true",
                    help="then make the `head` variant's classifier (scripts/selection_head.py) from these models")
    args = ap.parse_args()
    text_dir, out = Path(args.shared) / "text", Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    docs = clean_documents(text_dir)
    with open(out / "clean.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"id": f"clean-{i}", "text": d}) + "\n" for i, d in enumerate(docs))
    print(f"{len(docs)} clean documents, {sum(map(len, docs)):,} characters -> {out / 'clean.jsonl'}")
    bin_dir = Path(sys.executable).parent
    curate, py = str(bin_dir / "curate"), sys.executable
    run(curate, "tokenizer", "train", str(out / "clean.jsonl"), "--vocab-size", "2048", "--out", str(out / "tokenizer.json"))
    run(curate, "tokenize", str(out / "clean.jsonl"), "--tokenizer", str(out / "tokenizer.json"), "--val-fraction", "0.02",
        "--out", str(out / "tokens"), "--overwrite", "--no-progress")
    run(py, "-m", "train", "--data", str(out / "tokens"), "--config", "tiny", "--n_layer", "2", "--n_embd", "128",
        "--n_head", "4", "--seq_len", "256", "--batch_tokens", "2048", "--micro_batch", "8", "--steps", str(args.steps),
        "--warmup_steps", "30", "--lr", "3e-3", "--eval_every", "200", "--out", str(out / "reference"), "--overwrite",
        "--no-progress", "--no-plots")
    quality = [curate, "quality", "train"]
    for p in CLEAN:
        quality += ["--positive", str(text_dir / p)]
    for n in NEGATIVE:
        quality += ["--negative", str(text_dir / n)]
    run(*quality, "--chunk-words", "400", "--threads", "1", "--out", str(out / "quality.bin"))
    if args.head:
        run(py, str(Path(__file__).with_name("selection_head.py")), "--shared", args.shared, "--models", str(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
