"""Bad config values are a clear error when a step, reader or writer is built, before any work."""

from __future__ import annotations

import pytest

from curate import dedup, extract, filters, quality, writers
from curate.cli.main import main as cli
from curate.core.errors import UsageError
from curate.decontam.step import Decontaminate

# (class name, parameter name, constructor call): one representative bad value per parameter family.
BAD = [
    ("GopherQuality", "min_words", lambda: filters.GopherQuality(min_words=-5)),
    ("GopherQuality", "max_words", lambda: filters.GopherQuality(max_words=1.5)),
    ("GopherQuality", "min_words", lambda: filters.GopherQuality(min_words=200, max_words=100)),
    ("GopherQuality", "min_mean_word_length", lambda: filters.GopherQuality(min_mean_word_length=12)),
    ("GopherQuality", "max_hash_ratio", lambda: filters.GopherQuality(max_hash_ratio=-0.1)),
    ("GopherQuality", "max_bullet_lines_ratio", lambda: filters.GopherQuality(max_bullet_lines_ratio=1.2)),
    ("GopherQuality", "min_alpha_words_ratio", lambda: filters.GopherQuality(min_alpha_words_ratio="0.8")),
    ("GopherQuality", "min_stop_words", lambda: filters.GopherQuality(min_stop_words=True)),
    ("GopherQuality", "stop_words", lambda: filters.GopherQuality(stop_words="the and of")),
    ("GopherQuality", "default_lang", lambda: filters.GopherQuality(default_lang="")),
    ("GopherQuality", "punctuation_counts_as_words", lambda: filters.GopherQuality(punctuation_counts_as_words=1)),
    ("GopherRepetition", "max_dup_line_frac", lambda: filters.GopherRepetition(max_dup_line_frac=1.5)),
    ("GopherRepetition", "max_top_ngram_char_frac", lambda: filters.GopherRepetition(max_top_ngram_char_frac={1: 0.2})),
    ("GopherRepetition", "max_dup_ngram_char_frac", lambda: filters.GopherRepetition(max_dup_ngram_char_frac={5: 2})),
    ("GopherRepetition", "max_dup_ngram_char_frac", lambda: filters.GopherRepetition(max_dup_ngram_char_frac=0.1)),
    ("C4", "min_words_per_line", lambda: filters.C4(min_words_per_line="x")),
    ("C4", "min_sentences", lambda: filters.C4(min_sentences=-1)),
    ("C4", "max_word_length", lambda: filters.C4(max_word_length=None)),
    ("C4", "remove_citations", lambda: filters.C4(remove_citations="yes")),
    ("C4", "end_marks", lambda: filters.C4(end_marks=[".", ""])),
    ("C4", "bad_words_languages", lambda: filters.C4(bad_words_languages=("xx",))),
    ("C4", "default_lang", lambda: filters.C4(default_lang=None)),
    ("FineWeb", "min_punct_line_ratio", lambda: filters.FineWeb(min_punct_line_ratio=12)),
    ("FineWeb", "short_line_chars", lambda: filters.FineWeb(short_line_chars=-30)),
    ("FineWeb", "max_newline_word_ratio", lambda: filters.FineWeb(max_newline_word_ratio=float("nan"))),
    ("FineWeb", "punct_exclude_zero", lambda: filters.FineWeb(punct_exclude_zero=None)),
    ("FineWeb", "end_chars", lambda: filters.FineWeb(end_chars=())),
    ("Language", "threshold", lambda: filters.Language(["en"], threshold=1.5)),
    ("Language", "languages", lambda: filters.Language("en")),
    ("Language", "languages", lambda: filters.Language(["english"])),
    ("Language", "languages", lambda: filters.Language([])),
    ("Language", "max_chars", lambda: filters.Language(max_chars=0)),
    ("Language", "model_path", lambda: filters.Language(model_path=3)),
    ("BadWords", "languages", lambda: filters.BadWords(languages=["xx"])),
    ("BadWords", "lists", lambda: filters.BadWords(lists={"en": "/no/such/list.txt"})),
    ("BadWords", "lists", lambda: filters.BadWords(lists=["a", "b"])),
    ("BadWords", "default_lang", lambda: filters.BadWords(default_lang=5)),
    ("Url", "blocked_domains", lambda: filters.Url(blocked_domains="/no/such/domains.txt")),
    ("Url", "banned_words", lambda: filters.Url(banned_words=["ok", 3])),
    ("Url", "min_soft_banned_words", lambda: filters.Url(min_soft_banned_words=0)),
    ("Pii", "emails", lambda: filters.Pii(emails="no")),
    ("Pii", "ip_placeholder", lambda: filters.Pii(ip_placeholder=None)),
    ("Classifier", "threshold", lambda: quality.Classifier("m.bin", threshold=1.5)),
    ("Classifier", "top_fraction", lambda: quality.Classifier("m.bin", top_fraction=0)),
    ("Classifier", "model_path", lambda: quality.Classifier(None, threshold=0.5)),
    ("Decontaminate", "mode", lambda: Decontaminate("idx", mode="mask")),
    ("Decontaminate", "window_chars", lambda: Decontaminate("idx", window_chars=-1)),
    ("Decontaminate", "max_pieces", lambda: Decontaminate("idx", max_pieces=0)),
    ("Decontaminate", "min_chars_left", lambda: Decontaminate("idx", min_chars_left=2.5)),
    ("Decontaminate", "index_path", lambda: Decontaminate(None)),
    ("Exact", "key", lambda: dedup.Exact(key="body")),
    ("Exact", "keep", lambda: dedup.Exact(keep="random")),
    ("Exact", "partitions", lambda: dedup.Exact(partitions=6)),
    ("MinHash", "bands", lambda: dedup.MinHash(bands=0)),
    ("MinHash", "bands", lambda: dedup.MinHash(bands=300, rows=1)),
    ("MinHash", "rows", lambda: dedup.MinHash(rows=2.0)),
    ("MinHash", "ngram", lambda: dedup.MinHash(ngram=0)),
    ("MinHash", "seed", lambda: dedup.MinHash(seed=-1)),
    ("MinHash", "threshold", lambda: dedup.MinHash(threshold=0)),
    ("MinHash", "keep", lambda: dedup.MinHash(keep="longer")),
    ("MinHash", "partitions", lambda: dedup.MinHash(partitions=0)),
    ("MinHash", "batch_docs", lambda: dedup.MinHash(batch_docs=0)),
    ("Trafilatura", "timeout", lambda: extract.Trafilatura(timeout=-1)),
    ("Trafilatura", "max_html_chars", lambda: extract.Trafilatura(max_html_chars=0)),
    ("Trafilatura", "min_chars", lambda: extract.Trafilatura(min_chars=-1)),
    ("Trafilatura", "max_depth", lambda: extract.Trafilatura(max_depth="512")),
    ("Trafilatura", "favor_precision", lambda: extract.Trafilatura(favor_precision="true")),
    ("Resiliparse", "main_content", lambda: extract.Resiliparse(main_content=None)),
    ("Parquet", "compression", lambda: writers.Parquet(compression="zip")),
    ("Parquet", "compression_level", lambda: writers.Parquet(compression_level="high")),
    ("Parquet", "compression_level", lambda: writers.Parquet(compression="snappy")),
    ("Parquet", "max_shard_chars", lambda: writers.Parquet(max_shard_chars=0)),
    ("Parquet", "row_group_docs", lambda: writers.Parquet(row_group_docs=-10)),
]


