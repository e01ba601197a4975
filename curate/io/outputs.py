"""Output folders: every command writes into an empty folder or into its own earlier output, never beside
something else (a run into a mix's folder would leave the mix's stale shards among its own).

`claim` is the one rule for all of them (`curate run`, `mix`, `tokenize`, `decontam index`, `demo generate`):

* an empty or missing folder is taken;
* a folder holding the command's own earlier output (`own`, e.g. a run's config) is resumed or replaced by
  the command itself, which knows what "the same thing" means;
* anything else is refused with one line, unless the user passes `--overwrite`. Then the names the command
  writes (`layout`) are removed, its marker first, so a folder half-cleared by a kill is never taken for
  an output to resume. A name the command does not write (the user's own files) is never removed: its
  presence refuses `--overwrite` too, and nothing is removed.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
from collections.abc import Callable, Sequence

from curate.core.errors import UsageError
from curate.io import fs


def claim(out: str, *, what: str, option: str, own: Callable[[], bool], layout: Sequence[str],
          overwrite: bool = False) -> bool:
    """Make `out` ready for `what` (a command, e.g. "`curate run`"); True if it holds an earlier output of it
    to resume or replace. `layout`: the names (fnmatch patterns) the command writes at the top of `out`, its
    marker first; their temporary files (`NAME.tmp.*`, `.NAME.tmp.*`) count as its own too."""
    names = fs.listdir(out)
    if not names:
        return False
    if overwrite:
        clear(out, names, what=what, option=option, layout=layout)
        return False
    if own():
        return True
    raise UsageError(f"{out} is not empty and holds no earlier {what} output: choose an empty {option}, "
                     "or pass --overwrite to replace what is there")


def clear(out: str, names: list[str], *, what: str, option: str, layout: Sequence[str]) -> None:
    """Remove the `layout` entries of `out`, the first (the marker) first; refuse, removing nothing, if it
    holds anything else."""
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

