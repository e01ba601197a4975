"""Selection variant: extraction + heuristics + dedup (pipelines/ablation/dedup.py), then FineWeb-Edu's shape of
classifier: a ridge head on the frozen, mean-pooled hidden states of the selection's reference model (this
project's trainer, on the clean English books and speeches), fitted on a teacher's grades 0-5 of the dedup pool,
pages graded 3 or more kept (`quality.NeuralClassifier`, FineWeb-Edu's cut). The teacher is no instruction-tuned
LLM: a larger model of this project's trainer on the same clean text, grading a page by its bits per byte against
cut points fixed on clean documents it did not train on (scripts/teacher_server.py, scripts/selection_head.py). A
grade means "resembles the clean books and speeches", not educational value. The head is the folder at
$PENEIRA_HEAD (docs/ablation/selection-spec.toml sets it)."""

import os

from curate import Pipeline, dedup, extract, filters, quality, readers, writers

HEAD = os.environ.get("PENEIRA_HEAD", os.path.join("runs", "ablation-selection", "models", "head"))

pipeline = Pipeline(
    name="head",
    reader=readers.Warc(source="web"),
    steps=[
        extract.Trafilatura(),
        filters.Language(["en", "pt"], threshold=0.65),
        filters.GopherRepetition(),
        filters.C4(),
        filters.GopherQuality(),
        filters.FineWeb(),
        dedup.Exact(),
        dedup.MinHash(bands=14, rows=8),
        quality.NeuralClassifier(HEAD, column="teacher_grade", threshold=3, device="cpu", threads=1),
    ],
    writer=writers.Parquet(),
)
