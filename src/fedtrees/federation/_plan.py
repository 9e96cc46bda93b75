"""What a run will take, said at its start: its rounds, and their time over Flower.

Each strategy bounds its own rounds after the agreement (``expected_rounds()``):
that is the one home of every method's count, which the progress bar and the round
loop's limit read too. The loop hands it to every callback
(:attr:`~fedtrees.federation.RoundEnv.expected_rounds`); :func:`announce_plan`
turns round 0's into one line (:func:`plan_line`), which the Flower ServerApp logs.

**Decision (when):** the line comes right after the agreement (round 0), not before
it: some rounds depend on what the server learns there, the agreed columns and
sites (FedForest's and FedGBDT's grid round only while a numeric column has no
declared bin edges; ICDTA's and Federated-ID3's sketch round only with numeric
columns; one-site FedForest folds each level into one round).

**Decision (the round time):** the estimate is the rounds times
:data:`FLOWER_ROUND_SECONDS`, the median round measured by
``benchmarks/bench_flower_rounds.py`` (docs/benchmarks.md, "Flower rounds"). A
round over Flower is mostly Flower's own polling, whatever the method: a SuperNode
asks for work every 3 s when idle, so about 3.6 s is the floor of a round. The
work of a round (milliseconds for the small models measured) comes on top, and so
do more sites: the same runs took 5.9 s a round with 4 sites.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from fedtrees.federation._driver import RoundCallback, RoundEnv

__all__ = ["FLOWER_ROUND_SECONDS", "announce_plan", "duration_text", "plan_line"]

FLOWER_ROUND_SECONDS: Final = 4.6
"""Seconds of one round over Flower: the median measured with 2 sites (TLS on
127.0.0.1, site workers, 2 idle cores; docs/benchmarks.md, "Flower rounds")."""


def duration_text(seconds: float) -> str:
    """Return a duration to plan with: ``"28 s"``, ``"46 min"``, ``"2 h 5 min"``.

    Examples
    --------
    >>> duration_text(27.6), duration_text(603 * 4.6), duration_text(7500)
    ('28 s', '46 min', '2 h 5 min')
    """
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def plan_line(
    name: str, rounds: int, seconds_per_round: float = FLOWER_ROUND_SECONDS
) -> str:
    """Return the line saying how many rounds a run takes and its time over Flower.

    ``rounds`` counts every round, the agreement included (as the ledger does);
    the strategy's count is an upper bound where a run may end early (trees
    whose nodes are all pure, early stopping).

    Examples
    --------
    >>> print(plan_line("fedgbdt", 603))  # doctest: +NORMALIZE_WHITESPACE
    fedtrees: fedgbdt takes at most 603 rounds (the agreement included), about
    46 min over Flower at 4.6 s a round (measured with 2 sites; Flower's own
    polling is most of a round)
    """
    total = duration_text(rounds * seconds_per_round)
    return (
        f"fedtrees: {name} takes at most {rounds} rounds (the agreement included), "
        f"about {total} over Flower at {seconds_per_round:g} s a round (measured "
        "with 2 sites; Flower's own polling is most of a round)"
    )


def announce_plan(name: str, say: Callable[[str], None]) -> RoundCallback:
    """Return a round callback that says :func:`plan_line` once, after round 0.

    Nothing is said when the strategy gives no bound.

    Examples
    --------
    >>> said = []
    >>> announce = announce_plan("toy", said.append)
    >>> announce(RoundEnv(0, "federation.schema", 2, 2, (), 10, 10, 0.1, {}, 3))
    >>> announce(RoundEnv(1, "toy.counts", 2, 2, (), 10, 10, 0.1, {}, 3))
    >>> len(said), said[0][:60]
    (1, 'fedtrees: toy takes at most 4 rounds (the agreement included')
    """

    def announce(env: RoundEnv) -> None:
        if env.round == 0 and env.expected_rounds is not None:
            say(plan_line(name, env.expected_rounds + 1))

    return announce
