"""HTML to text. Each extractor drops pages that yield no text, and bounds the work a page may take by its size,
tags and nesting depth (never by a clock).

`Main` is the project's own main-content extractor; `Trafilatura` and `Resiliparse` wrap the libraries.
`Main` is imported on first use, because it needs the package's C extension (curate.extract._walk, Lexbor
compiled in): a checkout where it is not built still imports this package and runs the library extractors,
and asking for `Main` there raises an ImportError that says in one line what is missing and how to get it.
"""

from curate.extract.base import Extractor, nesting_depth
from curate.extract.libraries import Resiliparse, Trafilatura

__all__ = ["Extractor", "Main", "Resiliparse", "Trafilatura", "nesting_depth"]

_EXTENSION = "curate.extract._walk"


def __getattr__(name: str):
    if name != "Main":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        from curate.extract.main import Main
    except ImportError as e:
        if e.name != _EXTENSION:
            raise
        raise ImportError(f"extract.Main needs the C extension {_EXTENSION}, which is not built here ({e}): install "
                          "peneira from its wheel (pip install peneira), or from source with a C compiler on PATH "
                          "(pip install -e .)", name=_EXTENSION) from e
    return Main
