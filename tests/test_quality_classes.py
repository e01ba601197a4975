"""`curate quality train` with one class inside the other (issue 36.5): a one-line error, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from curate.cli.main import main as cli
from curate.core.errors import UsageError
from curate.quality import confounds
from curate.quality.text import Examples


@pytest.fixture
def texts(shared: Path, tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "botchan.txt", tmp_path / "shakespeare.txt"
    a.write_text((shared / "text/clean_en/botchan_gutenberg8868.txt").read_text(encoding="utf-8")[:20_000])
    b.write_text((shared / "text/clean_en/tinyshakespeare.txt").read_text(encoding="utf-8")[:20_000])
    return a, b


@pytest.mark.parametrize("case", ["same_file", "positives_among_negatives", "negatives_among_positives"])
def test_class_inside_the_other_is_a_clear_error(texts, tmp_path, capsys, case):
    a, b = texts
    pos, neg, empty = {"same_file": ([a], [a], "positive"), "positives_among_negatives": ([a], [a, b], "positive"),
                       "negatives_among_positives": ([a, b], [b], "negative")}[case]
    argv = ["quality", "train", "--out", str(tmp_path / "m.bin")]
    for p in pos:
        argv += ["--positive", str(p)]
    for n in neg:
        argv += ["--negative", str(n)]
    assert cli(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"the {empty} class has no examples left" in err, err
    assert not (tmp_path / "m.bin").exists()


def test_confounds_refuse_an_empty_class():
    one = Examples(lines=["some words here"], group=[0], source=[0], files=["a.txt"])
    with pytest.raises(UsageError, match="negative class has no examples"):
        confounds(one, Examples())
