"""Words and sentences of a text in a given language: the one place every filter, `dedup.Lines` and the
quality and decontamination text forms take them from.

Words. Languages that space their words get the spaCy-English-like tokens of `curate.lang.spaced` (what
datatrove counts for English and, through `spacy.blank(lang)`, for most spaced languages), so English is
tokenized exactly as before. Chinese, Japanese, Thai, Lao, Khmer and Burmese (and the other Han-script
languages lid.176 names: Cantonese, Wu, Gan...) do not space words, and Amharic, Tigrinya, Tibetan and Dzongkha
separate them with a mark of their own (`፡`, `་`) more often than a space: every whitespace chunk holding a
character of those scripts is cut by ICU's word break iterator (the dictionary-based segmenter of
ICU4C, shipped inside the `pyicu-wheels` wheel: CJ dictionary for Han and kana, and dictionaries for Thai, Lao,
Khmer and Burmese), chunks without one go through the spaced tokenizer. Punctuation is a token either way.

A language that needs the segmenter when it is not installed raises `SegmenterMissing` (never a silent
whitespace split, which would make a whole Chinese sentence one word): `pip install 'peneira[lang]'`.

Sentences (`count_sentences`, `sentences`). English keeps C4's rule (a stop, space, then a capital or digit,
unless an abbreviation precedes). Every other language uses the script-aware rule: a run of the
sentence-ending marks of every script (`. ! ?` and `。！？｡． ؟ ۔ । ॥ ။ ። ፧ ։ ។ ៕ ། ‼ …`: `STOPS`, from the Unicode
data: Sentence_Terminal, and Terminal_Punctuation in scripts that have no Sentence_Terminal),
then closing quotes or brackets, then either whitespace and a character that is not a lower-case letter
(scripts without case start sentences with any letter), or directly text after a full-width stop (Chinese
and Japanese do not space sentences). Thai and Lao mark no sentence end: a space between two letters of
the script ends one there, as Thai is written (pythainlp's whitespace convention).

Linear time on any text: the regexes find each run once; segmentation is cut into pieces of at most
`MAX_SEGMENT` characters (a longer whitespace-free run is segmented piece by piece, so a word straddling a
cut is two words: the stated limit), and ICU's dictionary breakers are linear within a piece.
"""

from __future__ import annotations

import re
from functools import cache

from curate.core.errors import UsageError
from curate.lang.spaced import _CHUNKS, _CHUNKS_MAX, _PLAIN, _SPLIT_WORDS, split_chunk, word_tokens

# Bump when a language's words or sentences change: it enters the resume fingerprint. 2: every script's terminators
# from the Unicode data; Amharic, Tigrinya (Ethiopic wordspace) and Tibetan, Dzongkha (tsheg) segmented by ICU.
VERSION = "units-2"
MAX_SEGMENT = 10_000  # characters given to the segmenter at once; longer whitespace-free runs are cut here

# Scripts written without spaces between words: Han (with its extensions and compatibility forms), kana,
# Thai, Lao, Khmer, Myanmar, and Ethiopic and Tibetan, whose words are separated by a mark of their own (the
# wordspace ፡, the tsheg ་: ICU's word rules cut at them). A chunk holding one of these characters is segmented.
_NOSPACE_RANGES = (
    "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"  # kana, Han, half-width kana
    "\U00020000-\U0003ffff"  # Han extensions B..H
    "\u0e00-\u0e7f\u0e80-\u0eff"  # Thai, Lao
    "\u1780-\u17ff\u19e0-\u19ff"  # Khmer
    "\u1000-\u109f\ua9e0-\ua9ff\uaa60-\uaa7f"  # Myanmar
    "\u1200-\u139f\u2d80-\u2ddf\uab00-\uab2f"  # Ethiopic: words often separated by the wordspace ፡, not spaces
    "\u0f00-\u0fff"  # Tibetan: syllables separated by the tsheg ་, no spaces between words
)
NOSPACE_CHAR = re.compile(f"[{_NOSPACE_RANGES}]")
# Languages whose text is segmented: ISO 639-1 codes (lid.176's labels) and the ISO 639-3 codes GlotLID's labels
# start with (`cmn_Hani`, `jpn_Jpan`, `tha_Thai`: `language()` keeps the part before "_").
SEGMENTED = frozenset({"zh", "ja", "th", "lo", "km", "my", "zho", "cmn", "jpn", "tha", "lao", "khm", "mya",
                       "am", "ti", "bo", "dz", "amh", "tir", "bod", "dzo",
                       "yue", "wuu", "gan", "lzh", "nan", "hak", "hsn", "cjy", "cdo", "cpx", "mnp", "shn"})


