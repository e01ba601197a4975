"""HTML to text. Each extractor drops pages that yield no text, and bounds time, size and depth per page.

`Main` is the project's own main-content extractor; `Trafilatura` and `Resiliparse` wrap the libraries.
"""

from curate.extract.base import Extractor, ExtractTimeout, nesting_depth, time_limit
from curate.extract.libraries import Resiliparse, Trafilatura
from curate.extract.main import Main

__all__ = ["ExtractTimeout", "Extractor", "Main", "Resiliparse", "Trafilatura", "nesting_depth", "time_limit"]
