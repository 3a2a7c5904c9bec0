"""Start-up cost of the `schedopt solve` process: scipy.sparse without numpy's Fortran tools.

scipy (1.17) copies numpy's whole namespace the first time `scipy.sparse` is imported
(`scipy._lib.array_api_compat.numpy` reads every public attribute of numpy), and reading
`numpy.f2py` imports f2py, numpy's Fortran wrapper generator, and through it
charset_normalizer: about 0.05-0.09 CPU s of a start-up of ~0.6 s, for modules a solve never
runs. `import_scipy_sparse` imports scipy.sparse while `numpy.f2py` is an empty placeholder,
then removes the placeholder, so that a later `import numpy.f2py` loads the real module.
"""

from __future__ import annotations

import sys
import types


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