class SegmenterMissing(UsageError):
    """The language needs a word segmenter that is not installed (the `lang` extra)."""


def language(lang: str | None, default: str = "en") -> str:
    """The base language code of a tag: `zh-Hant` -> `zh`, `pt_BR` -> `pt`, None -> `default`."""
    if not lang:
        return default
    return re.split(r"[-_]", lang, maxsplit=1)[0].lower()


def is_segmented(lang: str | None) -> bool:
    """Whether the language does not space its words (its words come from the segmenter)."""
    return language(lang) in SEGMENTED


@cache
def _icu():
    try:
        import icu
    except ImportError as e:
        raise SegmenterMissing(
            "Chinese, Japanese, Thai, Lao, Khmer, Burmese, Ethiopic and Tibetan words need ICU's word segmenter: "
            "pip install 'peneira[lang]' (pyicu-wheels)") from e
    return icu


def segmenter_version() -> str:
    """The segmenter and its dictionaries' version ('icu 77.1'), or 'icu absent': part of `units_version()`."""
    try:
        return f"icu {_icu().ICU_VERSION}"
    except SegmenterMissing:
        return "icu absent"


def units_version() -> str:
    """What a run's word and sentence units depend on; steps keep it as a parameter, so it is fingerprinted."""
    return f"{VERSION}; {segmenter_version()}"


