"""Experiments: pure runners that return results; the command line does the I/O.

Each paper experiment is a frozen config and a runner returning a
:class:`Report`; :func:`write_report` writes its CSV, markdown and PNG files.
"""

from fedtrees.experiments import (
    dpforest,
    fedforest_heart,
    fedforest_synthetic,
    fedga,
    fedgbdt,
    icdta,
    synthetic,
)
from fedtrees.experiments._report import Plot, Report
from fedtrees.experiments.demo import DemoResult, run_demo
from fedtrees.experiments.dpforest import DPForestConfig, run_dpforest
from fedtrees.experiments.fedforest_heart import HeartConfig, run_fedforest_heart
from fedtrees.experiments.fedforest_synthetic import (
    SyntheticConfig,
    run_fedforest_synthetic,
)
from fedtrees.experiments.fedga import FedGAConfig, run_fedga
from fedtrees.experiments.fedgbdt import FedGBDTConfig, run_fedgbdt
from fedtrees.experiments.icdta import ICDTAConfig, run_icdta
from fedtrees.experiments.results import write_report
from fedtrees.experiments.synthetic import SyntheticDataConfig, run_synthetic_data

__all__ = [
    "DPForestConfig",
    "DemoResult",
    "FedGAConfig",
    "FedGBDTConfig",
    "HeartConfig",
    "ICDTAConfig",
    "Plot",
    "Report",
    "SyntheticConfig",
    "SyntheticDataConfig",
    "dpforest",
    "fedforest_heart",
    "fedforest_synthetic",
    "fedga",
    "fedgbdt",
    "icdta",
    "run_demo",
    "run_dpforest",
    "run_fedforest_heart",
    "run_fedforest_synthetic",
    "run_fedga",
    "run_fedgbdt",
    "run_icdta",
    "run_synthetic_data",
    "synthetic",
    "write_report",
]
