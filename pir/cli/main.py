"""The ``pir`` command: a group of file-in/file-out stages."""

from __future__ import annotations

import importlib

from pir.cpu_env import choose_openblas_kernels, one_blas_thread

choose_openblas_kernels()  # before anything imports numpy

import click  # noqa: E402

from pir import __version__  # noqa: E402

# Commands are imported when used, so `pir --help` and each stage start fast.
_COMMANDS = {
    "autodiff": ("pir.cli.autodiff_cmd", "autodiff_cmd"),
    "codegen": ("pir.cli.codegen_cmd", "codegen_cmd"),
    "diff": ("pir.cli.diff_cmd", "diff_cmd"),
    "import": ("pir.cli.import_cmd", "import_cmd"),
    "link": ("pir.cli.link_cmd", "link_cmd"),
    "ops": ("pir.cli.ops_cmd", "ops_cmd"),
    "optimize": ("pir.cli.optimize_cmd", "optimize_cmd"),
    "passes": ("pir.cli.passes_cmd", "passes_cmd"),
    "run": ("pir.cli.run_cmd", "run_cmd"),
    "shard": ("pir.cli.shard_cmd", "shard_cmd"),
    "show": ("pir.cli.show_cmd", "show_cmd"),
    "verify": ("pir.cli.verify_cmd", "verify_cmd"),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(_COMMANDS)

    def get_command(self, ctx, name):
        if name not in _COMMANDS:
            return None
        if name == "run":
            one_blas_thread()  # before the runtime imports numpy (see pir.cpu_env)
        module, attr = _COMMANDS[name]
        return getattr(importlib.import_module(module), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@click.option("--max-tensor-bytes", type=click.IntRange(min=0), default=None, metavar="N",
              help="The most bytes one tensor that pir reads or makes may take (default: "
                   "this machine's physical memory); a larger one is an error.")
@click.version_option(__version__, prog_name="pir")
def main(debug: bool, max_tensor_bytes: int | None) -> None:
    """pir: a graph compiler toolchain on an SSA IR (modelled on PaddlePaddle's PIR).

    Each command is a stage that reads one file and writes one file; `-` means stdin or
    stdout.  Start with `pir import model.onnx -o m.pir`, then `pir run m.pir --check
    model.onnx`.
    """
    from pir.limits import set_tensor_bytes_limit

    # for this command only (a library user calling main() twice gets the default back)
    click.get_current_context().call_on_close(set_tensor_bytes_limit(max_tensor_bytes))


if __name__ == "__main__":
    main()
