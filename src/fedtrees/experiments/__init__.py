"""Experiments: pure runners that return results; the command line does the I/O.

Each paper experiment is a frozen config and a runner returning a
:class:`Report`; :func:`write_report` writes its CSV, markdown and PNG files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names

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

_HOMES: Final[dict[str, str]] = {
    "DPForestConfig": "fedtrees.experiments.dpforest",
    "DemoResult": "fedtrees.experiments.demo",
    "FedGAConfig": "fedtrees.experiments.fedga",
    "FedGBDTConfig": "fedtrees.experiments.fedgbdt",
    "HeartConfig": "fedtrees.experiments.fedforest_heart",
    "ICDTAConfig": "fedtrees.experiments.icdta",
    "Plot": "fedtrees.experiments._report",
    "Report": "fedtrees.experiments._report",
    "SyntheticConfig": "fedtrees.experiments.fedforest_synthetic",
    "SyntheticDataConfig": "fedtrees.experiments.synthetic",
    "dpforest": "fedtrees.experiments.dpforest",
    "fedforest_heart": "fedtrees.experiments.fedforest_heart",
    "fedforest_synthetic": "fedtrees.experiments.fedforest_synthetic",
    "fedga": "fedtrees.experiments.fedga",
    "fedgbdt": "fedtrees.experiments.fedgbdt",
    "icdta": "fedtrees.experiments.icdta",
    "run_demo": "fedtrees.experiments.demo",
    "run_dpforest": "fedtrees.experiments.dpforest",
    "run_fedforest_heart": "fedtrees.experiments.fedforest_heart",
    "run_fedforest_synthetic": "fedtrees.experiments.fedforest_synthetic",
    "run_fedga": "fedtrees.experiments.fedga",
    "run_fedgbdt": "fedtrees.experiments.fedgbdt",
    "run_icdta": "fedtrees.experiments.icdta",
    "run_synthetic_data": "fedtrees.experiments.synthetic",
    "synthetic": "fedtrees.experiments.synthetic",
    "write_report": "fedtrees.experiments.results",
}
"""Every public name and its module (loaded on first use, PEP 562)."""

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
