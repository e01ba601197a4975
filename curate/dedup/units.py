"""The units that line deduplication removes: lines, paragraphs or sentences, as cuts of the text.

A text is cut into units that cover it whole: unit i is `text[cuts[i]:cuts[i + 1]]` and owns the
separator (newline, blank line, space) before it; only the text's trailing whitespace (its *tail*)
belongs to no unit. So removing units and joining the rest (`rewrite`) loses nothing but the removed
units and the separators in front of them, and a text with nothing removed is unchanged.

Sentences follow spaCy's rule-based `sentencizer` on a blank language model, which is what datatrove's
`SentenceDedup` splits with for English and the other European languages: a sentence ends at a
token of `.`, `!`, `?` (and the other scripts' full stops) once a token that is not punctuation
follows; line breaks do not end sentences. spaCy splits a final period off a word unless the word
is a tokenizer exception of its language (`Mr.`, `z.B.`, `etc.`: `curate/lang/abbreviations.py`) or the letter
before the period is a single capital (`J.`, `U.S.`); an ellipsis (`..`, `...`) ends nothing. Done
here on whitespace-separated chunks with `str` methods, about 100x faster than spaCy's tokenizer;
`tests/test_lines.py` compares the two on real pages.

Thai and Lao mark no sentence end, and spaCy's blank tokenizer keeps Burmese `။` and Khmer `។` inside the word
before them, so a sentencizer finds no sentence there; for these languages the breaks of
`curate.lang.sentence_breaks` (a space between two Thai or Lao letters; a Burmese or Khmer stop before text)
are added. Chinese and Japanese full stops (`。！？`) end sentences without a space, as above.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from curate.lang import language, sentence_breaks
from curate.lang.abbreviations import ABBREVIATIONS

UNITS = ("line", "paragraph", "sentence")
# spaCy's Sentencizer.default_punct_chars, less the rarely seen scripts: a token of these ends a sentence
SENTENCE_END = frozenset("!.?։؟۔܀܁܂߹।॥၊။።፧፨᙮᜵᜶᠃᠉᥄᥅᪨᪩᪪᪫᭚᭛᭞᭟᰻᰼᱾᱿‼‽⁇⁈⁉⸮⸼꓿꘎꘏꛳꛷꡶꡷꣎꣏꤯꧈꧉꩝꩞꩟꫰꫱꯫﹒﹖﹗！．？｡。")
# a whole whitespace-separated chunk holding a stop; only from a chunk's first character, or a chunk without one is
# read to its end from each of its characters (quadratic in its length)
_CANDIDATE = re.compile(r"(?<!\S)\S*[" + re.escape("".join(sorted(SENTENCE_END))) + r"]\S*")
_NEXT = re.compile(r"(\s+)(\S+)")
# what spaCy splits off the end (and start) of a token: its LIST_PUNCT, LIST_QUOTES and brackets
_AFFIXES = frozenset("…,:;!?¿؟¡()[]{}<>_#*&。？！，、；：～·।،۔؛٪'\"”“`‘´’‚„»«「」『』（）〔〕【】《》〈〉")
_PREFIXES = "".join(_AFFIXES)
_OPENERS = "".join(_AFFIXES - SENTENCE_END)
_CLOSERS = _OPENERS
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n\s*")


@lru_cache(maxsize=65_536)
def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


def _all_punct(chunk: str) -> bool:
    return all(_is_punct(c) for c in chunk)


def _ends_sentence(chunk: str, abbreviations: frozenset[str]) -> bool:
    """Whether spaCy would make the chunk's last token (closing quotes and brackets aside) a sentence end."""
    core = chunk.rstrip(_CLOSERS)
    if not core or core[-1] not in SENTENCE_END:
        return False
    if len(core) == 1:
        return True
    if core[-1] != ".":
        return core[-1] in _AFFIXES  # split off as a suffix (! ? 。 ...), else part of the word (Myanmar ။)
    word = core.lstrip(_OPENERS)
    if len(word) == 1:
        return True
    if word[-2] == "." or word in abbreviations:
        return False  # an ellipsis token, or an exception kept whole with its period
    if word[-2].isupper():  # spaCy splits the period after two capitals only
        return len(word) >= 3 and word[-3].isupper()
    return True


