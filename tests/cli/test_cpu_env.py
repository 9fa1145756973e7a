"""pir.cpu_env: OpenBLAS's AVX-512 kernels for AMD CPUs that have them, chosen only before
numpy loads and only when the user has not chosen."""

import os
import subprocess
import sys

import pytest

CODE = "import pir.cpu_env as c; print(c.choose_openblas_kernels(), {})"


def _run(prelude: str = "", env_extra: dict | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    env.update(env_extra or {})
    code = prelude + CODE.format("__import__('os').environ.get('OPENBLAS_CORETYPE')")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True).stdout.split()


def _expected() -> str | None:
    try:
        info = open("/proc/cpuinfo").read()
    except OSError:
        return None
    flags = next((l.split(":", 1)[1].split() for l in info.splitlines()
                  if l.startswith("flags")), [])
    amd = "AuthenticAMD" in info
    need = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"}
    return "SkylakeX" if amd and need <= set(flags) else None


def test_chosen_from_the_cpu_when_unset():
    want = str(_expected())
    assert _run() == [want, want]


def test_a_users_choice_is_kept():
    assert _run(env_extra={"OPENBLAS_CORETYPE": "Haswell"}) == ["None", "Haswell"]


def test_nothing_once_numpy_is_loaded():
    assert _run(prelude="import numpy; ") == ["None", "None"]


@pytest.mark.skipif(_expected() is None, reason="this CPU keeps OpenBLAS's own choice")
def test_the_pir_command_sets_it_before_numpy_loads():
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    code = ("import sys; sys.argv = ['pir', '--version']; import pir.cli.main as m; "
            "import os; print(os.environ['OPENBLAS_CORETYPE'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "SkylakeX"


def _blas_threads(code: str, **env_extra) -> list[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    env.update(env_extra)
    code += "; import os; print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True).stdout.split()


def test_pir_run_gives_numpys_blas_one_thread_unless_the_user_chose():
    # `pir run`'s command is looked up before numpy loads: OpenBLAS then starts with one
    # thread, whose spinning would otherwise starve TVM's pool
    lookup = "from pir.cli.main import main; main.get_command(None, 'run')"
    assert _blas_threads(lookup) == ["1"]
    assert _blas_threads(lookup, OMP_NUM_THREADS="4") == ["None"]
    assert _blas_threads(lookup, OPENBLAS_NUM_THREADS="3") == ["3"]
    # other commands leave it alone, and so does a call after numpy has loaded
    assert _blas_threads("from pir.cli.main import main; main.get_command(None, 'optimize')") \
        == ["None"]
    assert _blas_threads("import numpy, pir.cpu_env as c; print(c.one_blas_thread())") \
        == ["False", "None"]
