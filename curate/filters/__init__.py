"""Heuristic filters: HTTP status, language ID, Gopher, C4, FineWeb, RefinedWeb line, URL and bad-word rules, and PII redaction.

Every rule is its own drop reason (`gopher_quality:stop_words`, `c4:lorem_ipsum`, …) and every threshold
a keyword argument with the published default. See docs/filters.md.
"""

from curate.filters.badwords import BadWords
from curate.filters.by_language import ByLanguage
from curate.filters.c4 import C4
from curate.filters.fineweb import FineWeb
from curate.filters.gopher import GopherQuality, GopherRepetition
from curate.filters.http import HttpStatus
from curate.filters.language import Language
from curate.filters.pii import Pii
from curate.filters.refinedweb import RefinedWebLines
from curate.filters.url import Url

__all__ = ["C4", "BadWords", "ByLanguage", "FineWeb", "GopherQuality", "GopherRepetition", "HttpStatus", "Language", "Pii", "RefinedWebLines", "Url"]
