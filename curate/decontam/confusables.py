"""Letters of other scripts that look like a Latin letter: the confusables fold of `curate.decontam.text`.

A copy of a benchmark item with Cyrillic `а` or `о`, or Greek `ο`, in place of Latin letters reads the same
to a person, but is made of different words for an n-gram match.
This table maps each such letter to the lowercase ASCII letter it looks like, and the decontamination
fold applies it (after NFKD, dropping marks and casefolding) in the index and in the scan alike.

Generated from Unicode's confusables.txt (UTS #39, "Unicode Security Mechanisms"), as bundled in the
PyPI package confusable-homoglyphs 3.3.1 (`confusable_homoglyphs/confusables.json`, MIT licence; the
data is © Unicode, Inc., under the Unicode License, https://www.unicode.org/terms_of_use.html).
Kept: entries whose source is a non-ASCII Cyrillic, Greek or Latin letter (by character name) and whose
prototype is one ASCII letter, less those that NFKD changes, since the fold decomposes before it
looks a letter up here (`ѐ` and `ά` fold to `e` and `a` by NFKD and dropping the accent; the lunate
sigma `ϲ` and `ϒ` decompose to the Greek `ς` and `Υ` and fold as those, to o and u). Then, so that case never decides a match, the table is keyed by casefolded letters: an
uppercase entry (Cyrillic `В` → B) also maps its lowercase (`в` → b), unless the lowercase has a
mapping of its own (Greek `Ν` → N but `ν` → v, and `Υ` → Y but `υ` → u: the lowercase wins, so
capital Nu and Upsilon in place of N and Y are not caught). An uppercase I-like letter whose prototype
is `l` (Cyrillic `І`, Greek `Ι`) maps to i, the letter it stands for. 87 entries; the generator is:

    d = json.load(open("confusable_homoglyphs/confusables.json"))
    raw = {}
    for c, lst in d.items():
        if len(c) != 1 or c.isascii() or not c.isalpha() or len(lst) != 1:
            continue
        if not unicodedata.name(c, "").startswith(("CYRILLIC", "GREEK", "LATIN")):
            continue
        t = lst[0]["c"]
        if len(t) == 1 and t.isascii() and t.isalpha() and unicodedata.normalize("NFKD", c) == c:
            raw[c] = ("I" if t == "l" and c.isupper() else t).lower()
    table = {c: t for c, t in raw.items() if c.casefold() == c}
    for c, t in raw.items():
        table.setdefault(c.casefold(), t)
"""

