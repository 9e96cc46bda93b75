"""The ServerApp's log says, at a job's start, its rounds and its time over Flower.

The ServerApp's round callbacks (``job_callbacks``) run here on an in-process job:
the same callbacks, the same Flower logger, no SuperLink.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import numpy as np
import pytest

pytest.importorskip("flwr")

from fedtrees.algorithms import run_job
from fedtrees.federation import FLOWER_ROUND_SECONDS, Federation
from fedtrees.federation.flower._apps import job_callbacks

PLAN = re.compile(
    r"fedtrees: (\S+) takes at most (\d+) rounds \(the agreement included\), "
    r"about (.+) over Flower at ([0-9.]+) s a round"
)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def flower_log() -> Any:
    logger = logging.getLogger("flwr")
    handler, level = _Lines(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler.lines
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.mark.parametrize(
    ("job", "params"),
    [
        ("fedgbdt", {"n_estimators": 4, "max_depth": 2, "random_state": 0}),
        ("fedforest", {"n_estimators": 2, "max_depth": 3, "random_state": 0}),
        ("toy", {"feature": 0, "n_bins": 2, "n_rounds": 2}),
    ],
)
def test_the_first_line_after_the_agreement_says_rounds_and_time(
    flower_log: list[str], job: str, params: dict[str, Any]
) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] > 0).astype(int)
    fed = Federation.from_groups(X, y, np.repeat(["a", "b"], 150))
    _, ledger = run_job(job, fed, params, callbacks=job_callbacks(job))
    plan = [m for line in flower_log if (m := PLAN.match(line))]
    assert len(plan) == 1, flower_log
    name, rounds, time, per_round = plan[0].groups()
    assert name == job
    assert ledger.rounds <= int(rounds)
    if job != "fedforest":  # a boosted model and the toy run every round said
        assert ledger.rounds == int(rounds)
    assert float(per_round) == FLOWER_ROUND_SECONDS
    assert time == f"{int(rounds) * FLOWER_ROUND_SECONDS:.0f} s"  # under 90 s
    # said once the agreement is done, before its round line and every other
    assert PLAN.match(flower_log[0])
    assert flower_log[1].startswith("fedtrees round 0 (federation.schema)")
    assert flower_log[2].startswith("fedtrees round 1 ")


def test_a_default_fedgbdt_says_about_46_minutes() -> None:
    # The case: 100 trees of depth 6, 603 rounds; ~46 min at 4.6 s a round.
    from fedtrees.federation import plan_line

    assert "603 rounds" in plan_line("fedgbdt", 603)
    assert "about 46 min over Flower" in plan_line("fedgbdt", 603)
