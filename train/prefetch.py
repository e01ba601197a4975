"""Batches prepared ahead of the training step: read by a background thread, into pinned memory on CUDA, so the
host-to-device copy is asynchronous (`non_blocking`) and reading (page faults on memory-mapped shards included)
overlaps the step instead of stalling it."""

from __future__ import annotations

import queue
import threading
from typing import Any

import torch


class Prefetcher:
    """Wraps a Loader: `next_batch()` gives device tensors; `state_dict()` is the loader's position after the last
    batch handed out (the thread runs `depth` batches ahead, which a checkpoint must not count as consumed)."""

    def __init__(self, loader: Any, device: torch.device, depth: int = 2):
        self.loader, self.device = loader, device
        self._state = loader.state_dict()
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name="prefetch", daemon=True)
        self._thread.start()

    def _produce(self) -> None:
        try:
            while not self._stop.is_set():
                x, y = self.loader.next_batch()
                if self.device.type == "cuda":
                    x, y = x.pin_memory(), y.pin_memory()
                self._put((x, y, self.loader.state_dict()))
        except BaseException as e:  # handed to the training thread, which raises it
            self._put(e)

    def _put(self, item: Any) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        item = self._queue.get()
        if isinstance(item, BaseException):
            raise item
        x, y, self._state = item
        return x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)

    def state_dict(self) -> dict:
        return self._state

    def close(self) -> None:
        self._stop.set()
        self._thread.join()

    def __enter__(self) -> Prefetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
