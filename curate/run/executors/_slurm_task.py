"""One Slurm array task: `python -m curate.run.executors._slurm_task BATCH INDEX` (see `slurm.py`).

Runs item INDEX of the batch's pickled (fn, items) and writes its outcome, atomically, to BATCH/out/INDEX.pkl:
(ok, result or (error, traceback, cause), worth retrying). A task that dies before that file exists has no
outcome, which is how the driver knows it was killed.
"""

from __future__ import annotations

import os
import pickle
import sys
import traceback


def run(batch: str, index: int) -> tuple:
    from curate.run.executors.base import portable_cause, retryable

    with open(os.path.join(batch, "tasks.pkl"), "rb") as f:
        fn, items, retry_exceptions = pickle.load(f)
    try:
        return True, fn(items[index]), False
    except Exception as e:
        return False, (f"{type(e).__name__}: {e}", traceback.format_exc(), portable_cause(e)), retryable(e, retry_exceptions)


def main(argv: list[str]) -> int:
    import cloudpickle

    from curate.io import fs

    batch, index = argv[1], int(argv[2])
    print(f"curate task {index} of {batch}", flush=True)
    outcome = run(batch, index)
    try:
        data = cloudpickle.dumps(outcome)
    except Exception as e:  # a result that cannot travel is the task's failure, not a lost task
        data = cloudpickle.dumps((False, (f"result not picklable: {type(e).__name__}: {e}", traceback.format_exc(), None),
                                  False))
    with fs.atomic_open(os.path.join(batch, "out", f"{index}.pkl"), "wb", fsync=True) as f:
        f.write(data)
    if not outcome[0]:
        print(outcome[1][1] or outcome[1][0], file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