CONFUSABLES: dict[str, str] = {
    "\u0131": "i",  # ı LATIN SMALL LETTER DOTLESS I
    "\u0185": "b",  # ƅ LATIN SMALL LETTER TONE SIX
    "\u018d": "g",  # ƍ LATIN SMALL LETTER TURNED DELTA
    "\u01bd": "s",  # ƽ LATIN SMALL LETTER TONE FIVE
    "\u01c0": "l",  # ǀ LATIN LETTER DENTAL CLICK
    "\u0251": "a",  # ɑ LATIN SMALL LETTER ALPHA
    "\u0261": "g",  # ɡ LATIN SMALL LETTER SCRIPT G
    "\u0263": "y",  # ɣ LATIN SMALL LETTER GAMMA
    "\u0269": "i",  # ɩ LATIN SMALL LETTER IOTA
    "\u026a": "i",  # ɪ LATIN LETTER SMALL CAPITAL I
    "\u026f": "w",  # ɯ LATIN SMALL LETTER TURNED M
    "\u0280": "r",  # ʀ LATIN LETTER SMALL CAPITAL R
    "\u028b": "u",  # ʋ LATIN SMALL LETTER V WITH HOOK
    "\u028f": "y",  # ʏ LATIN LETTER SMALL CAPITAL Y
    "\u029d": "j",  # ʝ LATIN SMALL LETTER J WITH CROSSED-TAIL
    "\u03b1": "a",  # α GREEK SMALL LETTER ALPHA
    "\u03b2": "b",  # β GREEK SMALL LETTER BETA
    "\u03b3": "y",  # γ GREEK SMALL LETTER GAMMA
    "\u03b5": "e",  # ε GREEK SMALL LETTER EPSILON
    "\u03b6": "z",  # ζ GREEK SMALL LETTER ZETA
    "\u03b7": "h",  # η GREEK SMALL LETTER ETA
    "\u03b9": "i",  # ι GREEK SMALL LETTER IOTA
    "\u03ba": "k",  # κ GREEK SMALL LETTER KAPPA
    "\u03bc": "m",  # μ GREEK SMALL LETTER MU
    "\u03bd": "v",  # ν GREEK SMALL LETTER NU
    "\u03bf": "o",  # ο GREEK SMALL LETTER OMICRON
    "\u03c1": "p",  # ρ GREEK SMALL LETTER RHO
    "\u03c3": "o",  # σ GREEK SMALL LETTER SIGMA
    "\u03c4": "t",  # τ GREEK SMALL LETTER TAU
    "\u03c5": "u",  # υ GREEK SMALL LETTER UPSILON
    "\u03c7": "x",  # χ GREEK SMALL LETTER CHI
    "\u03dd": "f",  # ϝ GREEK SMALL LETTER DIGAMMA
    "\u03f3": "j",  # ϳ GREEK LETTER YOT
    "\u03fb": "m",  # ϻ GREEK SMALL LETTER SAN
    "\u0430": "a",  # а CYRILLIC SMALL LETTER A
    "\u0432": "b",  # в CYRILLIC SMALL LETTER VE
    "\u0433": "r",  # г CYRILLIC SMALL LETTER GHE
    "\u0435": "e",  # е CYRILLIC SMALL LETTER IE
    "\u043a": "k",  # к CYRILLIC SMALL LETTER KA
    "\u043c": "m",  # м CYRILLIC SMALL LETTER EM
    "\u043d": "h",  # н CYRILLIC SMALL LETTER EN
    "\u043e": "o",  # о CYRILLIC SMALL LETTER O
    "\u0440": "p",  # р CYRILLIC SMALL LETTER ER
    "\u0441": "c",  # с CYRILLIC SMALL LETTER ES
    "\u0442": "t",  # т CYRILLIC SMALL LETTER TE
    "\u0443": "y",  # у CYRILLIC SMALL LETTER U
    "\u0445": "x",  # х CYRILLIC SMALL LETTER HA
    "\u044c": "b",  # ь CYRILLIC SMALL LETTER SOFT SIGN
    "\u0455": "s",  # ѕ CYRILLIC SMALL LETTER DZE
    "\u0456": "i",  # і CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I
    "\u0458": "j",  # ј CYRILLIC SMALL LETTER JE
    "\u0461": "w",  # ѡ CYRILLIC SMALL LETTER OMEGA
    "\u0475": "v",  # ѵ CYRILLIC SMALL LETTER IZHITSA
    "\u04af": "y",  # ү CYRILLIC SMALL LETTER STRAIGHT U
    "\u04bb": "h",  # һ CYRILLIC SMALL LETTER SHHA
    "\u04bd": "e",  # ҽ CYRILLIC SMALL LETTER ABKHASIAN CHE
    "\u04cf": "i",  # ӏ CYRILLIC SMALL LETTER PALOCHKA
    "\u0501": "d",  # ԁ CYRILLIC SMALL LETTER KOMI DE
    "\u050d": "g",  # ԍ CYRILLIC SMALL LETTER KOMI SJE
    "\u051b": "q",  # ԛ CYRILLIC SMALL LETTER QA
    "\u051d": "w",  # ԝ CYRILLIC SMALL LETTER WE
    "\u1d04": "c",  # ᴄ LATIN LETTER SMALL CAPITAL C
    "\u1d0f": "o",  # ᴏ LATIN LETTER SMALL CAPITAL O
    "\u1d11": "o",  # ᴑ LATIN SMALL LETTER SIDEWAYS O
    "\u1d1c": "u",  # ᴜ LATIN LETTER SMALL CAPITAL U
    "\u1d20": "v",  # ᴠ LATIN LETTER SMALL CAPITAL V
    "\u1d21": "w",  # ᴡ LATIN LETTER SMALL CAPITAL W
    "\u1d22": "z",  # ᴢ LATIN LETTER SMALL CAPITAL Z
    "\u1d26": "r",  # ᴦ GREEK LETTER SMALL CAPITAL GAMMA
    "\u1d83": "g",  # ᶃ LATIN SMALL LETTER G WITH PALATAL HOOK
    "\u1d8c": "y",  # ᶌ LATIN SMALL LETTER V WITH PALATAL HOOK
    "\u1e9d": "f",  # ẝ LATIN SMALL LETTER LONG S WITH HIGH STROKE
    "\u1eff": "y",  # ỿ LATIN SMALL LETTER Y WITH LOOP
    "\ua647": "i",  # ꙇ CYRILLIC SMALL LETTER IOTA
    "\ua731": "s",  # ꜱ LATIN LETTER SMALL CAPITAL S
    "\ua799": "f",  # ꞙ LATIN SMALL LETTER F WITH STROKE
    "\ua79f": "u",  # ꞟ LATIN SMALL LETTER VOLAPUK UE
    "\ua7b5": "b",  # ꞵ LATIN SMALL LETTER BETA
    "\uab32": "e",  # ꬲ LATIN SMALL LETTER BLACKLETTER E
    "\uab35": "f",  # ꬵ LATIN SMALL LETTER LENIS F
    "\uab3d": "o",  # ꬽ LATIN SMALL LETTER BLACKLETTER O
    "\uab47": "r",  # ꭇ LATIN SMALL LETTER R WITHOUT HANDLE
    "\uab48": "r",  # ꭈ LATIN SMALL LETTER DOUBLE R
    "\uab4e": "u",  # ꭎ LATIN SMALL LETTER U WITH SHORT RIGHT LEG
    "\uab52": "u",  # ꭒ LATIN SMALL LETTER U WITH LEFT HOOK
    "\uab53": "x",  # ꭓ LATIN SMALL LETTER CHI
    "\uab5a": "y",  # ꭚ LATIN SMALL LETTER Y WITH SHORT RIGHT LEG
}
