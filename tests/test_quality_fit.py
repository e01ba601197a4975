"""Make your own classifier, end to end without network: a fake teacher grades by a planted rule (clean English
from the shared data = 4, low-quality web postings = 1) -> `curate quality annotate` -> `curate quality fit` on a
tiny random encoder -> the fitted head as a pipeline step keeps the planted-good documents."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pyarrow.parquet as pq
import pytest
from _chatserver import TEMPLATE, ChatServer
from _models import bpe, clean_texts, hf_encoder

from curate import Pipeline, quality, readers
from curate.cli.main import main as curate_main
from curate.quality.fit import heldout_mask, metrics

pytest.importorskip("transformers")
pytest.importorskip("sklearn")


def _low_quality(shared) -> list[str]:
    """nltk's webtext (forum posts, chat, singles ads) in runs of 8 lines: real low-quality web text."""
    out = []
    with zipfile.ZipFile(shared / "text/low_quality/nltk_webtext.zip") as z:
        for name in sorted(n for n in z.namelist() if n.endswith(".txt")):
            lines = [x.strip() for x in z.read(name).decode("latin-1").splitlines() if x.strip()]
            out += [" ".join(lines[i : i + 8]) for i in range(0, len(lines) - 8, 8)]
    return out


def test_metrics_against_hand_counts():
    true = np.array([4, 4, 1, 1, 3, 0], float)
    pred = np.array([3.6, 2.4, 1.2, 3.1, 2.6, 0.4])
    m = metrics(true, pred, keep_at=3, low=0, high=5)
    # teacher keeps 0, 1, 4; head (ints 4, 2, 1, 3, 3, 0) keeps 0, 3, 4: 2 right of 3 each way
    assert (m["precision"], m["recall"], m["f1"]) == (0.6667, 0.6667, 0.6667)
    assert m["confusion"]["rows_teacher_columns_head"][4] == [0, 0, 1, 0, 1, 0]  # two 4s: predicted 4 and 2
    def ranks(v):  # average ranks for ties, by counting
        return np.array([(v < x).sum() + ((v == x).sum() + 1) / 2 for x in v])

    assert m["spearman"] == round(float(np.corrcoef(ranks(true), ranks(pred))[0, 1]), 4)


def test_heldout_split_is_by_id_and_seeded():
    ids = [f"d{i}" for i in range(2000)]
    a, b = heldout_mask(ids, 0.2, 1), heldout_mask(ids[::-1], 0.2, 1)[::-1]
    assert (a == b).all() and 0.17 < a.mean() < 0.23 and (a != heldout_mask(ids, 0.2, 2)).any()