@pytest.mark.parametrize(("cls", "param", "make"), BAD, ids=[f"{c}-{p}-{i}" for i, (c, p, _) in enumerate(BAD)])
def test_bad_value_names_the_step_and_parameter(cls, param, make):
    with pytest.raises(ValueError) as e:  # UsageError is a ValueError: `curate` prints it as one line
        make()
    message = str(e.value)
    assert message.startswith(f"{cls}: ") and param in message and "\n" not in message, message


def test_messages_say_what_is_expected():
    with pytest.raises(UsageError, match=r"^GopherQuality: min_words must be an integer >= 0, got -5$"):
        filters.GopherQuality(min_words=-5)
    with pytest.raises(UsageError, match=r"^Language: threshold must be a number in \[0, 1\], got 1.5$"):
        filters.Language(["en"], threshold=1.5)
    with pytest.raises(UsageError, match=r"min_words must be <= max_words, got 200 > 100"):
        filters.GopherQuality(min_words=200, max_words=100)
    with pytest.raises(UsageError, match=r"one string, not a list"):
        filters.Language("en")


def test_good_values_are_accepted(tmp_path):
    words = tmp_path / "words.txt"
    words.write_text("spam\n")
    filters.GopherQuality(min_words=0, max_words=0, max_hash_ratio=2, stop_words={"pt": ["de", "a"]})
    filters.GopherRepetition(max_top_ngram_char_frac={}, max_dup_ngram_char_frac={5: 0})
    filters.C4(min_words_per_line=3, min_sentences=5, end_marks=(".", "'"), bad_words_languages=(), max_word_length=0)
    filters.C4(require_terminal_punct=False, end_marks=())
    filters.FineWeb(max_newline_word_ratio=1.5)
    filters.Language(None, threshold=0)
    filters.Language(["eng_Latn"], model_path=tmp_path / "glotlid.bin")  # another model: its own labels
    filters.BadWords(languages=["pt", "de"])
    filters.BadWords(languages=["xx"], lists={"xx": str(words), "yy": ["foo", "bar baz"]})
    filters.Url(blocked_domains=str(words), blocked_urls=(u for u in ["a.com/x"]), soft_banned_words=["a", ""])
    filters.Pii(email_placeholder="")
    quality.TopFraction("m.bin", fraction=1)
    Decontaminate(tmp_path / "idx", mode="redact", window_chars=0)
    dedup.Exact(key="text+url", keep="quality", partitions=8)
    dedup.MinHash(bands=256, rows=1, threshold=1, seed=2**32 - 1)
    extract.Resiliparse(timeout=0, min_chars=0)
    writers.Parquet(compression="SNAPPY", compression_level=None)
    writers.Parquet(compression="gzip", compression_level=None)


