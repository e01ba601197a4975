"""What pyproject.toml cannot say without an experimental table: extract.Main's C extension, the module
curate.extract._walk, built by pip with the system's C compiler (plain C on the CPython API and Lexbor). Its
files, in curate/extract/: _walk.c (the parse and the block walk over Lexbor's tree, the module's init), _score.c
(the block classifier: features and logistic models), _depth.c (the guards' nesting-depth pre-scan), _text.c
(text utilities they share), and the headers _walk.h and _text.h; plus the Lexbor modules the parse needs (core,
dom, html, ns, tag and the platform's memory port), vendored in third_party/lexbor at the release its `version`
file names, under its LICENSE and NOTICE (Apache-2.0; VENDORED.md says what was taken), compiled into the module
as a static library is. Everything is compiled with hidden visibility, so the module exports PyInit__walk alone
(`nm -D`): neither Lexbor's functions nor the ones the files share are visible to, or clash with, another module
that links a Lexbor. A second module, curate.filters._repetition (curate/filters/_repetition.c, plain C on the
CPython API alone), counts GopherRepetition's n-gram statistics; the filter falls back to its Python reference
without it."""

import os
from pathlib import Path

from setuptools import Extension, setup

C = "curate/extract/"
LEXBOR = Path("third_party/lexbor/source")
PORT = "windows_nt" if os.name == "nt" else "posix"
lexbor_sources = sorted(
    str(p) for p in LEXBOR.joinpath("lexbor").rglob("*.c")
    if "ports" not in p.parts or PORT in p.parts
)
unix = os.name != "nt"
setup(ext_modules=[Extension(
    "curate.extract._walk",
    sources=[C + "_walk.c", C + "_score.c", C + "_depth.c", C + "_text.c", *lexbor_sources],
    depends=[C + "_walk.h", C + "_text.h"],  # a change to a header rebuilds the module
    include_dirs=[str(LEXBOR)],
    define_macros=[("LEXBOR_STATIC", None)],  # Lexbor's LXB_API marks nothing for export
    extra_compile_args=["-fvisibility=hidden", "-Wno-unused-function", "-Wno-unused-variable"] if unix else [],
), Extension(
    # GopherRepetition's n-gram statistics (curate/filters/gopher.py falls back to Python without it)
    "curate.filters._repetition",
    sources=["curate/filters/_repetition.c"],
    extra_compile_args=["-fvisibility=hidden"] if unix else [],
)])
