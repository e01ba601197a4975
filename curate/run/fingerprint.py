"""Resume fingerprints: what a rerun compares with the run it would resume, so two runs are never mixed.

What is fingerprinted is declared, not guessed:

* a step's (or reader's) parameters by their values (`core.validate.describe`); those it names in
  `file_params` (models, indexes, word lists) by the *content* of the file or directory they name, a
  URL by its store's version (`ukey`: the ETag on S3). Any other string is only a string: C4's
  `end_marks=(".", …)` is never the current directory;
* a function (a function step, a user step class's methods) by its code and by the values it reads:
  defaults, closure cells, and the globals and module attributes its code names, followed through the
  functions, classes and user modules they lead to (at most `MAX_DEPTH` levels, `MAX_ITEMS` values).
  Library code (the standard library, site-packages, curate) counts by its name. A value that cannot be
  fingerprinted soundly (a loaded model, an open file) makes the run unresumable, with the reason;
* the inputs by size and modification time (and the ETag on object stores), so an input rewritten in
  place is refused rather than half its documents coming from each version.

File digests are cached by (path, size, mtime) inside one `Fingerprinter`, which a run seeds from the
config its previous attempt stored: a rerun does not read a model again, and nothing is process-global.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import decimal
import enum
import fractions
import functools
import hashlib
import inspect
import itertools
import logging
import os
import posixpath
import re
import sys
import sysconfig
import types
import uuid
from typing import Any

from curate.core.validate import describe
from curate.io import fs

MAX_DEPTH = 8  # values followed from a function: globals -> module attribute -> function -> … at most this deep
MAX_ITEMS = 200_000  # values fed per fingerprint; a function reading more is refused rather than slowed down
HTTP_STATS_IN_FLIGHT = 16  # HEAD requests at once when fingerprinting https inputs (a snapshot has ~90,000 files)
MAX_DIR_FILES = 100  # a directory parameter with more files is fingerprinted by its listing (names, sizes, mtimes)
_SIMPLE = (int, float, complex, str, bytes, bool, type(None))
# library values whose repr is their whole value
_VALUE_TYPES = (enum.Enum, datetime.date, datetime.time, datetime.timedelta, decimal.Decimal, fractions.Fraction,
                uuid.UUID, range, slice)
_LIB_ROOTS = tuple(sorted({os.path.realpath(p) for k, p in sysconfig.get_paths().items()
                           if k in ("stdlib", "platstdlib", "purelib", "platlib")}))


class Unfingerprintable(Exception):
    """A value resume cannot fingerprint soundly; the message says which and why."""


def is_library(module: str | None) -> bool:
    """Code that is versioned with an installation (stdlib, site-packages, curate): counted by its name only."""
    if module in (None, "__pipeline__", "__main__"):
        return False
    top = module.split(".")[0]
    if top in ("curate", "builtins") or top in sys.stdlib_module_names:
        return True
    path = getattr(sys.modules.get(module), "__file__", None)
    return path is not None and os.path.realpath(path).startswith(_LIB_ROOTS)


class Fingerprinter:
    """Fingerprints of one run's pipeline and inputs. `known` rows are digests an earlier attempt computed."""

    def __init__(self, known: list[list] | None = None):
        self.digests: dict[tuple[str, int, int], str] = {(p, s, m): d for p, s, m, d in known or []}

    def rows(self) -> list[list]:
        """The file digests, as JSON-able [path, size, mtime_ns, digest] rows (stored with a run's config)."""
        return [[*k, v] for k, v in sorted(self.digests.items())]

    # ------------------------------------------------------------ pipeline parts

    def component(self, obj: Any) -> tuple[str, list[str], dict[str, str]]:
        """`Class#code(param=value, …)` of a step or reader, the reasons it cannot be resumed (if any), and the
        values its code reads (`where` -> value, each shortened), which say what changed when one did."""
        walk = _Walk(self)
        try:
            return walk.component(obj), [], walk.reads
        except Unfingerprintable as e:
            return f"{describe(obj)} <unfingerprintable>", [f"{getattr(obj, 'name', type(obj).__name__)}: {e}"], {}

    def inputs(self, files: list[str]) -> list[list]:
        """[path, size, mtime, version] of each input: one stat per local file, one listing per remote folder,
        and over HTTP(S), which lists nothing (data.commoncrawl.org answers a folder with 404), one HEAD per file,
        `HTTP_STATS_IN_FLIGHT` at a time, each retried as every store read is."""
        remote: dict[str, dict] = {}
        out: list[list | None] = [None] * len(files)
        heads: list[tuple[int, Any, str]] = []
        for k, path in enumerate(files):
            local = fs.local_path(path)
            if local is not None:
                st = os.stat(local)
                out[k] = [path, st.st_size, st.st_mtime_ns, None]
                continue
            store, inner = fs.url_to_fs(path)
            if _lists_nothing(store):
                heads.append((k, store, inner))
                continue
            parent = posixpath.dirname(inner.rstrip("/"))
            if parent not in remote:
                remote[parent] = {e["name"].rstrip("/"): e for e in store.ls(parent, detail=True)}
            out[k] = _stat_row(path, remote[parent].get(inner.rstrip("/")) or store.info(inner))
        if heads:
            with concurrent.futures.ThreadPoolExecutor(HTTP_STATS_IN_FLIGHT) as pool:
                infos = pool.map(lambda h: fs.retrying(h[1].info, h[2]), heads)
                for (k, _, _), info in zip(heads, infos, strict=True):
                    out[k] = _stat_row(files[k], info)
        return out

    # ------------------------------------------------------------ files

    def path(self, value: str | os.PathLike) -> str:
        """A declared file, model or index parameter: its name and content digest (a URL: its version)."""
        path = os.fspath(value)
        local = fs.local_path(path)
        if local is None:
            return f"{path!r}@{self._remote(path)}"
        local = os.path.expanduser(local)
        if os.path.isdir(local):
            return f"{path!r}#{self._dir(local)}"
        if os.path.isfile(local):
            return f"{path!r}#{self._file(local)}"
        return f"{path!r}<missing>"

    def _remote(self, url: str) -> str:
        store, inner = fs.url_to_fs(url)
        if store.isdir(inner):
            entries = sorted(store.find(inner, detail=True).values(), key=lambda e: e["name"])
            h = hashlib.blake2b(digest_size=16)
            for e in entries:
                h.update(f"{e['name']}\0{e.get('ETag') or e.get('etag')}\0{e.get('size')}\0{_stamp(e)}\0".encode())
            return h.hexdigest()
        return str(store.ukey(inner))  # s3fs: the ETag; other stores: a hash of their info

    def _file(self, path: str) -> str:
        st = os.stat(path)
        key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
        if key not in self.digests:
            h = hashlib.blake2b(digest_size=16)
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            self.digests[key] = h.hexdigest()
        return self.digests[key]

    def _dir(self, path: str) -> str:
        """Index-sized directories (at most MAX_DIR_FILES files) by their files' content, larger ones by the
        names, sizes and mtimes of their top level (reading a whole data directory at every run would be slow)."""
        walk = (os.path.join(d, f) for d, _, names in os.walk(path) for f in names)
        files = sorted(itertools.islice(walk, MAX_DIR_FILES + 1))
        if len(files) > MAX_DIR_FILES:
            files = sorted(e.path for e in os.scandir(path))
            parts = [f"{os.stat(f).st_size}:{os.stat(f).st_mtime_ns}" for f in files]
        else:
            parts = [self._file(f) for f in files]
        h = hashlib.blake2b(digest_size=16)
        for f, part in zip(files, parts, strict=True):
            h.update(f"{os.path.relpath(f, path)}\0{part}\0".encode())
        return h.hexdigest()


