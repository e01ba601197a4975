"""What pyproject.toml cannot say without an experimental table: extract.Main's block walk, a C extension
built by pip with the system's C compiler (curate/extract/_walk.c, plain C on the CPython API; it finds
Lexbor's functions in selectolax's already loaded module at import, so it links to no library)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("curate.extract._walk", ["curate/extract/_walk.c"])])
