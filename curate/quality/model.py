"""Train, load and apply the fastText quality model (DCLM recipe: word bigrams, lr 0.1, dim 100, 5+ epochs)."""

from __future__ import annotations

import json
import mmap
import os
import random
import struct
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field

import numpy as np

from curate.core.errors import UsageError
from curate.io import fs
from curate.io.models import local_copy
from curate.quality.confounds import confounds
from curate.quality.metrics import Metrics, evaluate, score_histogram
from curate.quality.text import CHUNK_WORDS, Examples, classifier_text, load_examples

HQ, LQ = "__label__hq", "__label__lq"


_MAGIC, _ARGS_BYTES = 793712314, 12 * 4 + 8  # fastText .bin signature; Args: 12 int32 and a double


def check_model_file(path: str) -> None:
    """Walk a fastText .bin's layout (header, args, dictionary, matrices) and check it fills the file exactly.

    fastText's loader does not notice a truncated file: cut inside the matrices it loads garbage
    weights, and cut inside the dictionary it reads past the end forever. A copy interrupted on the way
    to a worker is a real failure mode, so it is refused here with a clear message instead.
    """
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size < 8:
            raise UsageError(f"quality model {path} is empty or truncated, not a fastText model file")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            _walk_layout(path, data)


def _walk_layout(path: str, data: mmap.mmap) -> None:
    size, pos = len(data), 0

    def truncated() -> UsageError:
        return UsageError(f"quality model {path} is truncated: {size:,} bytes, its layout needs more")

    def take(fmt: str) -> tuple:
        nonlocal pos
        pos += struct.calcsize(fmt)
        if pos > size:
            raise truncated()
        return struct.unpack_from(fmt, data, pos - struct.calcsize(fmt))

    magic, _version = take("<ii")
    if magic != _MAGIC:
        raise UsageError(f"quality model {path} is not a fastText model file (bad signature)")
    pos += _ARGS_BYTES
    n_entries, _, _, _, n_pruned = take("<iiiqq")
    for _ in range(n_entries):
        pos = data.find(b"\0", pos) + 1  # the word, NUL-terminated
        if pos == 0:
            raise truncated()
        take("<qb")  # count, entry type
    pos += 8 * max(n_pruned, 0)
    (quantized,) = take("<?")
    if quantized:
        return  # product-quantized (.ftz) layouts are not walked; fastText's own load checks them
    for matrix in ("input", "output"):
        if matrix == "output":
            take("<?")  # the qout flag
        rows, cols = take("<qq")
        pos += 4 * rows * cols
        if pos > size:
            raise truncated()
    if pos != size:
        raise UsageError(f"quality model {path} is corrupted: {size - pos:,} bytes past the end of the model")


class QualityModel:
    """A loaded quality model: scores are the probability of the high-quality label."""

    def __init__(self, path: str):
        import fasttext

        if not os.path.isfile(path):
            raise UsageError(f"quality model {path} does not exist (train one with `curate quality train`)")
        check_model_file(path)
        try:
            self.ft = fasttext.load_model(path)
        except ValueError as e:  # fastText's message for anything that is not a model file
            raise UsageError(f"quality model {path} is not a fastText model file: {e}") from e
        labels = set(self.ft.get_labels())
        if labels != {HQ, LQ}:
            shown = sorted(labels)[:5]
            raise UsageError(f"{path} is a fastText model with labels {shown}…, not a quality model ({HQ}, {LQ})")
        self.path = path

    def score_lines(self, lines: list[str]) -> np.ndarray:
        """Scores of lines already in `classifier_text` form, in one multi-line predict call."""
        labels, probs = self.ft.predict(lines, k=1)
        top = np.fromiter((p[0] for p in probs), dtype=np.float32, count=len(lines))
        is_hq = np.fromiter((lab[0] == HQ for lab in labels), dtype=bool, count=len(lines))
        # Two classes under softmax: P(hq) = 1 - P(lq). fastText adds 1e-5 inside its log, hence the clip.
        return np.clip(np.where(is_hq, top, 1.0 - top), 0.0, 1.0)

    def score(self, texts: list[str]) -> np.ndarray:
        return self.score_lines([classifier_text(t) for t in texts])


_CACHE: dict[str, QualityModel] = {}


