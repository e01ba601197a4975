"""Issue 22 item 15: the trainer's command line tells a new user what it takes (subcommands, config keys,
shipped configs, what a mix folder is) and spells switches as `curate` does."""

from __future__ import annotations

import json

import pytest

from curate.cli.main import build_parser
from train.__main__ import COMMANDS, _train_args, main
from train.config import FIELDS, presets


def test_help_lists_subcommands_and_every_config_key(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for command in ("sample", "surprise", "plan", "eval", "ablate", "sweep-lr", *COMMANDS):
        assert f"\n  {command} " in out
    for key in FIELDS:
        assert f"--{key} " in out
    assert "AdamW peak learning rate" in out  # the comment beside the key in Config


def test_a_misspelt_config_name_lists_the_shipped_ones(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--config", "tiney", "--data", "x"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "did you mean 'tiny'" in err and "Errno" not in err
    assert all(name in err for name in presets()) and "tiny" in presets()


def test_data_on_a_mix_folder_says_what_it_is_and_what_to_run(tmp_path, capsys):
    mix = tmp_path / "mix"
    (mix / "data").mkdir(parents=True)
    (mix / "manifest.json").write_text(json.dumps({"kind": "mix", "complete": True, "outputs": []}))
    code = main(["--data", str(mix), "--out", str(tmp_path / "run"), "--device", "cpu", "--steps", "4",
                 "--warmup_steps", "1", "--no-progress", "--no-plots"])
    assert code == 2
    err = capsys.readouterr().err
    assert "`curate mix` output" in err and f"curate tokenize {mix}" in err and "format None" not in err


@pytest.mark.parametrize(("flags", "expect"), [([], True), (["--no-progress"], False), (["--progress"], True),
                                               (["--progress", "false"], False), (["--no-plots"], None)])
def test_progress_switches_are_spelt_alike_in_both_clis(flags, expect):
    cfg = _train_args(["--data", "x", *flags], "python -m train").cfg
    if expect is None:  # every boolean key is a switch
        assert cfg.plots is False and cfg.progress is True
        return
    assert cfg.progress is expect
    if flags != ["--progress", "false"]:
        assert build_parser().parse_args(["run", "p.py", *flags]).progress is expect
    for command in (["mix", "--source", "a=b:1", "--tokens", "1", "--out", "o"],
                    ["tokenize", "x", "--tokenizer", "t", "--out", "o"]):
        assert build_parser().parse_args([*command, "--no-progress"]).progress is False
