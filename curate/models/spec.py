"""`ModelSpec`: which model a step uses and how it runs, as a small frozen value (no torch: steps hold one, pipelines
pickle it, the driver reads it to place tasks).

`path` is one of:

* this project's trainer output: an export file (`RUN/ckpt.pt`) or a run folder holding one (kind `gpt`); its
  tokenizer is the one beside it (`curate.models.checkpoint.load_checkpoint`);
* a Hugging Face model folder (holding `config.json`), or a hub id (`org/name`) (kind `hf`, through
  transformers). The hub is reached only for an id the user names: a path that looks like a path (`/`, `./`,
  `~`, or an existing file) and is not a model folder is an error, never a download.

`task` picks the head: `causal` (a causal LM: bits per byte, and embeddings from its last hidden states), `embed`
(an encoder, `AutoModel`: pooled embeddings), `classify` (`AutoModelForSequenceClassification`: class logits or
regression outputs). `device`: `auto` (CUDA when this process has it, else CPU), `cpu`, `cuda`, `cuda:N`;
`dtype`: `auto` (bfloat16 on CUDA where supported, float32 on CPU) or a name. `threads`: torch's CPU threads in
the worker (None: torch's default, all cores; give 1 with one worker per core).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from curate.core.errors import UsageError
from curate.core.resources import visible_gpus

KINDS = ("auto", "gpt", "hf")
TASKS = ("causal", "embed", "classify")
CKPT_NAME = "ckpt.pt"


@dataclass(frozen=True)
class ModelSpec:
    path: str
    task: str = "causal"
    kind: str = "auto"
    device: str = "auto"
    dtype: str = "auto"
    revision: str | None = None  # a hub id's revision (branch, tag or commit)
    threads: int | None = None

    def __post_init__(self):
        if not isinstance(self.path, (str, os.PathLike)) or not os.fspath(self.path):
            raise UsageError(f"ModelSpec: path must be a model file, folder or hub id, got {self.path!r}")
        object.__setattr__(self, "path", os.fspath(self.path))
        if self.task not in TASKS:
            raise UsageError(f"ModelSpec: task must be one of {', '.join(TASKS)}, got {self.task!r}")
        if self.kind not in KINDS:
            raise UsageError(f"ModelSpec: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not (self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")):
            raise UsageError(f"ModelSpec: device must be auto, cpu, cuda or cuda:N, got {self.device!r}")
        if self.threads is not None and self.threads < 1:
            raise UsageError(f"ModelSpec: threads must be >= 1, got {self.threads}")

    @property
    def backend(self) -> str:
        """`gpt` (this project's checkpoint) or `hf` (transformers), from `kind` or from what `path` holds."""
        if self.kind != "auto":
            return self.kind
        p = os.path.expanduser(self.path)
        if os.path.isfile(p) and p.endswith(".pt") or os.path.isfile(os.path.join(p, CKPT_NAME)):
            return "gpt"
        return "hf"

    def check_ready(self) -> None:
        """A local path that holds no model: one UsageError (cheap; nothing loaded, no network)."""
        p = os.path.expanduser(self.path)
        if self.backend == "gpt":
            if not (os.path.isfile(p) or os.path.isfile(os.path.join(p, CKPT_NAME))):
                raise UsageError(f"model {self.path}: no checkpoint there (a {CKPT_NAME} file or a run folder holding one)")
            return
        looks_local = self.path.startswith(("/", "./", "../", "~")) or os.path.exists(p) or self.path.count("/") > 1
        if looks_local and not os.path.isfile(os.path.join(p, "config.json")):
            raise UsageError(f"model {self.path}: not a Hugging Face model folder (no config.json); a hub id is "
                             "written org/name")

    def resources(self) -> dict[str, float]:
        """What a task running this model needs: one GPU on `cuda`/`cuda:N`, or on `auto` where the driver sees
        a GPU (`curate.core.resources.visible_gpus`); nothing on CPU."""
        if self.device.startswith("cuda") or self.device == "auto" and visible_gpus():
            return {"gpus": 1}
        return {}
