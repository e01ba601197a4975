"""The errors every layer may raise, kept at the bottom so that raising one never imports the runner."""

from __future__ import annotations

import errno


class UsageError(ValueError):
    """Bad input from the user (options, globs, pipeline files, step arguments): one line on stderr, exit 2."""


class StepFailed(RuntimeError):
    """A step that fails on every document (or its first ones): the run stops with the step's real error."""


class CorruptState(UsageError):
    """A file of a command's own state (a run's config, a task's stats, a phase's marker or intermediate) that
    cannot be read back: one line naming the file and what to do (`curate.io.state`). Raised where the file is
    read; a caller that can recompute the file catches it, removes the file's marker and does so."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(message)
        self.path = path

    def __reduce__(self):  # crosses process boundaries (a task's cause) with its path
        return type(self), (str(self), self.path)


class Stopped(KeyboardInterrupt):
    """The command was asked to stop by a signal (SIGTERM from `kill` or `docker stop`, SIGINT from Ctrl-C):
    raised in the main thread by `curate.run.stopping`'s handler, so every `finally` and `except BaseException`
    on the way out runs (temporary files removed, worker processes stopped). A KeyboardInterrupt, so code that
    handles Ctrl-C handles it too."""

    def __init__(self, signum: int):
        import signal

        self.signum = signum
        self.signame = signal.Signals(signum).name
        super().__init__(self.signame)


def disk_full(e: BaseException) -> OSError | None:
    """The "no space left on device" error behind `e`, if that is what `e` is: an OSError (pyarrow's included,
    which may carry the errno only in its message), one in its cause chain, or a task's cause in a
    `TaskFailures` (any of them: a full disk makes the other tasks fail too)."""
    seen: set[int] = set()
    todo = [e]
    while todo:
        x = todo.pop()
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, OSError) and (x.errno in (errno.ENOSPC, errno.EDQUOT)
                                       or "No space left on device" in str(x)):
            return x
        todo += [x.__cause__, x.__context__]
        tasks = getattr(x, "errors", None)  # TaskFailures: what each failed task raised
        if isinstance(tasks, list):
            todo += [getattr(t, "cause", None) for t in tasks]
    return None
