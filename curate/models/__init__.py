"""Models inside curation, and the one home of the model the trainer trains (see docs/models.md).

Nothing here imports torch: `import curate.models` is as light as `import curate`; torch (and transformers, for
Hugging Face models) is imported by the submodules that need it, when a step that uses a model is set up.

* `gpt` — the GPT definition the trainer trains (`GPT`, `GPTConfig`, presets);
* `checkpoint` — the reader of the trainer's exports (`load`, `load_checkpoint`, `CheckpointError`);
* `scoring` — batched log-likelihood of token spans (`score_spans`), what `train eval` scores with;
* `device` — `auto|cpu|cuda[:N]` and the dtype a model runs in there;
* `inference` — the layer every model step uses: `ModelSpec`, `get_model(spec)` (loaded once per worker
  process), and on the model it gives, `bits_per_byte(texts)`, `embed(texts)` and `classify(texts)`, batched by a
  token budget, truncation counted, throughput recorded (`Throughput`); `resources(spec)` is what a step asks its
  executor for (`{"gpus": 1}` on CUDA).
"""

from curate.models.spec import ModelSpec

__all__ = ["ModelSpec"]
