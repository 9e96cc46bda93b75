"""Every ported strategy is a table of steps over its own phases (issue 38).

The one skeleton (``algorithms/_phased.py``): a strategy names its rounds in
an ``enum.Enum``, gives one ``Step(ask, absorb)`` per phase, and starts from a
state complete at the agreement (its dataclass has no Optional field but the
ones fixed there).
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from typing import Any

import pytest

from fedtrees.algorithms._one_round import OneRoundPhase, OneRoundState
from fedtrees.algorithms._phased import PhasedStrategy, Step
from fedtrees.algorithms.dpforest import DPTreeStrategy
from fedtrees.algorithms.fedavg._strategy import (
    FedAvgPhase,
    FedAvgState,
    FedAvgStrategy,
)
from fedtrees.algorithms.fedga._state import FedGAPhase, FedGAState
from fedtrees.algorithms.fedga._strategy import FedGAStrategy
from fedtrees.algorithms.fedid3._strategy import (
    FedID3Phase,
    FedID3State,
    FedID3Strategy,
)
from fedtrees.algorithms.icdta._strategy import ICDTAPhase, ICDTAState, ICDTAStrategy
from fedtrees.algorithms.local import LocalForestStrategy
from fedtrees.algorithms.synthetic import SyntheticStrategy
from fedtrees.algorithms.toy import ToyPhase, ToyState, ToyStrategy

PORTS: list[tuple[type[PhasedStrategy[Any, Any]], type[enum.Enum], type]] = [
    (ToyStrategy, ToyPhase, ToyState),
    (ICDTAStrategy, ICDTAPhase, ICDTAState),
    (FedID3Strategy, FedID3Phase, FedID3State),
    (FedAvgStrategy, FedAvgPhase, FedAvgState),
    (FedGAStrategy, FedGAPhase, FedGAState),
    (DPTreeStrategy, OneRoundPhase, OneRoundState),
    (SyntheticStrategy, OneRoundPhase, OneRoundState),
    (LocalForestStrategy, OneRoundPhase, OneRoundState),
]
OPTIONAL_AT_START = {
    (ICDTAState, "binning"),  # None: base="cart" codes raw values (fixed at start)
    (FedAvgState, "evaluate"),  # None: no server-held evaluation set
}


@pytest.mark.parametrize(("cls", "phases", "state"), PORTS)
def test_every_phase_has_one_step(
    cls: type[PhasedStrategy[Any, Any]], phases: type[enum.Enum], state: type
) -> None:
    assert issubclass(cls, PhasedStrategy)
    table = cls.steps(object.__new__(cls))  # the table needs no state
    assert set(table) == set(phases)
    assert all(isinstance(step, Step) for step in table.values())
    assert isinstance(cls.first, phases)


@pytest.mark.parametrize(("cls", "phases", "state"), PORTS)
def test_the_state_has_no_optional_filled_later(
    cls: type[PhasedStrategy[Any, Any]], phases: type[enum.Enum], state: type
) -> None:
    hints = typing.get_type_hints(state)
    for f in dataclasses.fields(state):
        optional = type(None) in typing.get_args(hints[f.name])
        assert not optional or (state, f.name) in OPTIONAL_AT_START, f.name
