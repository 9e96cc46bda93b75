"""Jobs: what a Flower deployment (or any Federation) can be asked to run by name.

A job takes a :class:`Federation`, JSON parameters, a round timeout and round
callbacks, and returns a JSON-compatible result document and the ledger. The
Flower ServerApp runs ``job=<name>`` from its run config with :func:`run_job`;
running the same job on an in-process federation gives the same document.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from fedtrees._validation import invalid
from fedtrees.algorithms.toy import run_toy
from fedtrees.exceptions import ValidationError
from fedtrees.federation import Federation, Ledger, RoundCallback

__all__ = ["JOBS", "run_job"]

Job = Callable[
    [Federation, Mapping[str, Any], float, Sequence[RoundCallback]],
    tuple[dict[str, Any], Ledger],
]


def _toy(
    federation: Federation,
    params: Mapping[str, Any],
    timeout: float,
    callbacks: Sequence[RoundCallback],
) -> tuple[dict[str, Any], Ledger]:
    allowed = {"feature", "n_bins", "n_rounds", "initial"}
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValidationError(
            f"Job 'toy' takes params {sorted(allowed)}; got unknown {unknown}."
        )
    outcome = run_toy(federation, timeout=timeout, callbacks=callbacks, **params)
    document = {
        "job": "toy",
        "params": dict(params),
        "clients": list(outcome.info.clients),
        "result": outcome.result.to_dict(),
        "communication": outcome.ledger.summary(),
    }
    return document, outcome.ledger


JOBS: Final[dict[str, Job]] = {"toy": _toy}


def run_job(
    job: str,
    federation: Federation,
    params: Mapping[str, Any],
    timeout: float = 120.0,
    callbacks: Sequence[RoundCallback] = (),
) -> tuple[dict[str, Any], Ledger]:
    """Run the job named ``job`` on ``federation``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(8.0)[:, None]
    >>> fed = Federation.from_groups(X, [0, 1] * 4, [0, 0, 1, 1] * 2)
    >>> document, ledger = run_job("toy", fed, {"n_bins": 2, "n_rounds": 1})
    >>> document["result"]["class_counts"], ledger.rounds
    ([4.0, 4.0], 3)
    """
    if job not in JOBS:
        raise invalid("job", "run_job", f"one of {sorted(JOBS)}", job)
    return JOBS[job](federation, params, timeout, callbacks)
