"""What a worker process may skip before its first record (issue 45): pandas, which pyarrow imports for nothing.

pyarrow, at the first array it builds from Python objects, imports pandas where it is installed (its C++ converter,
to know `pandas.NA` and pandas' timestamps, and its `_pandas_api` shim, to recognise a `Series` given as data):
0.15-0.25 CPU s and ~40 MB in every process, a quarter of a one-file run's fixed cost, though no step of ours hands
pyarrow a pandas object. `skip_pandas()` builds that first array while `import pandas` fails, so pyarrow settles on
"no pandas", unless something imported pandas already (a pipeline file that uses it). Anything that imports pandas
afterwards (a user's step, `to_pandas`) re-arms the shim, so Series, DataFrames and `to_pandas` work as always;
what stays off for the process is the converter's knowledge of `pandas.NA` inside a plain Python list
(`pa.array([pd.NA], from_pandas=True)`), which no writer of ours produces.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

_armed = False


def skip_pandas() -> None:
    """Answer pyarrow's "is pandas installed?" with no, unless pandas is imported already; once per process."""
    global _armed
    if _armed or "pandas" in sys.modules:
        return
    _armed = True
    import pyarrow

    refuse = _Refuse()
    sys.meta_path.insert(0, refuse)  # `import pandas` raises ImportError now
    try:
        pyarrow.array([""])  # the converter and the shim try once each and remember the answer
    finally:
        sys.meta_path.remove(refuse)
    sys.meta_path.insert(0, _Rearm())


class _Refuse(importlib.abc.MetaPathFinder):
    """`import pandas` fails while this is first on `sys.meta_path`."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas":
            raise ImportError("pandas: not for pyarrow's first array (curate.run.lean)")
        return None


class _Rearm(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """On the first `import pandas` after `skip_pandas`: imports it as usual, then asks pyarrow's shim for its
    pandas module, which makes it import and use pandas (a shim that found no pandas tries again when asked)."""

    def find_spec(self, name, path=None, target=None):
        if name != "pandas":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        self.plain = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self.plain.create_module(spec)

    def exec_module(self, module) -> None:
        module.__spec__.loader = module.__loader__ = self.plain  # pandas as if imported plainly
        self.plain.exec_module(module)
        from pyarrow.lib import _pandas_api

        _pandas_api.compat  # noqa: B018  imports pyarrow.pandas_compat, sets the shim's pandas types
