"""The two library extractors: trafilatura (precise, slow) and Resiliparse (fast; the extra `fast`)."""

from __future__ import annotations

from curate.core.document import Document
from curate.core.validate import check
from curate.extract.base import Extractor


class Trafilatura(Extractor):
    """trafilatura with precision-oriented settings: main content only, no comments (`keep_comments=True` keeps
    them), no internal dedup."""

    def __init__(self, favor_precision: bool = True, include_tables: bool = True, deduplicate: bool = False,
                 keep_comments: bool = False, **kw):
        super().__init__(**kw)
        self.keep_comments = check(self, "keep_comments", keep_comments, bool)
        self.favor_precision = check(self, "favor_precision", favor_precision, bool)
        self.include_tables = check(self, "include_tables", include_tables, bool)
        self.deduplicate = check(self, "deduplicate", deduplicate, bool)

    def setup(self) -> None:
        import trafilatura

        self._extract = trafilatura.extract

    def extract(self, doc: Document) -> str | None:
        return self._extract(
            doc.html,
            url=doc.url,
            favor_precision=self.favor_precision,
            include_comments=self.keep_comments,
            include_tables=self.include_tables,
            deduplicate=self.deduplicate,
        )


class Resiliparse(Extractor):
    """Resiliparse main-content extraction (extra `fast`): several times faster than trafilatura. Comment sections
    are kept, Resiliparse's default (`keep_comments=False` drops them)."""

    def __init__(self, main_content: bool = True, keep_comments: bool = True, **kw):
        super().__init__(**kw)
        self.keep_comments = check(self, "keep_comments", keep_comments, bool)
        self.main_content = check(self, "main_content", main_content, bool)

    def setup(self) -> None:
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree

        self._tree, self._plain = HTMLTree, extract_plain_text

    def extract(self, doc: Document) -> str | None:
        tree = self._tree.parse(doc.html)
        return self._plain(tree, main_content=self.main_content, alt_texts=False, links=False,
                           comments=self.keep_comments)