def load_model(path: str) -> QualityModel:
    """The model at `path`, loaded once per process (workers score many shards with one copy); a model at
    an fsspec URL (`s3://…`) is loaded from its local copy, downloaded once per machine (`models.local_copy`)."""
    key = path if fs.is_url(path) else os.path.abspath(path)
    if key not in _CACHE:
        local = path
        if fs.is_url(path):
            try:
                local = local_copy(path)
            except FileNotFoundError:
                raise UsageError(f"quality model {path} does not exist (train one with `curate quality train`)") from None
        _CACHE[key] = QualityModel(local)
    return _CACHE[key]


MIN_UPDATES = 30_000  # example updates (examples x epochs) below which fastText barely leaves its 0.5 start


@dataclass
class TrainConfig:
    """Training options. Defaults follow the DCLM fastText recipe; `bucket` bounds model size (dim x 4 bytes each).

    `epoch=None` runs DCLM's 5 epochs, or more on a small training set: enough for `MIN_UPDATES` example
    updates (at most 100 epochs). With a few hundred examples, 5 epochs leave every score within a
    thousandth of 0.5, a ranking with no margin that no threshold can use.
    """

    lr: float = 0.1
    dim: int = 100
    epoch: int | None = None
    word_ngrams: int = 2
    bucket: int = 200_000
    min_count: int = 1
    threads: int = 1  # >1 trains faster but Hogwild updates make the model differ run to run
    seed: int = 0
    holdout: float = 0.1
    balance: bool = True  # cut the larger class to the smaller one's number of words
    chunk_words: int = CHUNK_WORDS
    text_key: str = "text"


@dataclass
class TrainResult:
    model_path: str
    metrics: Metrics | None  # None when holdout is 0
    train_docs: dict[str, int]
    heldout_docs: dict[str, int]
    skipped: dict[str, dict[str, int]]
    train_words: dict[str, int]
    epochs: int
    seconds: float
    confounds: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    histogram: dict | None = None
    heldout_scores: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0))
    heldout_labels: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0, bool))


def _balance(pos: Examples, neg: Examples, rng: random.Random) -> tuple[Examples, Examples]:
    """Cut the class with more words, at random, to about as many words as the other has.

    Balancing by example count would be wrong twice over: a class of long documents would lose most of
    its text to a class of short messages, and 0.5 would no longer mean "as likely either way" per word.
    """
    wp, wn = sum(pos.words()), sum(neg.words())
    big, target = (pos, wn) if wp > wn else (neg, wp)
    order = list(range(len(big.lines)))
    rng.shuffle(order)
    keep, total = [], 0
    for i in order:
        if total >= target:
            break
        keep.append(i)
        total += big.lines[i].count(" ") + 1
    small = big.subset(sorted(keep))
    return (small, neg) if big is pos else (pos, small)


def _split(ex: Examples, holdout: float, rng: random.Random) -> tuple[list[str], list[str]]:
    """Hold out about `holdout` of the examples, whole documents at a time when there are several, so that
    chunks of one document are not on both sides (a class that is one long text is split by chunk)."""
    if holdout == 0:
        return list(ex.lines), []
    groups = sorted(set(ex.group))
    by_group = len(groups) >= 2 / holdout
    keys = groups if by_group else list(range(len(ex.lines)))
    rng.shuffle(keys)
    member = ex.group if by_group else range(len(ex.lines))
    size = Counter(member)
    want, held, n_held = holdout * len(ex.lines), set(), 0
    for k in keys:
        if n_held >= want:
            break
        held.add(k)
        n_held += size[k]
    test = [x for x, m in zip(ex.lines, member, strict=True) if m in held]
    train = [x for x, m in zip(ex.lines, member, strict=True) if m not in held]
    if not test or not train:
        raise UsageError(f"{len(ex.lines)} examples in a class are too few for a {holdout:g} held-out split")
    rng.shuffle(train)
    return train, test


