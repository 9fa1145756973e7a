"""Reference rule for nn.identity."""

from pir.runtimes.reference.registry import evaluates


@evaluates("nn.identity")
def identity(op, x):
    return x
