"""Imported by the forkserver when it starts (a preload module of `executors.local`): the forkserver asks the
kernel to kill it when the driver that started it dies, so that the pool workers, which die with the
forkserver, never outlive a driver killed with SIGKILL (docs/signals.md)."""

from curate.run.executors.local import die_with_parent

die_with_parent(watch=False)  # no thread in a process that forks: the driver's pipe covers other platforms