def _epochs(cfg: TrainConfig, n_examples: int) -> int:
    if cfg.epoch is not None:
        return cfg.epoch
    return min(100, max(5, -(-MIN_UPDATES // max(n_examples, 1))))


def train(
    positive: str | list[str] | Examples,
    negative: str | list[str] | Examples,
    out: str,
    config: TrainConfig | None = None,
    progress: bool = False,
) -> TrainResult:
    """Train a quality model from globs (or loaded examples) of each class and save it to `out`.

    The class with more text is cut (seeded) to the other's number of words, so that 0.5 means "as
    likely either way"; a seeded share of each class is held out and scored for the metrics and the
    score histogram. Differences a model could learn instead of quality (language mix, example length,
    one dominant source) are measured and returned as warnings. Next to the model, `<out>.json`
    records the config, counts, confound figures, warnings and held-out metrics. `progress`: fastText's own
    progress line (share done, words/s, loss, time left) on stderr while it trains.
    """
    import fasttext

    cfg = config or TrainConfig()
    if not 0 <= cfg.holdout < 1:
        raise UsageError(f"holdout must be in [0, 1), got {cfg.holdout}")
    out = os.fspath(out)
    check_out(out)
    t0 = time.perf_counter()
    pos, neg = (c if isinstance(c, Examples) else load_examples(c, cfg.text_key, cfg.chunk_words) for c in (positive, negative))
    pos, neg = _drop_shared(pos, neg)
    rng = random.Random(cfg.seed)
    if cfg.balance:
        pos, neg = _balance(pos, neg, rng)
    figures, warnings = confounds(pos, neg)
    pos_train, pos_test = _split(pos, cfg.holdout, rng)
    neg_train, neg_test = _split(neg, cfg.holdout, rng)
    examples = [f"{HQ} {x}" for x in pos_train] + [f"{LQ} {x}" for x in neg_train]
    rng.shuffle(examples)  # fastText decays lr over the file: classes must be interleaved
    epochs = _epochs(cfg, len(examples))
    out_dir = os.path.dirname(os.path.abspath(out))
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".quality-train-") as tmp:
        staged = os.path.join(tmp, "model.bin")
        _fit(fasttext, examples, staged, cfg, epochs, verbose=2 if progress else 0)
        result = _measure(staged, out, cfg, epochs, t0, pos, neg, pos_train, neg_train, pos_test, neg_test,
                          figures, warnings)
        card = os.path.join(tmp, "card.json")
        with open(card, "w", encoding="utf-8") as f:
            f.write(json.dumps(_card(cfg, epochs, result, figures), indent=1))
            f.flush()
            os.fsync(f.fileno())
        _publish([(staged, out), (card, f"{out}.json")], out_dir)
    _CACHE.pop(os.path.abspath(out), None)  # a retrained file must not be served from an old cache entry
    return result


def check_out(out: str) -> None:
    """What `train` writes (`out` and `<out>.json`) can be written: checked before minutes of training."""
    if not out or out.endswith(("/", os.sep)) or os.path.isdir(out):
        raise UsageError(f"--out {out!r} must be a model file path (a <out>.json card is written beside it), not a folder")
    for path in (out, f"{out}.json"):
        if os.path.isdir(path):
            raise UsageError(f"{path} is a folder: choose another --out")
    parent = os.path.dirname(os.path.abspath(out))
    probe = parent
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe) or not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write {out}: {probe} is not a writable folder")


def _publish(pairs: list[tuple[str, str]], directory: str) -> None:
    """Rename each staged file to its final name, the model before its card, holding an flock on the folder so
    that two trainings into one --out publish in turn: the model and the card that describes it always come
    from the same training (the last one to finish)."""
    import fcntl

    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        for staged, final in pairs:
            os.replace(staged, final)
    finally:
        os.close(fd)  # the flock goes with it


def _measure(model_path: str, out: str, cfg: TrainConfig, epochs: int, t0: float, pos, neg, pos_train, neg_train,
             pos_test, neg_test, figures, warnings) -> TrainResult:
    """The result of a training whose model is at `model_path` (still staged): held-out metrics and histogram."""
    result = TrainResult(
        model_path=out,
        metrics=None,
        train_docs={"positive": len(pos_train), "negative": len(neg_train)},
        heldout_docs={"positive": len(pos_test), "negative": len(neg_test)},
        skipped={"positive": dict(pos.skipped), "negative": dict(neg.skipped)},
        train_words={"positive": sum(x.count(" ") + 1 for x in pos_train),
                     "negative": sum(x.count(" ") + 1 for x in neg_train)},
        epochs=epochs,
        seconds=0.0,
        confounds=figures,
        warnings=warnings,
    )
    if pos_test:
        model = QualityModel(model_path)
        result.heldout_scores = model.score_lines(pos_test + neg_test)
        result.heldout_labels = np.r_[np.ones(len(pos_test), bool), np.zeros(len(neg_test), bool)]
        result.metrics = evaluate(result.heldout_scores, result.heldout_labels)
        result.histogram = score_histogram(result.heldout_scores, result.heldout_labels)
        result.warnings += spread_warnings(result.histogram)
    result.seconds = time.perf_counter() - t0
    return result


def _card(cfg: TrainConfig, epochs: int, result: TrainResult, figures: dict) -> dict:
    return {
        "config": asdict(cfg) | {"epochs_run": epochs},
        "train_examples": result.train_docs,
        "heldout_examples": result.heldout_docs,
        "train_words": result.train_words,
        "skipped": result.skipped,
        "confounds": figures,
        "warnings": result.warnings,
        "heldout_metrics": result.metrics.to_dict() if result.metrics else None,
        "heldout_histogram": result.histogram,
    }


def _drop_shared(pos: Examples, neg: Examples) -> tuple[Examples, Examples]:
    """An example given as both good and bad teaches nothing: remove it from both classes, counted."""
    both = set(pos.lines) & set(neg.lines)
    for name, ex in (("positive", pos), ("negative", neg)):
        if not ex.lines:
            raise UsageError(f"the {name} class has no documents: {ex.summary()}")
    if not both:
        return pos, neg
    out = []
    for name, ex in (("positive", pos), ("negative", neg)):
        kept = ex.subset([i for i, x in enumerate(ex.lines) if x not in both])
        kept.skipped = ex.skipped.copy()
        kept.skipped["in_both_classes"] += len(both)
        if not kept.lines:
            raise UsageError(f"the {name} class has no examples left: all {len(ex.lines):,} are also in the other class "
                             "(the same files as both?); give the two classes different texts")
        out.append(kept)
    return out[0], out[1]


def _fit(fasttext, examples: list[str], staged: str, cfg: TrainConfig, epochs: int, verbose: int = 0) -> None:
    """Train and save the model at `staged`, a file in the staging folder beside --out (published by `train`)."""
    data = os.path.join(os.path.dirname(staged), "train.txt")
    with open(data, "w", encoding="utf-8") as f:
        f.write("\n".join(examples) + "\n")
    ft = fasttext.train_supervised(
        input=data, lr=cfg.lr, dim=cfg.dim, epoch=epochs, wordNgrams=cfg.word_ngrams, bucket=cfg.bucket,
        minCount=cfg.min_count, thread=cfg.threads, seed=cfg.seed, loss="softmax", verbose=verbose,
    )
    os.remove(data)
    ft.save_model(staged)


def spread_warnings(hist: dict) -> list[str]:
    """A warning when the classes' held-out scores sit close together: a ranking with no usable margin."""
    pos, neg = hist["positive_quantiles"]["p50"], hist["negative_quantiles"]["p50"]
    if pos - neg < 0.2:
        return [f"spread: the median held-out positive scores {pos:.4f} and the median negative {neg:.4f}: no "
                "threshold separates the classes with a margin; train longer (--epoch) or on more examples"]
    return []


def evaluate_model(
    model_path: str,
    positive: str | list[str] | Examples,
    negative: str | list[str] | Examples,
    threshold: float = 0.5,
    text_key: str = "text",
    chunk_words: int = CHUNK_WORDS,
) -> tuple[Metrics, np.ndarray, np.ndarray, dict[str, Examples]]:
    """Score labelled examples with a saved model: metrics, scores, labels, and the examples read."""
    model = QualityModel(model_path)
    pos, neg = (c if isinstance(c, Examples) else load_examples(c, text_key, chunk_words) for c in (positive, negative))
    for name, corpus in (("positive", pos), ("negative", neg)):
        if not corpus.lines:
            raise UsageError(f"the {name} class has no documents: {corpus.summary()}")
    scores = model.score_lines(pos.lines + neg.lines)
    labels = np.r_[np.ones(len(pos.lines), bool), np.zeros(len(neg.lines), bool)]
    return evaluate(scores, labels, threshold), scores, labels, {"positive": pos, "negative": neg}
