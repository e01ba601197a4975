"""scripts/teacher_server.py, the selection ablation's stand-in teacher, graded through `curate quality annotate`
as a served LLM would be: the grade of each page is the number of cut points its bits per byte under the teacher
is at or below (counted here by brute force, on the page as the prompt cut it), and a teacher trained on clean
paragraphs grades other clean paragraphs above web chat. `curate quality fit` on such grades is
tests/test_quality_fit.py's."""

from __future__ import annotations

import importlib.util
import json
import threading
import urllib.request
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from _models import bpe, clean_texts, train_gpt
from test_quality_fit import _low_quality

from curate.cli.main import main as curate_main
from curate.models import ModelSpec
from curate.models.inference import get_model

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("teacher_server", ROOT / "scripts" / "teacher_server.py")
teacher_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(teacher_server)

pytest.importorskip("tokenizers")


@pytest.mark.slow
def test_the_teacher_grades_pages_by_bits_per_byte_through_annotate(tmp_path, shared):
    import torch

    torch.set_num_threads(1)
    clean = clean_texts(shared)
    teacher_dir = train_gpt(clean[:150], bpe(clean[:150], vocab=400), tmp_path / "teacher", steps=40)
    model = get_model(ModelSpec(str(teacher_dir), task="causal", device="cpu", threads=1))
    cuts = [float(c) for c in np.quantile(model.bits_per_byte(clean[150:180]), [0.1, 0.3, 0.5, 0.7, 0.9])]
    good, bad = clean[180:200], _low_quality(shared)[:20]
    docs = [{"id": f"g{i}", "text": t} for i, t in enumerate(good)] + [{"id": f"b{i}", "text": t} for i, t in enumerate(bad)]
    (tmp_path / "pool.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    server = teacher_server.make_server(teacher_server.Teacher(str(teacher_dir), cuts))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        with urllib.request.urlopen(url + "/models") as r:
            assert json.load(r)["data"][0]["id"] == "peneira-teacher"
        assert curate_main(["quality", "annotate", str(tmp_path / "pool.jsonl"), "--out", str(tmp_path / "ann"),
                            "--endpoint", url, "--model", "peneira-teacher", "--template",
                            str(ROOT / "docs/prompts/resemblance.txt"), "-n", "40", "--max-chars", "2000",
                            "--concurrency", "2", "--no-progress"]) == 0
    finally:
        server.shutdown()
        server.server_close()
    got = {r["id"]: r for r in pq.read_table(tmp_path / "ann/annotations.parquet").to_pylist()}
    assert len(got) == 40 and all(r["reason"] is None or r["reason"] == "" for r in got.values()), got
    bpb = model.bits_per_byte([d["text"][:2000] for d in docs])
    want = {d["id"]: sum(b <= c for c in cuts) for d, b in zip(docs, bpb, strict=True)}
    assert {i: int(r["score"]) for i, r in got.items()} == want
    assert all(r["prompt_tokens"] > r["completion_tokens"] > 0 for r in got.values())
    # planted: the teacher learnt clean paragraphs; web chat grades lower (this teacher: about 3 against 0)
    g, b = (np.mean([want[d["id"]] for d in docs if d["id"][0] == k]) for k in "gb")
    assert g - b >= 1.5, (g, b)


def test_the_ablation_report_reads_the_fitted_heads_metrics(tmp_path):
    """`train ablate --report` shows a head variant's held-out agreement with its teacher (the head's
    metrics.json, as `curate quality fit` writes it) beside the fastText card; no head, no card."""
    from train.ablate.report import head_card

    held = {"documents": 38, "spearman": 0.71, "keep_at": 3.0, "precision": 0.8, "recall": 0.6, "f1": 0.6857,
            "mean_abs_error": 0.9, "confusion": {}}
    (tmp_path / "metrics.json").write_text(json.dumps({"graded": 151, "heldout": held, "train": held}))
    card = head_card({"env": {"PENEIRA_HEAD": str(tmp_path)}})
    assert card["graded"] == 151 and card["heldout"]["spearman"] == 0.71 and "confusion" not in card["heldout"]
    assert head_card({"env": {"PENEIRA_HEAD": str(tmp_path / "none")}}) is None and head_card({}) is None
