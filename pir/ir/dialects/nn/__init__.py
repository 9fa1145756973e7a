"""The ``nn`` dialect: composite ops close to ONNX semantics (the newest opset's).

One module per op family; importing this package registers them all.  Names are the ONNX op
names in snake case (``nn.reduce_sum``, ``nn.conv_transpose``), with short names for the
normalisations (``nn.layer_norm``, ``nn.batch_norm``); attributes are the ONNX attributes in
snake case.  See docs/ops.md for the list.
"""

import importlib as _importlib
import pkgutil as _pkgutil

for _info in _pkgutil.iter_modules(__path__):
    _importlib.import_module(f"{__name__}.{_info.name}")
