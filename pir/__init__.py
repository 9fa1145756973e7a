"""pir: a graph compiler toolchain on an SSA IR modelled on PaddlePaddle 3.0's PIR."""

__version__ = "0.1.0"
