"""Options worded alike in every `curate` command that has them."""

from __future__ import annotations

import argparse


def add_overwrite(parser: argparse.ArgumentParser) -> None:
    """`--overwrite`, for a command that writes an output folder (`curate.io.outputs.claim`)."""
    parser.add_argument("--overwrite", action="store_true",
                        help="replace what an earlier or different run left in the output folder (only the files "
                             "this command writes are removed; any other file there refuses the run)")


def add_progress(parser: argparse.ArgumentParser) -> None:
    """`--progress/--no-progress` (default on), spelled as the trainer spells it."""
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="show progress bars (default: on)")


def add_executor(parser: argparse.ArgumentParser) -> None:
    """`--executor local|ray|slurm` and each engine's options, for every command that maps tasks (run, mix,
    tokenize); `executor_from_args` builds the executor from them."""
    parser.add_argument("--executor", choices=["local", "ray", "slurm"], default="local")
    parser.add_argument("--workers", type=int, default=None,
                        help="parallel tasks (default: local: all CPUs; ray: as many as the cluster runs; "
                             "slurm: no cap on an array's running tasks)")
    ray = parser.add_argument_group("Ray (with --executor ray)")
    ray.add_argument("--address", default=None, help="Ray cluster address")
    ray.add_argument("--task-cpus", type=float, default=1, help="CPUs reserved per task (Ray and Slurm)")
    ray.add_argument("--task-memory-gb", type=float, default=None, help="memory reserved per task, GB (Ray and Slurm)")
    slurm = parser.add_argument_group("Slurm (with --executor slurm; docs/scale-out.md)")
    slurm.add_argument("--partition", default=None, help="sbatch --partition")
    slurm.add_argument("--time-limit", default=None, help="sbatch --time per task, e.g. 2:00:00")
    slurm.add_argument("--account", default=None, help="sbatch --account")
    slurm.add_argument("--qos", default=None, help="sbatch --qos")
    slurm.add_argument("--constraint", default=None, help="sbatch --constraint")
    slurm.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                       help="another sbatch argument, e.g. --sbatch-arg=--exclusive (repeatable)")
    slurm.add_argument("--setup", default=None,
                       help="a shell line each task runs first, e.g. 'source /shared/venv/bin/activate'")
    slurm.add_argument("--log-dir", default=None, help="task logs (default: OUTPUT/_work/slurm/logs)")
    slurm.add_argument("--slurm-work-dir", default=None, metavar="DIR",
                       help="where the batches, outcomes and job ids go, on the filesystem the nodes share "
                            "(default OUTPUT/_work/slurm; needed when OUTPUT is an object-store URL)")
    slurm.add_argument("--slurm-tasks-per-element", type=int, default=1, metavar="N",
                       help="run N tasks one after the other in each array element, so short tasks pay Slurm's "
                            "start, Python's and the setup once per N (--time-limit is then an element's)")
    slurm.add_argument("--max-retries", type=int, default=3,
                       help="resubmissions of a task that died or raised (never of a usage error or a failed step)")
    slurm.add_argument("--detach", action="store_true",
                       help="submit the driver itself as a Slurm job and return at once (follow: curate status)")


def executor_from_args(args: argparse.Namespace, output: str):
    """The executor the options name. Slurm keeps its batches and job ids in OUTPUT/_work/slurm (on the
    filesystem the nodes share), where `curate status` and `curate cancel` find them."""
    import os

    from curate.core.errors import UsageError
    from curate.run.executors import make_executor

    if args.workers is not None and args.workers < 1:  # checked before `or`: 0 would silently mean all CPUs
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    memory = int(args.task_memory_gb * 2**30) if args.task_memory_gb else None
    if args.executor == "ray":  # workers=0: the window follows the cluster, not this machine's CPUs
        kw = {"address": args.address, "num_cpus_per_task": args.task_cpus, "memory_per_task": memory}
        return make_executor("ray", args.workers or 0, progress=args.progress, **kw)
    if args.executor == "slurm":
        if not output:
            raise UsageError("a run needs inputs and an output (--input/--output or Pipeline(inputs=, output=))")
        kw = {"work_dir": slurm_work_dir(output, args.slurm_work_dir), "partition": args.partition,
              "time_limit": args.time_limit,
              "cpus_per_task": max(1, int(args.task_cpus)), "account": args.account, "qos": args.qos,
              "constraint": args.constraint, "sbatch_args": args.sbatch_arg, "setup": args.setup,
              "log_dir": args.log_dir, "max_retries": args.max_retries,
              "tasks_per_element": args.slurm_tasks_per_element,
              "mem_per_task": f"{max(1, memory // 2**20)}M" if memory else None}
        return make_executor("slurm", args.workers or 0, progress=args.progress, **kw)
    if args.detach:
        raise UsageError("--detach submits the driver to Slurm: use it with --executor slurm")
    return make_executor("local", args.workers or os.cpu_count() or 1, progress=args.progress)


def slurm_work_dir(output: str, given: str | None = None) -> str:
    """Where a Slurm run keeps its batches, logs and job ids: `--slurm-work-dir` when given, else inside its output
    folder, which must then be on the filesystem the nodes share (an object-store output needs the option: the
    nodes exchange pickled tasks and outcomes through a shared folder, and sbatch writes logs to one)."""
    import os

    from curate.core.errors import UsageError
    from curate.io import fs

    if given:
        if fs.local_path(given) is None:
            raise UsageError(f"--slurm-work-dir must be on a filesystem the nodes share, not a URL: {given}")
        return os.path.abspath(fs.local_path(given))
    if fs.local_path(output) is None:
        raise UsageError("--executor slurm keeps its work folder beside the output, which is a URL here "
                         f"({output}): name a folder the nodes share with --slurm-work-dir")
    return fs.join(output, "_work", "slurm")


def detach(args: argparse.Namespace, output: str, argv: list[str] | None = None) -> int:
    """`--detach`: submit this same command, without --detach, as a one-task Slurm job; print how to follow it."""
    import os
    import shlex
    import sys

    from curate.core.errors import UsageError
    from curate.run.executors.slurm import DRIVER_JOB_NAME, submit_recorded

    argv = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--detach"]
    work = slurm_work_dir(output, args.slurm_work_dir)
    # not inside the output: the run claims that folder (an unknown file there would make it look foreign)
    log = os.path.join(os.path.abspath(args.log_dir or "."), "curate-driver-%j.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)  # sbatch does not create it: the job would fail unseen
    cmd = f"cd {shlex.quote(os.getcwd())} && {args.setup or 'true'} && exec " + \
        shlex.join([sys.executable, "-m", "curate.cli.main", *argv, "--no-progress"])
    opts = [f"--partition={args.partition}"] if args.partition else []
    opts += [f"--account={args.account}"] if args.account else []
    opts += [f"--qos={args.qos}"] if args.qos else []
    try:  # recorded in the work folder before it can start: status and cancel see it pending (issue 42.3)
        job = submit_recorded(["sbatch", "--parsable", f"--job-name={DRIVER_JOB_NAME}", f"--output={log}", *opts,
                               f"--wrap={cmd}"], work, driver=True)
    except RuntimeError as e:
        raise UsageError(f"sbatch of the driver failed: {e}") from None
    print(f"submitted the driver as Slurm job {job}; follow it with `curate status {output}` "
          f"(log {log.replace('%j', job)}); stop it with `curate cancel {output}`")
    return 0