def _lists_nothing(store: Any) -> bool:
    """HTTP(S) stores: fsspec lists a folder only by scraping an HTML index page, which file servers (and
    Common Crawl's) do not serve."""
    protocol = store.protocol if isinstance(store.protocol, tuple | list) else (store.protocol,)
    return any(p in ("http", "https") for p in protocol)


def _stat_row(path: str, info: dict) -> list:
    # the version: the ETag (S3, GCS, HTTP), or on the Hugging Face Hub (`hf://`) the git blob id, which changes
    # with the content (its listing carries no ETag and no modification time)
    return [path, info.get("size"), _stamp(info), info.get("ETag") or info.get("etag") or info.get("blob_id")]


def _stamp(info: dict) -> str | None:
    t = (info.get("LastModified") or info.get("mtime") or info.get("last_modified") or info.get("created")
         or info.get("Last-Modified"))  # the last: fsspec's HTTP info, the header as served
    return None if t is None else str(t)


class _Walk:
    """One fingerprint's walk through values: bounded in depth and in the number of values fed."""

    def __init__(self, owner: Fingerprinter):
        self.owner = owner
        self.items = 0
        self.active: set[int] = set()  # code objects, classes and modules on the current path (recursion)
        self.reads: dict[str, str] = {}  # the globals and closure values functions read, for messages

    def component(self, obj: Any) -> str:
        declared = set(getattr(obj, "file_params", ()))
        parts = []
        for k, v in vars(obj).items():
            if k.startswith("_"):
                continue
            text = self._declared(v) if k in declared else self.value(v, 1, k)
            parts.append(f"{k}={text}")
        return f"{type(obj).__name__}{self._class_code(type(obj), 1)}({', '.join(parts)})"

    def _declared(self, v: Any) -> str:
        """A declared parameter: a path is fingerprinted by content; a dict's path values too (word lists by
        language); a list is inline data."""
        if isinstance(v, (str, os.PathLike)):
            return self.owner.path(v)
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k!r}: {self._declared(x)}" for k, x in sorted(v.items(), key=str)) + "}"
        return self.value(v, 1, "parameter")

    def _class_code(self, cls: type, depth: int) -> str:
        own = [c for c in cls.__mro__ if not is_library(c.__module__)]
        if not own:
            return ""
        if id(cls) in self.active:  # a method naming its own class (`super()`, isinstance): the name is enough
            return "#recursive"
        self.active.add(id(cls))
        try:
            parts = []
            for c in own:
                for name, attr in sorted(vars(c).items()):
                    if name.startswith("__") and not inspect.isfunction(attr):
                        continue
                    parts.append(f"{name}={self.value(attr, depth + 1, f'{c.__qualname__}.{name}')}")
        finally:
            self.active.discard(id(cls))
        return "#" + hashlib.blake2b("\0".join(parts).encode(), digest_size=8).hexdigest()

    def value(self, v: Any, depth: int, where: str) -> str:
        self.items += 1
        if self.items > MAX_ITEMS:
            raise Unfingerprintable(f"reads more than {MAX_ITEMS:,} values (at {where})")
        if depth > MAX_DEPTH:
            raise Unfingerprintable(f"reads values nested deeper than {MAX_DEPTH} levels (at {where})")
        if isinstance(v, _SIMPLE) or v is Ellipsis:
            return repr(v)
        if isinstance(v, (set, frozenset, list, tuple, dict)) and len(v) > 64 and _plain(v):
            return _digest_plain(v)  # a word list or table: one value, whatever its length
        if isinstance(v, (set, frozenset)):
            return "{" + ", ".join(sorted(self.value(x, depth + 1, where) for x in v)) + "}"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(self.value(x, depth + 1, where) for x in v) + "]"
        if isinstance(v, dict):
            items = sorted(v.items(), key=lambda kv: repr(kv[0]))
            return "{" + ", ".join(f"{self.value(k, depth + 1, where)}: {self.value(x, depth + 1, f'{where}[{k!r}]')}"
                                   for k, x in items) + "}"
        if isinstance(v, os.PathLike):
            return repr(os.fspath(v))
        if isinstance(v, re.Pattern):
            return f"re({v.pattern!r}, {v.flags})"
        if isinstance(v, types.FunctionType):
            return self.function(v, depth)
        if isinstance(v, types.MethodType):
            return f"{self.value(v.__self__, depth + 1, where)}.{self.function(v.__func__, depth)}"
        if isinstance(v, functools.partial):
            return f"partial({self.value([v.func, v.args, v.keywords], depth + 1, where)})"
        if isinstance(v, types.ModuleType):
            return f"<module {v.__name__}>"  # its attributes count where code reads them (`_read`)
        if isinstance(v, (classmethod, staticmethod)):
            return f"{type(v).__name__}({self.value(v.__func__, depth + 1, where)})"
        if isinstance(v, property):
            return f"property({self.value([v.fget, v.fset, v.fdel], depth + 1, where)})"
        if isinstance(v, (types.BuiltinFunctionType, type)) and is_library(getattr(v, "__module__", None)):
            return f"<{getattr(v, '__module__', '')}.{getattr(v, '__qualname__', repr(v))}>"
        if isinstance(v, type):
            return f"<class {v.__qualname__}{self._class_code(v, depth)}>"
        if isinstance(v, _VALUE_TYPES):
            return repr(v)
        if isinstance(v, logging.Logger):  # logs, never results
            return f"<logger {v.name}>"
        if type(v).__module__ == "numpy" and hasattr(v, "tobytes"):  # an array or a numpy scalar
            return f"numpy({v.dtype}, {getattr(v, 'shape', ())}, {hashlib.blake2b(v.tobytes(), digest_size=16).hexdigest()})"
        if _is_component(v):
            return f"<{self.component(v)}>"
        if hasattr(v, "__dict__") and (not is_library(type(v).__module__) or type(v).__module__.startswith("curate.")):
            if id(v) in self.active:
                return f"<recursive {type(v).__qualname__}>"
            self.active.add(id(v))
            try:
                return f"<{self._object(v, depth, where)}>"
            finally:
                self.active.discard(id(v))
        raise Unfingerprintable(f"{where} is a {type(v).__module__}.{type(v).__qualname__} object, whose value resume "
                                "cannot check")

    def _object(self, v: Any, depth: int, where: str) -> str:
        return f"{type(v).__qualname__}{self._class_code(type(v), depth)}{self.value(dict(vars(v)), depth + 1, where)}"

    def function(self, fn: types.FunctionType, depth: int) -> str:
        if is_library(fn.__module__):
            return f"<{fn.__module__}.{fn.__qualname__}>"
        if id(fn.__code__) in self.active:  # recursion: the name is enough
            return f"<recursive {fn.__qualname__}>"
        self.active.add(id(fn.__code__))
        try:
            h = hashlib.blake2b(digest_size=8)
            names = _feed_code(fn.__code__, h)
            where = fn.__qualname__
            h.update(self.value([fn.__defaults__, fn.__kwdefaults__], depth + 1, f"{where} defaults").encode())
            for i, cell in enumerate(fn.__closure__ or ()):
                try:
                    contents = cell.cell_contents
                except ValueError:  # an empty cell (a name bound later)
                    h.update(b"<empty>")
                    continue
                h.update(self._read(contents, names, depth + 1, f"{where}: {fn.__code__.co_freevars[i]}").encode())
            g = fn.__globals__
            for name in sorted(names):
                if name in g:
                    h.update(f"{name}={self._read(g[name], names, depth + 1, f'{where}: global {name}')}".encode())
            return f"<{fn.__module__}.{fn.__qualname__}#{h.hexdigest()}>"
        finally:
            self.active.discard(id(fn.__code__))

    def _read(self, v: Any, names: set[str], depth: int, where: str) -> str:
        """A value a function reads (a global, a closure cell); for a user module, the attributes of it that the
        function's code names. Recorded in `reads`, so a refusal can say which value changed."""
        if isinstance(v, types.ModuleType) and not is_library(v.__name__):
            if id(v) in self.active:
                return f"<recursive module {v.__name__}>"
            self.active.add(id(v))
            try:
                attrs = [f"{a}={self._read(getattr(v, a), names, depth + 1, f'{where}.{a}')}"
                         for a in sorted(names) if hasattr(v, a) and not a.startswith("__")]
            finally:
                self.active.discard(id(v))
            return f"<module {v.__name__}: {', '.join(attrs)}>"
        text = self.value(v, depth, where)
        if not isinstance(v, types.ModuleType):
            self.reads[where] = _short(text)
        return text


