"""Fixed costs of the `schedopt solve` process: scipy.sparse without numpy's Fortran tools, and
freed memory kept for reuse.

scipy (1.17) copies numpy's whole namespace the first time `scipy.sparse` is imported
(`scipy._lib.array_api_compat.numpy` reads every public attribute of numpy), and reading
`numpy.f2py` imports f2py, numpy's Fortran wrapper generator, and through it
charset_normalizer: about 0.05-0.09 CPU s of a start-up of ~0.6 s, for modules a solve never
runs. `import_scipy_sparse` imports scipy.sparse while `numpy.f2py` is an empty placeholder,
then removes the placeholder, so that a later `import numpy.f2py` loads the real module.

A solve allocates and frees arrays of M floats again and again (8 MB each at 1,000,000 jobs).
glibc's malloc hands blocks that large to the kernel and back (mmap/munmap), so each new array
is faulted in page by page: `keep_freed_memory` makes the process keep them for reuse instead
(1,000,000 jobs: ~0.4 s less system time of ~2.2 s, the same peak memory).
"""

from __future__ import annotations

import ctypes
import sys
import types

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
_KEEP_BYTES = 1 << 30


def import_scipy_sparse() -> None:
    """Import scipy.sparse (once) without importing numpy.f2py."""
    if "scipy.sparse" in sys.modules or "numpy.f2py" in sys.modules:
        return
    import numpy

    placeholder = types.ModuleType("numpy.f2py", "placeholder while scipy.sparse is imported")
    sys.modules["numpy.f2py"] = placeholder
    numpy.f2py = placeholder  # read by the namespace copy without calling numpy.__getattr__
    try:
        import scipy.sparse  # noqa: F401
    finally:
        if sys.modules.get("numpy.f2py") is placeholder:
            del sys.modules["numpy.f2py"]
        if vars(numpy).get("f2py") is placeholder:
            del numpy.f2py


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
