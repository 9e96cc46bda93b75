"""Experiments: pure runners that return results; the command line does the I/O."""

from fedtrees.experiments.demo import DemoResult, run_demo

__all__ = ["DemoResult", "run_demo"]
