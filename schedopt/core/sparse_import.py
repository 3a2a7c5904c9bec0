"""scipy.sparse, imported where a sparse matrix is first built rather than when schedopt is.

A max-min fairness solve builds its LPs as plain column arrays (`backends.base.ColumnArrays`)
and never needs scipy, whose import is ~0.1 s of `schedopt solve`'s start; the modelling layer,
the other policies and the backends other than HiGHS call `scipy_sparse()`.

scipy (1.17) copies numpy's whole namespace the first time `scipy.sparse` is imported
(`scipy._lib.array_api_compat.numpy` reads every public attribute of numpy), and each read of
a lazily loaded submodule imports it: `numpy.f2py` (the Fortran wrapper generator, and through
it charset_normalizer), `numpy.testing` (with unittest, pydoc and email), `numpy.ma`,
`numpy.random`, `numpy.polynomial` and a few small ones, ~0.14 CPU s, for modules a solve never
runs. `scipy_sparse()` imports scipy.sparse while each of them is a stand-in module that imports
the real one when an attribute is first read from it, then removes the stand-ins, so that a
later `import numpy.random` loads the real module.
"""

from __future__ import annotations

import importlib
import sys
import types

# numpy's lazily loaded submodules that scipy's namespace copy reads and a solve does not use.
_DEFERRED = ("f2py", "testing", "ma", "random", "polynomial", "ctypeslib", "char", "rec")


class _Deferred(types.ModuleType):
    """Stands for a numpy submodule in scipy's copy of numpy's namespace: the real module is
    imported when one of its attributes is first read, and its namespace copied in, so that
    later reads find their attribute without this detour."""

    def __getattr__(self, attribute: str):
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        real = importlib.import_module(self.__name__)
        vars(self).update(vars(real))
        return getattr(real, attribute)


def scipy_sparse() -> types.ModuleType:
    """The scipy.sparse module, imported on the first call without importing the numpy
    submodules in `_DEFERRED`."""
    module = sys.modules.get("scipy.sparse")
    if module is not None:
        return module
    import numpy

    stand_ins = {}
    for name in _DEFERRED:
        full = f"numpy.{name}"
        if full not in sys.modules and name not in vars(numpy):
            stand_ins[name] = sys.modules[full] = _Deferred(full)
            setattr(numpy, name, stand_ins[name])  # read without calling numpy.__getattr__
    try:
        import scipy.sparse
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(f"numpy.{name}") is stand_in:
                del sys.modules[f"numpy.{name}"]
            if vars(numpy).get(name) is stand_in:
                delattr(numpy, name)
    return scipy.sparse