class _Breaker:
    """One ICU word break iterator per process (created on first use: it loads the dictionaries once)."""

    def __init__(self) -> None:
        self.it = None

    def cut(self, piece: str) -> list[str]:
        """The non-blank segments of one whitespace-free piece, by ICU's word boundaries."""
        if self.it is None:
            icu = _icu()
            self.it = icu.BreakIterator.createWordInstance(icu.Locale.getRoot())
        it = self.it
        it.setText(piece)
        bounds = [0, *it]
        units16 = piece.encode("utf-16-le", "surrogatepass")  # a lone surrogate is one code unit, as in ICU
        if len(units16) == 2 * len(piece):  # no astral characters: ICU's UTF-16 offsets are str offsets
            return [piece[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
        return [units16[2 * a:2 * b].decode("utf-16-le", "surrogatepass")
                for a, b in zip(bounds, bounds[1:], strict=False)]


_BREAKER = _Breaker()


def segment(chunk: str) -> list[str]:
    """The words of one whitespace-free chunk of a language that does not space words, `MAX_SEGMENT` characters
    at a time: a piece with a character of those scripts by the segmenter (which also cuts the Latin, digits and
    punctuation in it), a piece without one (the rest of a very long chunk) as spaced text."""
    out: list[str] = []
    for i in range(0, len(chunk), MAX_SEGMENT):
        piece = chunk[i:i + MAX_SEGMENT]
        out += _BREAKER.cut(piece) if NOSPACE_CHAR.search(piece) else split_chunk(piece)
    return out


def words(text: str, lang: str | None = "en") -> list[str]:
    """Every word of `text` in language `lang`, punctuation tokens included, whitespace dropped.

    A spaced language: `curate.lang.spaced.word_tokens` (English: exactly what the filters always counted).
    A segmented one (`is_segmented`): chunks with a character of a spaceless script go through the segmenter.
    """
    if not is_segmented(lang):
        return word_tokens(text)
    out: list[str] = []
    cache_ = _CHUNKS
    search = NOSPACE_CHAR.search
    for chunk in text.split():
        if search(chunk) is None:
            toks = cache_.get(chunk)
            if toks is None:
                toks = (chunk,) if _PLAIN.fullmatch(chunk) and chunk not in _SPLIT_WORDS else tuple(split_chunk(chunk))
                if len(cache_) >= _CHUNKS_MAX:
                    cache_.clear()
                cache_[chunk] = toks
            out += toks
        else:
            out += segment(chunk)
    return out


_HAS_ALNUM = re.compile(r"[^\W_]")


def word_count(text: str, lang: str | None = "en") -> int:
    """Words of a line or text as C4 and RefinedWeb count them per line: whitespace-separated chunks in a spaced
    language (their rule as published), tokens with a letter or digit in a segmented one."""
    if not is_segmented(lang):
        return len(text.split())
    return sum(1 for w in words(text, lang) if _HAS_ALNUM.search(w))


# ------------------------------------------------------------------------------------------ sentences

def _unicode_stops() -> str:
    """Every script's sentence terminators, from the Unicode Character Database (through `regex`'s property tables):
    the Sentence_Terminal property (UAX #29's STerm: `. ! ? 。 । ။ ። ։ ។ ؟ ۔`...), and the Terminal_Punctuation of
    each script none of whose characters is a Sentence_Terminal (the Tibetan shad `།`, Thai's `๚ ๛`, the Hebrew
    sof pasuq `׃`), word dividers and separators (which Terminal_Punctuation also holds) left out by name. A
    character's script is the first word of its name, checked against its Script property. Every such character
    lies below U+20000 (the planes above hold ideographs)."""
    import unicodedata

    import regex

    marks = regex.findall(r"[\p{Sentence_Terminal}\p{Terminal_Punctuation}]", "".join(map(chr, range(0x20000))))
    sterm = set(regex.findall(r"\p{Sentence_Terminal}", "".join(marks)))

    def script(c: str) -> str | None:
        word = unicodedata.name(c, "").split(" ")[0].title()
        try:
            return word if word.isalpha() and regex.match(rf"\p{{Script={word}}}", c) else None
        except regex.error:  # the name's first word is no script (EXCLAMATION, FULLWIDTH, ...)
            return None

    with_sterm = {script(c) for c in sterm}
    extra = [c for c in marks if c not in sterm and script(c) not in with_sterm | {None}
             and "WORD" not in unicodedata.name(c)]
    return "".join(m for m in marks if m in sterm or m in extra)


# Sentence-ending marks of every script (`_unicode_stops`).
STOPS = _unicode_stops()
FULL_WIDTH_STOPS = frozenset("。！？｡．")  # end a sentence with no space after (Chinese, Japanese)
# The line-end marks FineWeb's `punct_lines` has always taken for every language (English's, unchanged); other
# languages take every script's `STOPS` (which adds Burmese ။, Khmer ។ ៕, Ethiopic ፨ and the rarer marks).
TERMINAL_PUNCTUATION = tuple(".!?。！？．｡؟۔।॥።፧։‼⁇⁈⁉")
_ALL_STOPS = tuple(STOPS)
_CLOSERS = "\"'”’)\\]»」』）】〕〉》"
_OPENERS = "\"'“‘([«「『（【〔〈《¿¡-–—"  # a membership test, not a regex class
_STOP_RUN_ANY = re.compile(f"([{re.escape(STOPS)}]+)[{_CLOSERS}]*")
# Languages with a stop beyond the scripts' own: Armenian is mostly typed with ":" for its full stop `։`, Greek
# with ";" for its question mark (U+037E, which NFC turns into ";").
_STOP_RUNS = {code: re.compile(f"([{re.escape(STOPS + extra)}]+)[{_CLOSERS}]*") for code, extra in
              (("hy", ":"), ("el", ";"))}
_THAI_LAO_SPACE = re.compile(r"(?<=[\u0e00-\u0eff])[^\S\n]+(?=[\u0e00-\u0eff])")
_SPACE_SEPARATED_SENTENCES = frozenset({"th", "lo"})

# C4's English rule, unchanged (curate.filters.c4 has always counted with it): end punctuation (and closing
# quotes/brackets), space, then a capital or digit, unless the mark follows an abbreviation. Written as one regex
# with the abbreviations as lookbehinds, it tried every mark of a run of periods as a start and read the run to its
# end from each: quadratic in the run. So the regex finds each run once, from its first mark, and the abbreviations
# are checked there after: a run of two or more marks always has a start that no abbreviation precedes (its second
# mark follows a mark), a lone mark only if none does.
_STOP_RUN_EN = re.compile(r"(?<![.!?])([.!?]+)[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-ZÀ-ÖØ-Þ0-9])")
_ABBREVIATION_BEFORE = re.compile(r"(?<=\b[A-Z])|(?<=\bMr)|(?<=\bMrs)|(?<=\bMs)|(?<=\bDr)|(?<=\bSt)|(?<=\bvs)|"
                                  r"(?<=\bSr)|(?<=\bJr)|(?<=\be\.g)|(?<=\bi\.e)|(?<=\betc)")


def terminal_punctuation(lang: str | None = "en") -> tuple[str, ...]:
    """The marks a line of prose in `lang` ends with (FineWeb's `punct_lines`, C4's end marks beyond its own)."""
    return TERMINAL_PUNCTUATION if language(lang) == "en" else _ALL_STOPS


def _breaks_en(line: str) -> list[int]:
    after = _ABBREVIATION_BEFORE.match
    return [m.end() for m in _STOP_RUN_EN.finditer(line) if m.end(1) - m.start(1) > 1 or not after(line, m.start())]


def _starts_sentence(c: str) -> bool:
    """A character a sentence may start with: a capital, a digit, a letter of a script without case, or a
    Georgian letter (Mkhedruli is written without capitals, though Unicode files it as lower case)."""
    return c.isdigit() or (c.isalpha() and not c.islower()) or "\u10d0" <= c <= "\u10ff"


def _skip_spaces(text: str, k: int) -> int:
    """The first non-space at or after k, reading at most 64 spaces (so a run of spaces is read once per stop)."""
    end = min(len(text), k + 64)
    while k < end and text[k].isspace():
        k += 1
    return k


def _breaks_any(text: str, lang: str) -> list[int]:
    """Offsets where a new sentence starts, by the script-aware rule (module docstring). Linear: each run of
    stops is found once and the text after it is read a bounded number of characters."""
    out = []
    n = len(text)
    after = _ABBREVIATION_BEFORE.match
    stop_run = _STOP_RUNS.get(lang, _STOP_RUN_ANY)
    for m in stop_run.finditer(text):
        j = m.end()
        if j >= n:
            break
        run = m.group(1)
        if text[j].isspace():
            k = _skip_spaces(text, j)
            for _ in range(2):  # an opening quote or a dialogue dash, each maybe spaced (French « Oui »)
                if k < n and text[k] in _OPENERS:
                    k = _skip_spaces(text, k + 1)
            if k >= n or not _starts_sentence(text[k]):
                continue
            if run == "." and after(text, m.start()):
                continue  # an abbreviation or an initial
            out.append(j)
        elif run[-1] in FULL_WIDTH_STOPS:  # the run and its closers are maximal: text follows directly
            out.append(j)
    if lang in _SPACE_SEPARATED_SENTENCES:
        out = sorted({*out, *(m.start() for m in _THAI_LAO_SPACE.finditer(text))})
    return out


def sentence_breaks(text: str, lang: str | None = "en") -> list[int]:
    """Offsets inside `text` where a sentence after the first starts (just after its stop run's closers)."""
    code = language(lang)
    return _breaks_en(text.rstrip()) if code == "en" else _breaks_any(text.rstrip(), code)


def count_sentences(line: str, lang: str | None = "en") -> int:
    """Sentences in a non-empty line: one more than the sentence breaks inside it. Linear in its length."""
    return 1 + len(sentence_breaks(line, lang))


def sentences(text: str, lang: str | None = "en") -> list[str]:
    """The sentences of a text (stripped, non-empty), cut at `sentence_breaks`; line breaks are not cuts."""
    cuts = [0, *sentence_breaks(text, lang), len(text)]
    return [s for a, b in zip(cuts, cuts[1:], strict=False) if (s := text[a:b].strip())]