def _plain(v: Any) -> bool:
    """A container of plain values only (strings, numbers), one level deep."""
    items = itertools.chain.from_iterable(v.items()) if isinstance(v, dict) else v
    return all(isinstance(x, _SIMPLE) for x in items)


def _digest_plain(v: Any) -> str:
    if isinstance(v, (set, frozenset)):
        text = "\0".join(sorted(map(repr, v)))
    elif isinstance(v, dict):
        text = "\0".join(sorted(f"{k!r}:{x!r}" for k, x in v.items()))
    else:
        text = "\0".join(map(repr, v))
    return f"{type(v).__name__}[{len(v)}]#{hashlib.blake2b(text.encode(), digest_size=16).hexdigest()}"


def _is_component(v: Any) -> bool:
    from curate.core.step import Step
    from curate.io.readers import Reader

    return isinstance(v, (Step, Reader))


def _feed_code(code: types.CodeType, h: Any) -> set[str]:
    """Bytecode, constants and names of a code object and the code objects nested in it; the names it reads.
    Line numbers and comments are left out: moving a function is no change."""
    h.update(code.co_code)
    h.update(" ".join(code.co_names + code.co_varnames + code.co_freevars).encode())
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _feed_code(const, h)
        else:
            h.update(re.sub(r" at 0x[0-9a-f]+", "", repr(const)).encode())
    return names


