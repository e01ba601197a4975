"""Quality classification: a fastText model that tells edited prose from web boilerplate and spam.

`Classifier(model_path, threshold=…)` (streaming) or `TopFraction(model_path, fraction=…)` (global) is the
pipeline step; `train` and `evaluate_model` are the library behind `curate quality train|eval`. See docs/quality.md.
"""

from curate.quality.metrics import Metrics, evaluate, plot_pr, pr_curve, roc_auc
from curate.quality.model import HQ, LQ, QualityModel, TrainConfig, TrainResult, evaluate_model, load_model, train
from curate.quality.step import Classifier, TopFraction
from curate.quality.text import CHUNK_WORDS, MAX_CHARS, Corpus, chunk_text, load_corpus, normalize

__all__ = [
    "CHUNK_WORDS", "HQ", "LQ", "MAX_CHARS", "Classifier", "Corpus", "Metrics", "QualityModel", "TopFraction",
    "TrainConfig", "TrainResult", "chunk_text", "evaluate", "evaluate_model", "load_corpus", "load_model", "normalize",
    "plot_pr", "pr_curve", "roc_auc", "train",
]