@pytest.mark.slow
def test_annotate_fit_and_keep(tmp_path, shared):
    rng = np.random.default_rng(0)
    good_pool, bad_pool = clean_texts(shared), _low_quality(shared)
    good = [good_pool[i] for i in rng.choice(len(good_pool), 100, replace=False)]
    bad = [bad_pool[i] for i in rng.choice(len(bad_pool), 100, replace=False)]
    planted = {t: 4 for t in good} | {t: 1 for t in bad}
    docs = [{"id": f"g{i}", "text": t} for i, t in enumerate(good[:80])] + \
           [{"id": f"b{i}", "text": t} for i, t in enumerate(bad[:80])]
    (tmp_path / "pool.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (tmp_path / "prompt.txt").write_text(TEMPLATE)
    encoder = hf_encoder(bpe(good_pool[300:], vocab=400), tmp_path / "encoder")  # tokenizer: other paragraphs

    def teacher(doc_id: str, text: str) -> str:
        return f"The extract is ...\nEducational score: {planted[text]}"

    with ChatServer(teacher) as server:
        assert curate_main(["quality", "annotate", str(tmp_path / "pool.jsonl"), "--out", str(tmp_path / "ann"),
                            "--endpoint", server.url, "--model", "teacher", "--template", str(tmp_path / "prompt.txt"),
                            "-n", "160", "--no-progress"]) == 0
    assert curate_main(["quality", "fit", str(tmp_path / "ann"), "--encoder", str(encoder), "--out",
                        str(tmp_path / "head"), "--holdout", "0.25", "--device", "cpu", "--no-progress"]) == 0
    report = json.loads((tmp_path / "head/metrics.json").read_text())
    held = report["heldout"]
    # binary truth: a head that ranks at chance has Spearman ~ N(0, 1/sqrt(n-1)), about 0.18 at the 32 documents
    # held out; 0.5 is near three such deviations above chance (the random 64-dimensional encoder reaches 0.78)
    assert held["documents"] >= 25 and held["spearman"] > 0.5
    assert report["graded"] == 160 and report["train"]["documents"] + held["documents"] == 160
    # the fitted folder is a step: fresh documents (never annotated) kept by integer score >= 3
    fresh = [{"id": f"G{i}", "text": t} for i, t in enumerate(good[80:])] + \
            [{"id": f"B{i}", "text": t} for i, t in enumerate(bad[80:])]
    (tmp_path / "fresh.jsonl").write_text("".join(json.dumps(d) + "\n" for d in fresh))
    step = quality.NeuralClassifier(str(tmp_path / "head"), column="edu", threshold=3, device="cpu")
    pipe = Pipeline(name="edu", reader=readers.Jsonl(source="web", unique_ids=False), steps=[step])
    pipe.run(inputs=str(tmp_path / "fresh.jsonl"), output=str(tmp_path / "run"), executor="local", progress=False)
    kept = {r["id"] for r in pq.read_table(tmp_path / "run/data").to_pylist()}
    good_kept = sum(i.startswith("G") for i in kept) / 20
    bad_kept = sum(i.startswith("B") for i in kept) / 20
    # chance: both shares equal, their difference ~ N(0, 0.16) at 20 + 20 documents (this head: 0.9 and 0.05)
    assert good_kept >= 0.7 and good_kept - bad_kept >= 0.5, (good_kept, bad_kept)


@pytest.mark.slow
def test_logistic_head_on_our_own_checkpoint(tmp_path, shared):
    """`fit --head logistic` on this project's GPT (pooled hidden states): the saved head, run as the step,
    gives what scikit-learn's own predict_proba gives on the same embeddings."""
    import pyarrow as pa
    from _models import train_gpt
    from sklearn.linear_model import LogisticRegression

    from curate.models import ModelSpec
    from curate.models.inference import get_model

    good, bad = clean_texts(shared)[:40], _low_quality(shared)[:40]
    other = clean_texts(shared)[100:200]
    ckpt = train_gpt(other, bpe(other, vocab=300), tmp_path / "gpt", steps=5)
    texts = good + bad
    scores = [4.0 if i % 3 else 3.0 for i in range(40)] + [1.0 if i % 4 else None for i in range(40)]
    (tmp_path / "ann").mkdir()
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(80)], "text": texts, "score": scores}),
                   tmp_path / "ann/annotations.parquet")
    assert curate_main(["quality", "fit", str(tmp_path / "ann"), "--encoder", str(ckpt), "--out", str(tmp_path / "h"),
                        "--head", "logistic", "--device", "cpu", "--no-progress", "--json"]) == 0
    report = json.loads((tmp_path / "h/metrics.json").read_text())
    assert report["graded"] == 70 and report["unscored_left_out"] == 10
    held = heldout_mask([f"d{i}" for i in range(80)], 0.2, 0)
    graded = [i for i in range(80) if scores[i] is not None]
    train = [i for i in graded if not held[i]]
    x = get_model(ModelSpec(str(ckpt), task="embed", device="cpu")).embed(texts)
    ref = LogisticRegression(max_iter=2000, random_state=0).fit(x[train], np.array([int(scores[i]) for i in train]))
    want = ref.predict_proba(x) @ ref.classes_
    got = quality.NeuralClassifier(str(tmp_path / "h"), device="cpu", token_budget=64).scores(texts)
    np.testing.assert_allclose(got, want, atol=1e-4)
    assert json.loads((tmp_path / "h/head.json").read_text())["labels"] == ["1", "3", "4"]


def test_fit_refuses_a_folder_of_other_files(tmp_path, capsys):
    import pyarrow as pa

    (tmp_path / "ann").mkdir()
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(20)], "text": ["x"] * 20, "score": [1.0, 4.0] * 10}),
                   tmp_path / "ann/annotations.parquet")
    (tmp_path / "out").mkdir()
    (tmp_path / "out/notes.txt").write_text("mine")
    args = ["quality", "fit", str(tmp_path / "ann"), "--encoder", str(tmp_path / "nowhere"), "--out",
            str(tmp_path / "out"), "--no-progress"]
    assert curate_main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--overwrite" in err[0]
    assert (tmp_path / "out/notes.txt").read_text() == "mine"
