"""Per-language filter configurations: stop words and thresholds for GopherQuality, GopherRepetition,
FineWeb and C4, read from `curate/lang/data/filters.json` (written by scripts/derive_languages.py).

`config(lang)` gives a language's configuration. A language the file does not hold gets the *fallback*:
the median of each threshold over the configured languages of its script (English's values are never
borrowed silently), and no stop-word rule, since a stop-word list cannot be guessed. `LangConfig.fallback`
says which it is, and `filters.ByLanguage` counts fallbacks per language in its stats.

Codes: lid.176's labels (`pt`, `als`, `zh`), ISO 639-3 codes (`por`) and GlotLID's `<code>_<Script>`
labels (`por_Latn`) all find the same configuration; an unknown code's script is taken from its
`_Script` suffix, else from the table of lid.176 languages without reference text, else Latin.
"""

from __future__ import annotations

import json
import statistics
import unicodedata
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from typing import Any

DATA_FORMAT = "peneira.lang-filters/1"

# The labels of lid.176: a code outside them would never match, so every document would be `unlisted`.
LID176_LANGUAGES = frozenset("""
af als am an ar arz as ast av az azb ba bar bcl be bg bh bn bo bpy br bs bxr ca cbk ce ceb ckb co cs cv cy da de
diq dsb dty dv el eml en eo es et eu fa fi fr frr fy ga gd gl gn gom gu gv he hi hif hr hsb ht hu hy ia id ie ilo
io is it ja jbo jv ka kk km kn ko krc ku kv kw ky la lb lez li lmo lo lrc lt lv mai mg mhr min mk ml mn mr mrj ms
mt mwl my myv mzn nah nap nds ne new nl nn no oc or os pa pam pfl pl pms pnb ps pt qu rm ro ru rue sa sah sc scn
sco sd sh si sk sl so sq sr su sv sw ta te tg th tk tl tr tt tyv ug uk ur uz vec vep vi vls vo wa war wuu xal xmf
yi yo yue zh""".split())  # noqa: SIM905

# Individual ISO 639-3 codes that GlotLID (and FineWeb-2) use for a configured macrolanguage, where the
# UDHR translation the configuration comes from is filed under another code.
EXTRA_ALIASES = {"ekk": "et", "lvs": "lv", "npi": "ne", "zsm": "ms", "prs": "fa"}

# Which step each section of the data configures (Step.name -> section).
SECTIONS = ("gopher_quality", "gopher_repetition", "fineweb", "c4")

# lid.176 labels with no reference text in the data: their script, for the fallback. Every other
# lid.176 label without a configuration is written in the Latin script.
FALLBACK_SCRIPT = {
    "arz": "Arab", "azb": "Arab", "lrc": "Arab", "mzn": "Arab", "sd": "Arab", "ps": "Arab", "ku": "Latn",
    "am": "Ethi", "bo": "Tibt",
    "av": "Cyrl", "ba": "Cyrl", "bxr": "Cyrl", "ce": "Cyrl", "cv": "Cyrl", "kv": "Cyrl", "krc": "Cyrl",
    "lez": "Cyrl", "mhr": "Cyrl", "mrj": "Cyrl", "myv": "Cyrl", "rue": "Cyrl", "xal": "Cyrl",
    "bh": "Deva", "dty": "Deva", "gom": "Deva", "new": "Deva", "as": "Beng", "bpy": "Beng",
    "or": "Orya", "si": "Sinh", "te": "Telu", "xmf": "Geor", "wuu": "Hani", "yue": "Hani",
}

# The first word of a letter's Unicode name -> its ISO 15924 script code.
_SCRIPT_OF_NAME = {
    "LATIN": "Latn", "CYRILLIC": "Cyrl", "GREEK": "Grek", "ARABIC": "Arab", "HEBREW": "Hebr",
    "DEVANAGARI": "Deva", "BENGALI": "Beng", "GURMUKHI": "Guru", "GUJARATI": "Gujr", "ORIYA": "Orya",
    "TAMIL": "Taml", "TELUGU": "Telu", "KANNADA": "Knda", "MALAYALAM": "Mlym", "SINHALA": "Sinh",
    "THAI": "Thai", "LAO": "Laoo", "TIBETAN": "Tibt", "MYANMAR": "Mymr", "GEORGIAN": "Geor",
    "ARMENIAN": "Armn", "ETHIOPIC": "Ethi", "KHMER": "Khmr", "THAANA": "Thaa", "HANGUL": "Hang",
    "CJK": "Hani", "HIRAGANA": "Jpan", "KATAKANA": "Jpan", "MONGOLIAN": "Mong", "SYRIAC": "Syrc",
    "CHEROKEE": "Cher", "CANADIAN": "Cans", "TIFINAGH": "Tfng", "OL": "Olck", "NKO": "Nkoo",
}


@lru_cache(maxsize=4096)
def _script_of_char(ch: str) -> str | None:
    name = unicodedata.name(ch, "")
    return _SCRIPT_OF_NAME.get(name.split(" ", 1)[0]) if name else None


