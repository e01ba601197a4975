"""What pyproject.toml cannot say without an experimental table: extract.Main's C extension, the module
curate.extract._walk, built by pip with the system's C compiler (plain C on the CPython API; it finds Lexbor's
functions in selectolax's already loaded module at import, so it links to no library). Its files, in
curate/extract/: _walk.c (the block walk over Lexbor's tree, the module's init), _score.c (the block
classifier: features and logistic models), _depth.c (the guards' nesting-depth pre-scan), _text.c (text
utilities they share), and the headers _walk.h and _text.h. Only PyInit__walk is exported: the functions the
files share stay inside the module (and are called directly, not through the PLT)."""

from setuptools import Extension, setup

C = "curate/extract/"
setup(ext_modules=[Extension(
    "curate.extract._walk",
    sources=[C + "_walk.c", C + "_score.c", C + "_depth.c", C + "_text.c"],
    depends=[C + "_walk.h", C + "_text.h"],  # a change to a header rebuilds the module
    extra_compile_args=["-fvisibility=hidden"],
)])
