"""Models that steps download once and then load from the user cache, verified by sha256.

Nothing downloads at run time: `curate models fetch NAME` puts a model in the cache (from its official
address, or from a local file or URL with `--from`), and steps only read it. A step that cannot find
its model fails with one error that names the command to run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelSpec:
    name: str
    filename: str
    url: str
    sha256: str
    env: str  # environment variable that points at the file instead of the cache
    about: str


MODELS = {
    "lid": ModelSpec(
        name="lid",
        filename="lid.176.ftz",
        url="https://dl.fbaipublicfiles.com/fasttext/supervised-models/lid.176.ftz",
        sha256="8f3472cfe8738a7b6099e8e999c3cbfae0dcd15696aac7d7738a8039db603e83",
        env="PENEIRA_LID_MODEL",
        about="fastText language identification, 176 languages (compressed, 917 KiB; CC BY-SA 3.0)",
    ),
}


class ModelMissing(FileNotFoundError):
    """A model is not where it was looked for; the message says how to get it."""


def cache_dir() -> Path:
    """$PENEIRA_CACHE, else $XDG_CACHE_HOME/peneira, else ~/.cache/peneira; models go in `models/`."""
    root = os.environ.get("PENEIRA_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "peneira"
    )
    return Path(root) / "models"


def cached_path(name: str) -> Path:
    return cache_dir() / MODELS[name].filename


def resolve(name: str, path: str | os.PathLike | None = None) -> Path:
    """The model file to load: `path` if given, else $<env>, else the cache. Raises ModelMissing."""
    spec = MODELS[name]
    if path is not None:
        where, origin = Path(path).expanduser(), "the given model_path"
    elif os.environ.get(spec.env):
        where, origin = Path(os.environ[spec.env]).expanduser(), f"${spec.env}"
    else:
        where, origin = cached_path(name), "the model cache"
    if not where.is_file():
        raise ModelMissing(
            f"{spec.name} model not found at {where} ({origin}); run `curate models fetch {spec.name}` "
            f"(or `curate models fetch {spec.name} --from FILE_OR_URL` offline)"
        )
    return where


def sha256_of(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(name: str, source: str | None = None) -> Path:
    """Copy or download a model into the cache, verify its sha256, then move it into place atomically."""
    spec = MODELS[name]
    source = source or spec.url
    dest = cached_path(name)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{spec.filename}.")
    try:
        with os.fdopen(fd, "wb") as out:
            if "://" in source:
                with urllib.request.urlopen(source, timeout=60) as resp:  # noqa: S310 (user-given URL)
                    shutil.copyfileobj(resp, out)
            else:
                with open(os.path.expanduser(source), "rb") as src:
                    shutil.copyfileobj(src, out)
        digest = sha256_of(tmp)
        if digest != spec.sha256:
            raise ValueError(f"{source}: sha256 {digest} does not match the {name} model's {spec.sha256}")
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return dest