def test_curate_run_reports_a_bad_value_as_one_line(tmp_path, capsys):
    pipe = tmp_path / "bad.py"
    pipe.write_text(
        "from curate import Pipeline, filters, readers\n"
        "pipeline = Pipeline(name='bad', reader=readers.Jsonl(), steps=[filters.Language(['en'], threshold=1.5)])\n"
    )
    out = tmp_path / "out"
    assert cli(["run", str(pipe), "--input", str(tmp_path / "*.jsonl"), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "Language: threshold must be a number in [0, 1], got 1.5" in err and str(pipe) in err
    assert not out.exists()  # no work was done


def test_curate_run_reports_a_bad_argument_as_one_line(tmp_path, capsys):
    pipe = tmp_path / "typo.py"
    pipe.write_text(
        "from curate import Pipeline, filters, readers\n"
        "pipeline = Pipeline(name='typo', reader=readers.Jsonl(), steps=[filters.GopherQuality(min_word=5)])\n"
    )
    assert cli(["run", str(pipe), "--input", "x.jsonl", "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "min_word" in err, err


# ---- the trainer (issue 29): a bad value is one line when the command line is read, before any work ---------------

TRAIN_BAD = [
    (["--micro_batch", "3"], "batch_tokens (4096) must be a multiple of micro_batch * seq_len"),
    (["--n_head", "3"], "n_embd (128) must be a multiple of n_head (3)"),
    (["--n_embd", "64", "--n_head", "64"], "head size n_embd / n_head = 64 / 64 = 1 must be even"),
    (["--lr", "nan"], "lr must be a finite number, got nan"),
    (["--muon_lr", "inf"], "muon_lr must be a finite number, got inf"),
    (["--seed", "-1"], "seed must be in [0, 2147483647], got -1"),
    (["--source_weights", "web=nan"], "source_weights must be finite, >= 0 and not all 0, got web=nan"),
    (["--source_weights", "web=0"], "source_weights must be finite, >= 0 and not all 0"),
    (["--device", "gpu"], "device = 'gpu' is not one of auto, cpu, cuda, cuda:N"),
    (["--beta2", "1.5"], "beta2 must be in [0, 1], got 1.5"),
    (["--stpes", "3"], "did you mean 'steps'"),
]


@pytest.mark.parametrize(("flags", "message"), TRAIN_BAD, ids=[" ".join(f) for f, _ in TRAIN_BAD])
def test_trainer_values_are_refused_as_parsed_in_one_line(flags, message, tmp_path, capsys):
    from train.__main__ import main as train_main

    out = tmp_path / "run"
    with pytest.raises(SystemExit) as e:
        train_main(["--config", "tiny", "--data", str(tmp_path / "tokens"), "--out", str(out), *flags])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m train: error: ") and message in err, err
    assert not out.exists()  # refused before anything was looked at or made


def test_trainer_micro_batch_is_checked_against_the_world_torchrun_gives(tmp_path, monkeypatch, capsys):
    from train.__main__ import main as train_main

    args = ["--config", "tiny", "--data", str(tmp_path), "--micro_batch", "32"]  # 32 * 128 = 4096: one process only
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(SystemExit):
        train_main(args)
    assert "(32 * 128 * 2 = 8192)" in capsys.readouterr().err
