"""What each folder on `curate view`'s command line stands for: a run, a token folder, or an ablation's runs."""

from __future__ import annotations

from curate.io import fs
from curate.view.query import Run
from curate.view.tokens import TokenFolder, is_token_folder


def runs_of(path: str) -> list[Run | TokenFolder]:
    """A token folder (`curate tokenize`); an ablation folder (`python -m train ablate`: `variants/NAME/curated/`
    each), as its variants' curated runs named by variant, so they can be compared; otherwise a run folder."""
    if is_token_folder(path) and not fs.isdir(fs.join(path, "data")):
        return [TokenFolder(path)]
    variants = fs.join(path, "variants")
    if not fs.isdir(fs.join(path, "data")) and fs.isdir(variants):
        found = [Run(fs.join(variants, v, "curated"), name=v) for v in sorted(fs.listdir(variants))
                 if fs.isdir(fs.join(variants, v, "curated", "data"))]
        if found:
            return found
    return [Run(path)]
