"""What pyproject.toml cannot say without an experimental table: extract.Main's block walk, a C extension
built by pip with the system's C compiler (curate/extract/_walk.c, plain C on the CPython API)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("curate.extract._walk", ["curate/extract/_walk.c"])])