# ---------------------------------------------------------------- a run's config

FORMAT = "peneira.run-config/2"  # 1 (unnamed): steps by `describe` text, inputs by name only
# What a run writes (its marker, _work, first), and `curate report`'s files beside it
RUN_LAYOUT = ("_work", "_done", "stats", "data", "rejected", "stats.json", "manifest.json", "report", "report.md",
              "report.html")


def pipeline_config(fp: Fingerprinter, pipeline: Any, files: list[str], limit: int | None,
                    rejected: bool) -> tuple[dict, list[str]]:
    """What a rerun must match to resume a run, and the reasons it cannot be matched soundly (if any)."""
    reader, unsound, _ = fp.component(pipeline.reader)
    steps = []
    for s in pipeline.steps:
        text, why, reads = fp.component(s)
        steps.append([s.name, text, reads])
        unsound += why
    config = {"format": FORMAT, "pipeline": {"name": pipeline.name, "reader": reader, "steps": steps}, "inputs": fp.inputs(files),
              "limit": limit, "rejected": rejected}  # a resume without --rejected would leave rejected/ partial
    return config, unsound


def describe_change(old: dict, new: dict) -> str:
    """What differs between a stored config and this run's, in words; "" when nothing does."""
    old = _jsonable(old)
    new = _jsonable(new)
    if old == new:
        return ""
    if old.get("format") != new["format"]:
        return "it was made by an earlier version of curate, whose fingerprints cannot be compared"
    was, now = old.get("pipeline") or {}, new["pipeline"]
    if was.get("name") != now["name"]:
        return f"pipeline name was {was.get('name')!r}, now {now['name']!r}"
    if was.get("reader") != now["reader"]:
        return f"the reader differs: {was.get('reader')} then, {now['reader']} now"
    old_steps, new_steps = was.get("steps") or [], now["steps"]
    if [s[0] for s in old_steps] != [s[0] for s in new_steps]:
        return f"the steps differ: {', '.join(s[0] for s in old_steps)} then, {', '.join(s[0] for s in new_steps)} now"
    for (name, a, *a_reads), (_, b, b_reads) in zip(old_steps, new_steps, strict=True):
        if a == b:
            continue
        was_reads = a_reads[0] if a_reads else {}
        differ = [w for w in set(was_reads) | set(b_reads) if was_reads.get(w) != b_reads.get(w)]
        if differ:  # a value rather than a function that reads it (whose digest changes with it)
            where = min(differ, key=lambda w: (str(b_reads.get(w, "")).startswith("<"), w))
            return f"step {name!r}: {where} was {was_reads.get(where, '(not read)')}, now {b_reads.get(where, '(not read)')}"
        return f"step {name!r} changed, its parameters or its code: {_window(a, b)}"
    old_in, new_in = old.get("inputs") or [], new["inputs"]
    if old_in != new_in:
        old_paths = [r[0] if isinstance(r, list) else r for r in old_in]
        new_paths = [r[0] for r in new_in]
        if old_paths == new_paths:
            path = next(b[0] for a, b in zip(old_in, new_in, strict=True) if a != b)
            return f"input {path} was rewritten since the run began (its size, modification time or ETag differ)"
        added, gone = set(new_paths) - set(old_paths), set(old_paths) - set(new_paths)
        return f"the inputs differ: {len(added)} new, {len(gone)} gone"
    for key, flag in (("limit", "--limit"), ("rejected", "--rejected")):
        if old.get(key) != new.get(key):
            return f"{flag} was {old.get(key)}, now {new.get(key)}"
    if old.get("split_plan") != new.get("split_plan"):  # recorded by `Run` when a file is read in several tasks
        was_n, now_n = ((c or {}).get("tasks", "one per file") for c in (old.get("split_plan"), new.get("split_plan")))
        return (f"the inputs were split into other tasks ({was_n} then, {now_n} now: --tasks / --task-bytes "
                "must be what they were)")
    return "its config differs"


def _jsonable(config: dict) -> Any:
    """The config as it reads back from JSON (tuples as lists), so a fresh one compares equal to a stored one."""
    import json

    return json.loads(json.dumps(config, default=str))


def _short(text: str, n: int = 100) -> str:
    """A value as a message shows it: long ones by their start and a digest (still different when they differ)."""
    if len(text) <= n:
        return text
    return f"{text[:n - 20]}…#{hashlib.blake2b(text.encode(), digest_size=6).hexdigest()}"


def _window(a: str, b: str, width: int = 90) -> str:
    """`…old… -> …new…` around the first character where two descriptions differ."""
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, i - 30)

    def cut(t: str) -> str:
        return ("…" if start else "") + t[start:start + width] + ("…" if len(t) > start + width else "")

    return f"{cut(a)} -> {cut(b)}"
