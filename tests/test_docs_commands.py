"""Issue 35, "done when": the commands the README and the docs give a newcomer work as written.

Two checks. Every `curate …` line of the README's command block parses with `curate`'s own argument parser
(placeholders such as `…` and `DIR` are just values to it), so a renamed command or option is caught in a
second. And, after the demo is built once per session by the Makefile's own `demo` recipe, every command the
README, the docs and `make demo`'s closing lines tell a user to run on `demo/` is run literally, in a folder
laid out as the repository is, with the venv's `bin` first on PATH (what `. .venv/bin/activate` does).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from curate.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _readme_block_commands() -> list[str]:
    """The `curate` lines of the README's code blocks, comments and optional brackets removed."""
    text = (ROOT / "README.md").read_text()
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line.startswith("curate "):
                line = re.sub(r"\[([^\]]*)\]", r"\1", line)  # [--limit N]: the option, given
                lines.append(re.sub(r"(?<= )N\b", "10", line))  # the placeholder of a count
    return lines


def test_every_curate_line_of_the_readme_parses():
    lines = _readme_block_commands()
    assert len(lines) >= 10, lines  # the extraction found the block
    parser = build_parser()
    for line in lines:
        try:
            parser.parse_args(shlex.split(line)[1:])
        except SystemExit:
            pytest.fail(f"README: `{line}` does not parse with curate's arguments")


def demo_commands() -> list[str]:
    """What a newcomer is told to run on the demo's output: commands in backticks or code lines of the README and
    docs that start with `curate` or `python -m train` and read `demo/`, and the next steps `make demo` prints."""
    found = []
    for path in DOCS:
        text = path.read_text()
        spans = re.findall(r"`((?:curate|python -m train) [^`]*)`", text)
        spans += [re.sub(r"\s+#.*$", "", x).strip() for x in re.findall(r"^((?:curate|python -m train) .*)$", text, re.M)]
        found += [s for s in spans if re.search(r"(^|[ =])demo/", s)]
    make = (ROOT / "Makefile").read_text()
    tail = make.split('next: ', 1)[1].split("\n\n", 1)[0]
    for echo in re.findall(r'@echo "  ((?:curate|python)[^"]*)"', tail):
        found += [c.strip().replace("$(DEMO)", "demo") for c in echo.split(";")]
    return list(dict.fromkeys(found))


def test_the_extraction_finds_the_commands_a_newcomer_is_given():
    cmds = demo_commands()
    for expected in ("curate stats demo/curated", "curate inspect demo/curated --rejected -n 5",
                     "curate dedup-report demo/curated", "curate decontam report demo/curated"):
        assert expected in cmds
    assert any(c.startswith("python -m train sample") for c in cmds)
    assert any(c.startswith("python -m train eval demo/run") for c in cmds)


def _makefile_demo_recipe(shared: Path) -> list[str]:
    """The `demo:` recipe of the Makefile, its variables filled in as make would (the language-ID model from the
    shared data: no test touches the internet), the `rm -rf` of a fresh folder and the echo lines left out."""
    make = (ROOT / "Makefile").read_text()
    recipe = make.split("\ndemo:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    subs = {"$(CURATE)": str(BIN / "curate"), "$(PY)": str(BIN / "python"), "$(DEMO)": "demo",
            "$(LID_FROM)": f"--from {shared / 'models' / 'lid.176.ftz'}"}
    out, pending = [], ""
    for raw in recipe:
        line = raw.strip()
        if not line or line.startswith(("#", "@", "rm -rf")):
            continue
        pending += line.rstrip("\\") + " "
        if not line.endswith("\\"):
            for k, v in subs.items():
                pending = pending.replace(k, v)
            out.append(pending.strip())
            pending = ""
    return out


def _env() -> dict:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": "",
            "PENEIRA_DEMO": "demo"}


@pytest.fixture(scope="session")
def built_demo(tmp_path_factory, shared) -> Path:
    """A folder laid out as the repository (pipelines/ and train/ linked) with demo/ built by the Makefile's recipe.
    PENEIRA_TEST_DEMO_ROOT names a folder that already holds a built demo/ (to iterate on the docs quickly)."""
    given = os.environ.get("PENEIRA_TEST_DEMO_ROOT")
    if given:
        return Path(given)
    work = tmp_path_factory.mktemp("newcomer")
    for name in ("pipelines", "train"):
        (work / name).symlink_to(ROOT / name)
    for cmd in _makefile_demo_recipe(shared):
        done = subprocess.run(cmd, shell=True, cwd=work, env=_env(), capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, f"make demo's `{cmd}` failed:\n{done.stderr[-3000:]}"
    return work


@pytest.mark.slow
def test_every_command_given_for_the_demo_runs_as_written(built_demo):
    cmds = demo_commands()
    failed = []
    for cmd in cmds:
        if cmd.startswith("curate view "):  # a server: it must come up and answer its first page, then it is stopped
            problem = _serves(cmd, built_demo)
            if problem:
                failed.append(f"`{cmd}` {problem}")
            continue
        done = subprocess.run(cmd, shell=True, cwd=built_demo, env=_env(), capture_output=True, text=True,
                              timeout=900)
        if done.returncode != 0:
            failed.append(f"`{cmd}` exited {done.returncode}: {done.stderr.strip()[-500:]}")
    assert not failed, "\n".join(failed)


def _serves(cmd: str, cwd: Path) -> str | None:
    """Start a `curate view` command as written but on a free port (`--port 0`: the docs' default port may be taken
    on a test machine), read the address it prints, GET its first page; None when that answered 200."""
    import urllib.request

    args = [*shlex.split(re.sub(r"\s+#.*$", "", cmd)), "--port", "0"]
    args[0] = str(BIN / args[0])  # the venv's command, as _env puts it first on PATH
    proc = subprocess.Popen(args, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # "curate view: http://127.0.0.1:PORT/ (...)", or nothing when it failed
        url = re.search(r"http://\S+", line)
        if not url:
            return f"did not start: {proc.communicate(timeout=60)[1].strip()[-500:]}"
        with urllib.request.urlopen(url.group(0), timeout=120) as reply:
            return None if reply.status == 200 else f"answered {reply.status}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