def _inner_cuts(chunk: str, start: int) -> list[int]:
    """Sentence ends inside a chunk: a period between a lowercase and a capital letter (spaCy's infix rule),
    or a full-width stop (。！？) before more text."""
    found = []
    for i in range(1, len(chunk) - 1):
        c = chunk[i]
        if (c == "." and chunk[i - 1].islower() and chunk[i + 1].isupper()) or (
                c in "。！？" and not _is_punct(chunk[i + 1])):
            found.append(start + i + 1)
    return found


_LANGUAGE_BREAKS = frozenset({"th", "lo", "my", "km"})  # languages whose sentence ends spaCy's sentencizer misses


def _sentence_cuts(text: str, lang: str) -> list[int]:
    """Sentence starts: spaCy's sentencizer's, and in Thai, Lao, Burmese and Khmer the language's breaks."""
    cuts = _sentencizer_cuts(text, lang)
    code = language(lang)
    if code in _LANGUAGE_BREAKS:
        cuts = sorted({*cuts, *sentence_breaks(text, code)})
    return cuts


def _sentencizer_cuts(text: str, lang: str) -> list[int]:
    """Sentence starts: only chunks holding a stop are looked at, then the chunks after a sentence end."""
    abbreviations = ABBREVIATIONS.get(language(lang), frozenset())
    cuts, done = [0], 0
    for m in _CANDIDATE.finditer(text):
        if m.start() < done:
            continue  # punctuation already taken into the sentence before
        chunk = m.group()
        if chunk[0] in "!?" and (rest := chunk.lstrip("!?")) and not _all_punct(rest):
            cut_at = m.end() - len(rest.lstrip(_PREFIXES))  # spaCy splits a leading ! or ? off: a sentence
            if cut_at > cuts[-1]:
                cuts.append(cut_at)
        if any(c in "。！？." for c in chunk[1:-1]) and chunk.strip(_PREFIXES) not in abbreviations:
            cuts.extend(c for c in _inner_cuts(chunk, m.start()) if c > cuts[-1])
        if not _ends_sentence(chunk, abbreviations):
            continue
        end, cut = m.end(), None
        while (n := _NEXT.match(text, end)) is not None:
            if n.group(1) != " ":  # spaCy makes other whitespace a token, which starts the next sentence
                cut = end
                break
            nxt = n.group(2)
            if _all_punct(nxt):  # punctuation after the stop stays with its sentence
                end = n.end()
                continue
            lead = len(nxt) - len(nxt.lstrip(_PREFIXES))
            cut = n.start(2) + lead if lead else end
            break
        if cut is not None and cut > cuts[-1]:
            cuts.append(cut)
        done = end
    return cuts


def cut(text: str, unit: str, lang: str = "en") -> tuple[list[int], int]:
    """(cuts, content end) of a text: units are text[cuts[i]:cuts[i+1]] with cuts[-1] == content end;
    text[content end:] is the trailing whitespace. An empty or blank text has no unit (cuts == [0])."""
    end = len(text.rstrip())
    if end == 0:
        return [0], 0
    body = text[:end]
    if unit == "line":
        cuts = [0, *(m.start() for m in re.finditer("\n", body))]
    elif unit == "paragraph":
        cuts = [0, *(m.start() for m in _BLANK_LINE.finditer(body))]
    else:
        cuts = _sentence_cuts(body, lang)
    cuts = [c for i, c in enumerate(cuts) if i == 0 or c > cuts[i - 1]]
    return [*cuts, end], end


def units(text: str, unit: str, lang: str = "en") -> list[str]:
    """The units of a text, in order (each with the separator before it)."""
    cuts, _ = cut(text, unit, lang)
    return [text[a:b] for a, b in zip(cuts, cuts[1:], strict=False)]


def rewrite(text: str, cuts: list[int], removed: list[bool]) -> tuple[str, str]:
    """(kept text, removed text) of a text without the units flagged in `removed`.

    The kept text is the remaining units and the tail, joined, without leading whitespace (as datatrove's
    filter stage writes it); the removed text is the removed units joined, for `--rejected`.
    """
    kept, cut_out = [], []
    for i, gone in enumerate(removed):
        (cut_out if gone else kept).append(text[cuts[i]:cuts[i + 1]])
    kept.append(text[cuts[-1]:])
    return "".join(kept).lstrip(), "".join(cut_out).strip()
