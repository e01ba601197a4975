"""Models that steps download once and then load from the user cache, verified by sha256.

Nothing downloads at run time: `curate models fetch NAME` puts a model in the cache (from its official
address, or from a local file or URL with `--from`), and steps only read it. A step that cannot find
its model fails with one error that names the command to run.

A model or index the user names by an fsspec URL (`s3://…`, a cluster with no shared disk) is the one
exception: `local_copy` downloads it to the cache once per machine and every worker loads that copy
(fastText and memory-mapped arrays need a local file).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import re
import shutil
import tempfile
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from curate.io import fs


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


# A model the registry does not know (any fastText LID model: GlotLID, OpenLID, a model of your own) is
# fetched under a name of the user's: `curate models fetch glotlid --from model.bin`. Its sha256 is recorded
# beside it at fetch time (there is no published one to check against) and `models list` shows it.
_USER_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


def model_spec(name: str) -> ModelSpec:
    """The registry's spec for `name`, or the spec of a user-named model (`<name>.bin`, no known sha256)."""
    if name in MODELS:
        return MODELS[name]
    if not _USER_NAME.fullmatch(name):
        raise ValueError(f"model name {name!r}: use lower-case letters, digits, '.', '_' or '-' (at most 64)")
    env = "PENEIRA_MODEL_" + re.sub(r"[^A-Z0-9]", "_", name.upper())
    return ModelSpec(name=name, filename=f"{name}.bin", url="", sha256="", env=env,
                     about="a fastText model fetched with --from (sha256 recorded at fetch)")


def user_models() -> list[str]:
    """Names of the user-named models in the cache (those with a recorded sha256)."""
    root = cache_dir()
    if not root.is_dir():
        return []
    return sorted(p.name.removesuffix(".bin.sha256") for p in root.glob("*.bin.sha256")
                  if p.name.removesuffix(".bin.sha256") not in MODELS)


def recorded_sha256(name: str) -> str | None:
    """The sha256 recorded when a user-named model was fetched (None for registry models or if absent)."""
    side = cached_path(name).with_name(model_spec(name).filename + ".sha256")
    return side.read_text().split()[0] if side.is_file() else None


def cache_dir() -> Path:
    """$PENEIRA_CACHE, else $XDG_CACHE_HOME/peneira, else ~/.cache/peneira; models go in `models/`."""
    root = os.environ.get("PENEIRA_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "peneira"
    )
    return Path(root) / "models"


def cached_path(name: str) -> Path:
    return cache_dir() / model_spec(name).filename


def resolve(name: str, path: str | os.PathLike | None = None) -> Path:
    """The model file to load: `path` if given, else $<env>, else the cache. Raises ModelMissing."""
    spec = model_spec(name)
    if path is not None:
        given, origin = os.fspath(path), "the given model_path"
    elif os.environ.get(spec.env):
        given, origin = os.environ[spec.env], f"${spec.env}"
    else:
        given, origin = str(cached_path(name)), "the model cache"
    where = Path(given).expanduser()
    if fs.is_url(given):  # a model at an fsspec URL: loaded from its local copy
        with contextlib.suppress(FileNotFoundError):
            where = Path(local_copy(given))
    if where.is_file():
        return where
    how = (f"run `curate models fetch {spec.name}` (or `curate models fetch {spec.name} --from FILE_OR_URL` offline)"
           if spec.url else f"run `curate models fetch {spec.name} --from FILE_OR_URL` (any fastText LID model)")
    raise ModelMissing(f"{spec.name} model not found at {given if fs.is_url(given) else where} ({origin}); {how}")


def sha256_of(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(name: str, source: str | None = None) -> Path:
    """Copy or download a model into the cache, verify its sha256, then move it into place atomically.

    A user-named model (not in MODELS) needs `source`; it must load as a fastText model with `__label__`
    labels, and its sha256 is written beside it (`<name>.bin.sha256`) instead of being checked."""
    spec = model_spec(name)
    if not (source or spec.url):
        raise ValueError(f"{name} is not a model the registry knows ({', '.join(sorted(MODELS))}): "
                         f"give the file with --from PATH_OR_URL")
    source = source or spec.url
    dest = cached_path(name)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{spec.filename}.")
    try:
        with os.fdopen(fd, "wb") as out:
            if source.startswith(("http://", "https://")):
                with urllib.request.urlopen(source, timeout=60) as resp:  # noqa: S310 (user-given URL)
                    shutil.copyfileobj(resp, out)
            else:  # a local file or any fsspec URL (s3://, gs://, file://)
                with fs.open(source if fs.is_url(source) else os.path.expanduser(source), "rb") as src:
                    shutil.copyfileobj(src, out)
        digest = sha256_of(tmp)
        if spec.sha256 and digest != spec.sha256:
            raise ValueError(f"{source}: sha256 {digest} does not match the {name} model's {spec.sha256}")
        if not spec.sha256:
            _check_fasttext_lid(tmp, source)
            dest.with_name(spec.filename + ".sha256").write_text(f"{digest}  {source}\n")
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return dest


def _check_fasttext_lid(path: str, source: str) -> None:
    """Refuse a file that is not a fastText classifier with `__label__` labels (a LID model)."""
    import fasttext

    try:
        labels = fasttext.load_model(path).get_labels()
    except Exception as e:  # fastText raises ValueError or RuntimeError for a file it cannot read
        raise ValueError(f"{source}: not a fastText model ({e})") from None
    if not labels or not all(str(x).startswith("__label__") for x in labels[:10]):
        raise ValueError(f"{source}: a fastText model without __label__ labels, not a language-ID classifier")


def local_copy(path: str | os.PathLike, files: Sequence[str] = ()) -> str:
    """A local path holding `path`: the path itself when it is local (plain, `file://`), else a copy in
    `<cache>/remote/`, downloaded once per machine and shared by every worker on it.

    With `files`, `path` is a directory and those of its files are copied (an index directory; its
    version is taken from `files[0]`, which its writer publishes last). The copy is keyed by the URL and
    the object's properties (`ukey`: ETag, size, modification time), so a replaced object is fetched
    again, and published by one rename, so concurrent workers never load a half-written copy.
    A missing object raises FileNotFoundError.
    """
    path = os.fspath(path)
    local = fs.local_path(path)
    if local is not None:
        return local
    store, inner = fs.url_to_fs(path)
    inner = inner.rstrip("/")
    version = store.ukey(posixpath.join(inner, files[0]) if files else inner)
    key = hashlib.sha256(f"{path}\n{version}".encode()).hexdigest()[:24]
    dest = cache_dir() / "remote" / key / posixpath.basename(inner)
    if dest.exists():
        return str(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".download-"))
    try:
        if files:
            for name in files:
                store.get_file(posixpath.join(inner, name), str(tmp / name))
            got = tmp
        else:
            got = tmp / "file"
            store.get_file(inner, str(got))
        try:
            os.rename(got, dest)
        except OSError:  # a directory another worker published first
            if not dest.exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return str(dest)
