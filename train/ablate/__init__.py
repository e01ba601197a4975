"""The ablation machinery, beside the trainer's loop: which curation makes the better model, and the LR sweep.

* `stages` — `python -m train ablate --spec FILE`: curate, mix, tokenize, train and evaluate every variant;
* `spec` — the spec and the stages' bookkeeping (records, keys, locks, the token budget rule);
* `report` — results.json, the Markdown tables and plots, the generated docs;
* `deciles` — the quality deciles' bits per byte;
* `depends` — what a record depends on (its pipelines' and the trainer's code), and whether it is stale;
* `sweep` — `python -m train sweep-lr`: one model at four learning rates.

Nothing is imported here: `python -m train` loads a module of this package only for its own subcommand.
"""
