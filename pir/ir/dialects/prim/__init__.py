"""The ``prim`` dialect: the primitive ops that autodiff, sharding and codegen must cover.

One module per op family; importing this package registers them all.
"""

import importlib as _importlib
import pkgutil as _pkgutil

for _info in _pkgutil.iter_modules(__path__):
    _importlib.import_module(f"{__name__}.{_info.name}")
