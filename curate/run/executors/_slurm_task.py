"""One Slurm array element: `python -m curate.run.executors._slurm_task BATCH ELEMENT [PER]` (see `slurm.py`).

Runs items ELEMENT*PER .. ELEMENT*PER+PER-1 of the batch's pickled (fn, items), one after the other in this
process (PER, default 1: `SlurmExecutor(tasks_per_element=...)`), so the interpreter's start, the imports and a
stage's setup are paid once per element rather than once per item (issue 45). Each item's outcome is written,
atomically, to BATCH/out/INDEX.pkl as soon as it is known: (ok, result or (error, traceback, cause), worth
retrying). An item without an outcome file when the element ends died with it (killed, out of time or memory),
which is how the driver knows to run it again.
"""

from __future__ import annotations

import os
import pickle
import sys
import traceback


def run(fn, item, retry_exceptions) -> tuple:
    """One item's outcome: (True, result, False) or (False, (error, traceback, cause), worth retrying)."""
    from curate.run.executors.base import portable_cause, retryable

    try:
        return True, fn(item), False
    except Exception as e:
        return False, (f"{type(e).__name__}: {e}", traceback.format_exc(), portable_cause(e)), retryable(e, retry_exceptions)


def element_items(element: int, per: int, n: int) -> range:
    """The item indices array element `element` runs, `per` to an element, of `n` items."""
    return range(element * per, min(element * per + per, n))


def main(argv: list[str]) -> int:
    import cloudpickle

    from curate.io import fs

    batch, element = argv[1], int(argv[2])
    per = int(argv[3]) if len(argv) > 3 else 1
    with open(os.path.join(batch, "tasks.pkl"), "rb") as f:
        fn, items, retry_exceptions = pickle.load(f)
    for index in element_items(element, per, len(items)):
        print(f"curate task {index} of {batch}", flush=True)
        outcome = run(fn, items[index], retry_exceptions)
        try:
            data = cloudpickle.dumps(outcome)
        except Exception as e:  # a result that cannot travel is the task's failure, not a lost task
            data = cloudpickle.dumps((False, (f"result not picklable: {type(e).__name__}: {e}", traceback.format_exc(),
                                              None), False))
        with fs.atomic_open(os.path.join(batch, "out", f"{index}.pkl"), "wb", fsync=True) as f:
            f.write(data)
        if not outcome[0]:
            print(outcome[1][1] or outcome[1][0], file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
