# pir: `make demo` runs the sample pipeline, `make test` the tests; both set up .venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv demo test onnx-suite onnx-suite-optimized onnx-suite-compiled onnx-suite-update \
	cuda-check cuda-suite bench clean

# Create or update the virtual environment with pir and everything it needs.
venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,dist]'
	touch $@

demo: venv
	$(MAKE) -C samples/mlp PIR=$(CURDIR)/$(VENV)/bin/pir PYTHON=$(CURDIR)/$(PY)

test: venv
	$(PY) -m pytest -q -n 2 tests

# The ONNX backend node suite through pir (import, then the reference runtime).
onnx-suite: venv
	$(PY) -m pir.testing.onnx_suite -v

# The same suite through `import | optimize | run` with the default pipeline: it must pass at
# least as many cases as `make onnx-suite`.
onnx-suite-optimized: venv
	$(PY) -m pir.testing.onnx_suite -v --pipeline default

# The same suite compiled: import | optimize (..., fuse) | codegen --target llvm | run on the
# tvm runtime, one TVM build per case spread over the workers, into a private cache that is
# removed afterwards.  Slow (minutes), so not part of `make test`; exceptions in docs/codegen.md.
onnx-suite-compiled: venv
	$(PY) -m pir.testing.onnx_suite -v --compiled

# Refresh the checked-in list of passing cases (only ever grows: see tests/onnx_suite).
onnx-suite-update: venv
	$(PY) -m pir.testing.onnx_suite --write-passing tests/onnx_suite/passing.txt

# The CUDA tests in full: besides what `make test` runs (every kernel of every test model
# compiled with nvcc for sm_90 and sm_80, both generators), every model on the host
# emulation and on the runtime's stand-in for cupy.
cuda-check: venv
	PIR_CUDA_FULL=1 $(PY) -m pytest -q -n 2 tests/cuda

# The ONNX node suite through `codegen --target cuda` (both generators): kernels kept on the
# host by reason, every kernel compiled by nvcc, every 4th case emulated (minutes; no GPU).
cuda-suite: venv
	$(PY) tests/cuda/node_suite.py

bench: venv
	$(PY) bench/ir_throughput.py
	$(PY) bench/pass_throughput.py
	$(PY) bench/kernels.py
	$(PY) bench/models.py
	$(PY) bench/compile.py
	$(PY) bench/autodiff.py
	$(PY) bench/shard.py

clean:
	rm -rf $(VENV) samples/*/build
