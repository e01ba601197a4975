"""Quality classification: a fastText model that tells edited prose from web boilerplate and spam.

`Classifier(model_path, threshold=…)` (streaming) or `TopFraction(model_path, fraction=…)` (global) is the
pipeline step (`Importance(target, tokens=…)`: DSIR importance resampling toward a target corpus, global;
`NeuralClassifier(model, column=…, threshold=…)`: a Hugging Face or `curate quality fit` classifier, and
`MaxScore(columns)` and `PercentileBuckets(columns, bins=20)` (global): several classifiers' scores combined
into buckets, as Nemotron-CC does;
`Perplexity(model, threshold=…)`: bits per byte under a reference language model, and `PerplexityBuckets(model)`:
CCNet's per-language head / middle / tail, global; docs/models.md);
`train` and `evaluate_model` are the library behind `curate quality train|eval`. See docs/quality.md.
"""

from curate.quality.buckets import PercentileBuckets
from curate.quality.confounds import confounds
from curate.quality.importance import Importance
from curate.quality.metrics import Metrics, evaluate, format_histogram, plot_pr, pr_curve, roc_auc, score_histogram
from curate.quality.model import HQ, LQ, QualityModel, TrainConfig, TrainResult, evaluate_model, load_model, train
from curate.quality.neural import MaxScore, NeuralClassifier
from curate.quality.perplexity import Perplexity, PerplexityBuckets
from curate.quality.step import Classifier, TopFraction
from curate.quality.text import CHUNK_WORDS, MAX_CHARS, Examples, chunk_text, classifier_text, load_examples

__all__ = [
    "CHUNK_WORDS", "HQ", "LQ", "MAX_CHARS", "Classifier", "Examples", "Importance", "MaxScore", "Metrics",
    "NeuralClassifier", "PercentileBuckets", "Perplexity", "PerplexityBuckets", "QualityModel",
    "TopFraction", "TrainConfig", "TrainResult", "chunk_text", "classifier_text", "confounds", "evaluate", "evaluate_model",
    "format_histogram", "load_examples", "load_model", "plot_pr", "pr_curve", "roc_auc", "score_histogram", "train",
]