def script_counts(text: str, max_letters: int = 2000) -> dict[str, int]:
    """Letters per script among the first `max_letters` letters of `text` (a cheap, model-free signal)."""
    counts: dict[str, int] = {}
    seen = 0
    for ch in text:
        if not ch.isalpha():
            continue
        s = _script_of_char(ch)
        if s is not None:
            counts[s] = counts.get(s, 0) + 1
        seen += 1
        if seen >= max_letters:
            break
    return counts


def dominant_script(text: str, max_letters: int = 2000) -> str | None:
    """The script of most of the text's letters; Japanese (any kana beside Han) is `Jpan`. None: no letters."""
    counts = script_counts(text, max_letters)
    if not counts:
        return None
    if counts.get("Jpan") and counts.get("Hani"):
        counts["Jpan"] += counts.pop("Hani")
    return max(counts, key=lambda s: (counts[s], s))


@dataclass(frozen=True)
class LangConfig:
    """One language's filter settings: `kwargs(step)` are the keyword arguments for that step."""

    lang: str
    script: str
    source: str
    method: str
    fallback: bool
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)

    def kwargs(self, step: str) -> dict[str, Any]:
        """Keyword arguments for the step named `step` (its `name`: gopher_quality, fineweb, …)."""
        section = dict(self.sections.get(step, {}))
        if step == "gopher_quality":
            words = section.pop("stop_words", None)
            if words is None:  # the fallback: no list to check against, so the rule is off
                section["min_stop_words"] = 0
            else:
                section["stop_words"] = {self.lang: list(words)}
        return section


def _int_keys(section: dict[str, Any]) -> dict[str, Any]:
    """JSON keys are strings; the n-gram limits are keyed by n."""
    return {k: ({int(n): v for n, v in val.items()} if k.endswith("ngram_char_frac") else val)
            for k, val in section.items()}


@cache
def _data() -> dict[str, Any]:
    path = resources.files("curate.lang") / "data" / "filters.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != DATA_FORMAT:
        raise ValueError(f"{path}: format {data.get('format')!r}, expected {DATA_FORMAT!r}")
    return data


@cache
def _aliases() -> dict[str, str]:
    """ISO 639-3 code of each configured language's reference text -> its lid.176 code."""
    out = {}
    for lang, entry in _data()["languages"].items():
        code3 = entry.get("code_3")
        if code3:
            out.setdefault(code3, lang)
    return out


def data_version() -> str:
    """The data's format and derivation method, and a digest of its content: what a run's fingerprint keeps."""
    import hashlib

    digest = hashlib.sha256(json.dumps(_data(), sort_keys=True).encode()).hexdigest()[:12]
    return f"{DATA_FORMAT} {_data()['method']} {digest}"


def configured_languages() -> list[str]:
    """The languages with a configuration of their own."""
    return sorted(_data()["languages"])


def canonical(lang: str) -> str:
    """The configured code for `lang` (`por_Latn`, `por` -> `pt`), or `lang` itself.

    A lid.176 label is that language even where it spells another's ISO 639-3 code: lid.176's `als` is
    Alemannic (no configuration), GlotLID's `als_Latn` is Tosk Albanian (`sq`)."""
    langs = _data()["languages"]
    if lang in langs or lang in LID176_LANGUAGES:
        return lang
    base = lang.split("_", 1)[0]
    if base in langs:
        return base
    return _aliases().get(base) or EXTRA_ALIASES.get(base, lang)


def script_of_language(lang: str) -> str:
    """A language code's script: its configuration's, its `_Script` suffix, the fallback table, else Latin."""
    code = canonical(lang)
    entry = _data()["languages"].get(code)
    if entry is not None:
        return entry["script"]
    if "_" in lang and len(lang.rsplit("_", 1)[1]) == 4:
        return lang.rsplit("_", 1)[1]
    return FALLBACK_SCRIPT.get(code, "Latn")


@cache
def config(lang: str) -> LangConfig:
    """`lang`'s configuration, or its script's fallback (`fallback=True`, no stop words)."""
    code = canonical(lang)
    entry = _data()["languages"].get(code)
    if entry is not None:
        sections = {s: _int_keys(entry[s]) for s in SECTIONS if s in entry}
        return LangConfig(code, entry["script"], entry["source"], entry["method"], False, sections)
    script = script_of_language(lang)
    return LangConfig(lang, script, f"fallback: median of the configured {script} languages",
                      "fallback", True, _fallback_sections(script))


@cache
def _fallback_sections(script: str) -> dict[str, dict[str, Any]]:
    """Each threshold's median over the configured languages of `script` (all of them if none has it);
    stop words and end marks are language-specific and are left out."""
    entries = [e for e in _data()["languages"].values() if e["script"] == script and e.get("method") != "published"]
    if not entries:
        entries = [e for e in _data()["languages"].values() if e.get("method") != "published"]
    out: dict[str, dict[str, Any]] = {}
    for section in ("gopher_quality", "gopher_repetition", "fineweb"):
        keys = [k for k in entries[0][section] if k != "stop_words"]
        out[section] = _int_keys({k: _median([e[section][k] for e in entries]) for k in keys})
    return out


def _median(values: list[Any]) -> Any:
    """The median of numbers (an integer for integers: word counts), or of dicts key by key."""
    if isinstance(values[0], dict):
        return {n: _median([v[n] for v in values]) for n in values[0]}
    m = statistics.median(values)
    return round(m) if all(isinstance(v, int) for v in values) else round(m, 3)
