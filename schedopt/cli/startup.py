"""Fixed costs of the `schedopt solve` process: scipy.sparse without numpy's unused submodules,
and freed memory kept for reuse.

scipy (1.17) copies numpy's whole namespace the first time `scipy.sparse` is imported
(`scipy._lib.array_api_compat.numpy` reads every public attribute of numpy), and each read of
a lazily loaded submodule imports it: `numpy.f2py` (the Fortran wrapper generator, and through
it charset_normalizer), `numpy.testing` (with unittest, pydoc and email), `numpy.ma`,
`numpy.random`, `numpy.polynomial` and a few small ones, ~0.14 CPU s of a start-up of ~0.6 s,
for modules a solve never runs. `import_scipy_sparse` imports scipy.sparse while each of them
is a stand-in module that imports the real one when an attribute is first read from it, then
removes the stand-ins, so that a later `import numpy.random` loads the real module.

A solve allocates and frees arrays of M floats again and again (8 MB each at 1,000,000 jobs).
glibc's malloc hands blocks that large to the kernel and back (mmap/munmap), so each new array
is faulted in page by page: `keep_freed_memory` makes the process keep them for reuse instead
(1,000,000 jobs: ~0.4 s less system time of ~2.2 s, the same peak memory).
"""

from __future__ import annotations

import ctypes
import importlib
import sys
import types

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
_KEEP_BYTES = 1 << 30
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


def import_scipy_sparse() -> None:
    """Import scipy.sparse (once) without importing the numpy submodules in `_DEFERRED`."""
    if "scipy.sparse" in sys.modules:
        return
    import numpy

    stand_ins = {}
    for name in _DEFERRED:
        full = f"numpy.{name}"
        if full not in sys.modules and name not in vars(numpy):
            stand_ins[name] = sys.modules[full] = _Deferred(full)
            setattr(numpy, name, stand_ins[name])  # read without calling numpy.__getattr__
    try:
        import scipy.sparse  # noqa: F401
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(f"numpy.{name}") is stand_in:
                del sys.modules[f"numpy.{name}"]
            if vars(numpy).get(name) is stand_in:
                delattr(numpy, name)


def keep_freed_memory() -> None:
    """With glibc: blocks up to 1 GiB come from the process's heap, and up to 1 GiB of freed
    heap stays with the process; elsewhere nothing changes."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # not glibc (musl, macOS, Windows)
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mallopt(_M_MMAP_THRESHOLD, _KEEP_BYTES)
    mallopt(_M_TRIM_THRESHOLD, _KEEP_BYTES)
