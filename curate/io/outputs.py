"""Output folders: every command writes into an empty folder or into its own earlier output, never beside
something else (a run into a mix's folder would leave the mix's stale shards among its own).

`claim` is the one rule for all of them (`curate run`, `mix`, `tokenize`, `decontam index`, `demo generate`):

* an empty or missing folder is taken;
* a folder holding the command's own earlier output (`own`, e.g. a run's config) is resumed or replaced by
  the command itself, which knows what "the same thing" means;
* a folder holding only what a start of the command killed before its marker was published leaves (the
  marker's temporary file, the folder made for it) is taken as empty (`unfinished_start`);
* anything else is refused with one line, unless the user passes `--overwrite`. Then the names the command
  writes (`layout`) are removed, its marker first, so a folder half-cleared by a kill is never taken for
  an output to resume. A name the command does not write (the user's own files) is never removed: its
  presence refuses `--overwrite` too, and nothing is removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import json
import os
import posixpath
import re
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence

from curate.core.errors import UsageError
from curate.io import fs


def claim(out: str, *, what: str, option: str, own: Callable[[], bool], layout: Sequence[str],
          overwrite: bool = False, marker: str | None = None) -> bool:
    """Make `out` ready for `what` (a command, e.g. "`curate run`"); True if it holds an earlier output of it
    to resume or replace. `layout`: the names (fnmatch patterns) the command writes at the top of `out`, its
    marker first; their temporary files (`NAME.tmp.*`, `.NAME.tmp.*`) count as its own too. `marker`: the file
    (relative to `out`, e.g. `_done/config.json`) whose publication makes the folder the command's; a folder
    holding nothing but that file's temporary files and the folder made for it is a start killed before it
    published the marker (`unfinished_start`): those are removed and the folder is taken as empty."""
    names = [n for n in fs.listdir(out) if n != LOCK_NAME and not (n == "_work" and _driver_record_only(out))]
    if not names:
        return False
    if overwrite:
        clear(out, names, what=what, option=option, layout=layout)
        return False
    if own():
        return True
    if marker is not None and unfinished_start(out, names, marker):
        for name in names:
            remove_tree(fs.join(out, name))
        return False
    raise UsageError(f"{out} is not empty and holds no earlier {what} output: choose an empty {option}, "
                     "or pass --overwrite to replace what is there")


DRIVER_RECORD = ("jobs.txt", "driver.json", "cancel")  # what `--detach` writes in `_work/slurm` before its driver


def _driver_record_only(out: str) -> bool:
    """Whether `out/_work` holds only the job record `--detach` wrote before submitting the driver that is now
    claiming `out` (`curate.run.executors.slurm.submit_recorded`): kept, and no sign of a foreign folder."""
    work = fs.join(out, "_work")
    if fs.listdir(work) != ["slurm"]:
        return False
    return set(fs.listdir(fs.join(work, "slurm"))) <= set(DRIVER_RECORD)


def unfinished_start(out: str, names: list[str], marker: str) -> bool:
    """Whether `out`, whose entries are `names`, holds only what a command killed while publishing its `marker`
    leaves: the marker's temporary files (`atomic_write_text`'s `NAME.tmp.PID`, `unique_tmp`'s `.NAME.tmp.N`)
    and, for a marker in a subfolder, that subfolder. Never a result: nothing is written before the marker."""
    parent, base = posixpath.split(marker)
    temp = re.compile(rf"\.?{re.escape(base)}\.tmp\.\d+")
    if parent:
        return names == [parent] and all(temp.fullmatch(n) for n in fs.listdir(fs.join(out, parent)))
    return all(temp.fullmatch(n) for n in names)


def clear(out: str, names: list[str], *, what: str, option: str, layout: Sequence[str]) -> None:
    """Remove the `layout` entries of `out`, the first (the marker) first; refuse, removing nothing, if it
    holds anything else."""
    names = [n for n in names if n != LOCK_NAME]
    patterns = [q for p in layout for q in (p, f"{p}.tmp.*", f".{p}.tmp.*")]
    foreign = sorted(n for n in names if not any(fnmatch.fnmatchcase(n, p) for p in patterns))
    if foreign:
        shown = ", ".join(foreign[:3]) + (f", … ({len(foreign)} in all)" if len(foreign) > 3 else "")
        raise UsageError(f"{out} holds files {what} does not write ({shown}); --overwrite removes only its own: "
                         f"move them away or choose another {option}")
    rank = {n: next((i for i, p in enumerate(patterns) if fnmatch.fnmatchcase(n, p)), len(patterns)) for n in names}
    for name in sorted(names, key=lambda n: (rank[n], n)):
        remove_tree(fs.join(out, name))


def remove_tree(path: str) -> None:
    """Remove a file or a folder with everything under it; a symbolic link is removed, never followed."""
    local = fs.local_path(path)
    if local is None:
        store, inner = fs.url_to_fs(path)
        if store.exists(inner):
            store.rm(inner, recursive=True)
        return
    if os.path.isdir(local) and not os.path.islink(local):
        shutil.rmtree(local)
    elif os.path.lexists(local):
        os.remove(local)



# --- The lock: one writer per output folder -----------------------------------------------------------------

LOCK_NAME = ".peneira.lock"  # inside the output folder; `claim` and `clear` never count or remove it
LEASE_SECONDS = float(os.environ.get("PENEIRA_LEASE_SECONDS", "120"))  # object stores: a lease not renewed expires


class OutputBusy(UsageError):
    """Another process holds the output folder."""


@contextlib.contextmanager
def locked(out: str, *, what: str) -> Iterator[None]:
    """Hold `out` exclusively while the block runs: a second command into the same folder is refused with one
    line naming the holder, before it reads or deletes anything. Creates `out` if it is missing.

    On a local disk (or a shared POSIX filesystem) it is an `flock` on `out/.peneira.lock`: the kernel drops it
    when the holder exits, however it exits (SIGKILL included), so a killed run never leaves a stale lock (only,
    after SIGKILL, the file, which the next holder takes and removes; a holder that exits removes it itself).
    On an object store, where nothing like flock exists, it is a lease object `out/.peneira.lock` holding an
    owner token and an expiry, renewed by a thread every third of `PENEIRA_LEASE_SECONDS` and deleted on exit;
    a lease older than its expiry is taken over (its holder died). Stores without conditional writes can let
    two takers race in the same instant: the taker re-reads the lease after writing it and only the token it
    reads back holds it, which narrows that window to the store's read-after-write delay.
    """
    fs.makedirs(out)
    local = fs.local_path(out)
    if local is not None:
        with _flock(os.path.join(local, LOCK_NAME), out, what):
            yield
    else:
        with _lease(fs.join(out, LOCK_NAME), out, what):
            yield


def _holder_text(info: dict) -> str:
    who = info.get("what", "another command")
    pid, host = info.get("pid"), info.get("host")
    since = info.get("since")
    when = f", since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(since))}" if since else ""
    return f"{who} (pid {pid} on {host}{when})" if pid else who


def _busy(out: str, info: dict) -> OutputBusy:
    return OutputBusy(f"{out} is in use by {_holder_text(info)}: wait for it to finish or stop it; two commands "
                      "never write into one output folder")


def _me(what: str, token: str = "") -> dict:
    return {"what": what, "pid": os.getpid(), "host": socket.gethostname(), "since": time.time(), "token": token}


@contextlib.contextmanager
def _flock(path: str, out: str, what: str) -> Iterator[None]:
    """The flock, on a lock file that exists only while it is held: the holder removes it before unlocking, so a
    folder a command was refused or finished leaves no `.peneira.lock` behind. Whoever opened the file before
    that removal and then got the lock holds a file no longer at `path`: it sees so (inode) and starts over."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
            except (OSError, ValueError):
                info = {}
            os.close(fd)
            raise _busy(out, info) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            here = os.stat(path)
            mine = os.fstat(fd)
            if (here.st_ino, here.st_dev) == (mine.st_ino, mine.st_dev):
                break
        except FileNotFoundError:
            pass
        os.close(fd)  # the file we locked was removed by its last holder: lock the one at `path` now
    try:
        try:
            with contextlib.suppress(OSError):  # who holds it, for a refused command's message (a full disk: none)
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps(_me(what)).encode(), 0)
            yield
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)  # before the unlock (see above)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _read_lease(path: str) -> dict | None:
    try:
        return json.loads(fs.read_bytes(path).decode())
    except FileNotFoundError:
        return None
    except ValueError:  # a torn or foreign lease: treat as expired (only the lease name is ever written here)
        return {}


def _write_lease(path: str, what: str, token: str) -> None:
    info = _me(what, token) | {"expires": time.time() + LEASE_SECONDS}
    with fs.open(path, "w") as f:
        f.write(json.dumps(info))


@contextlib.contextmanager
def _lease(path: str, out: str, what: str) -> Iterator[None]:
    held = _read_lease(path)
    if held and held.get("expires", 0) > time.time():
        raise _busy(out, held)
    token = uuid.uuid4().hex
    _write_lease(path, what, token)
    back = _read_lease(path)
    if not back or back.get("token") != token:
        raise _busy(out, back or {})
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(LEASE_SECONDS / 3):
            with contextlib.suppress(Exception):  # a failed renewal is retried at the next tick
                _write_lease(path, what, token)

    thread = threading.Thread(target=renew, name="peneira-lease", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        with contextlib.suppress(Exception):
            current = _read_lease(path)
            if current and current.get("token") == token:
                fs.remove(path)
