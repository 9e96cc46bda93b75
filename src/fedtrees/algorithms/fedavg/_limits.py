"""FedAvg's bounds: what a client needs to take part, and how long it trains.

**Decision (small clients):** a client with fewer than :data:`MIN_CLIENT_ROWS`
rows of non-zero weight refuses both requests (a :class:`ValidationError` that
states no count): the moments of one row *are* that row (``total / weight``),
two rows' sum and sum of squares give both values of every feature, and the
parameters it would return after local SGD on one row reveal that row too (the
gradient of every weight is a multiple of it). With ``on_dropout="continue"``
the fit goes on without it; otherwise it stops naming it.

**Decision (value bounds):** every feature value must satisfy ``|x| <=``
:data:`MAX_ABS_FEATURE` (1e100), checked at ``fit`` on the whole table and by
each client before the moments round, naming the column: the moments carry
``Σw·x²``, which must stay finite float64 (as for a regression target,
:data:`fedtrees._validation.MAX_ABS_TARGET`). A client whose local training
diverges (non-finite parameters or loss: a learning rate too large for its
data) refuses with an error naming ``learning_rate`` instead of sending them.

**Decision (resource bounds):** a client refuses a training request above
:data:`MAX_LOCAL_STEPS` or :data:`MAX_LOCAL_EPOCHS` (a damaged count would keep
it busy for days); they are far above any setting of the papers (FLamby: 10
epochs, 100 steps). The estimator refuses the same settings at ``fit``, naming
them, before any round: a client never answers for the server's own parameter.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from fedtrees._validation import MAX_ABS_TARGET
from fedtrees.exceptions import ValidationError
from fedtrees.federation import ClientData

__all__ = [
    "MAX_ABS_FEATURE",
    "MAX_BATCH_SIZE",
    "MAX_LOCAL_EPOCHS",
    "MAX_LOCAL_STEPS",
    "MIN_CLIENT_ROWS",
    "check_client",
    "feature_bound_message",
]

MAX_LOCAL_STEPS: Final = 2**24
"""Most SGD steps a client runs in one round (``local_steps``)."""
MAX_LOCAL_EPOCHS: Final = 2**16
"""Most local epochs a client runs in one round (``local_epochs``)."""
MAX_BATCH_SIZE: Final = 2**62
"""Largest ``batch_size`` (rows; a batch is at most the client's rows anyway)."""
MIN_CLIENT_ROWS: Final = 3
"""Fewest rows of non-zero weight a client needs to take part (module docstring)."""
MAX_ABS_FEATURE: Final = MAX_ABS_TARGET
"""Largest |x| of a feature value: the moments ``Σw·x²`` stay finite float64."""


def check_client(data: ClientData) -> None:
    """Refuse to take part with too few weighted rows or values beyond the bound.

    The messages state no count and no value: they travel to the server.
    """
    weighted = data.n_rows if data.weights is None else np.count_nonzero(data.weights)
    if weighted < MIN_CLIENT_ROWS:
        raise ValidationError(
            f"FedAvg: this client holds fewer than {MIN_CLIENT_ROWS} rows of "
            "non-zero weight, so its feature moments and local updates would "
            "reveal them; it takes no part (give it more rows, or pool them with "
            "another site's)."
        )
    largest = np.max(np.abs(data.finite_matrix()), axis=0, initial=0.0)
    beyond = np.flatnonzero(largest > MAX_ABS_FEATURE)
    if beyond.size:
        raise ValidationError(feature_bound_message(str(data.X.columns[beyond[0]])))


def feature_bound_message(column: str) -> str:
    """Return the error for a column beyond :data:`MAX_ABS_FEATURE` (no value)."""
    return (
        f"FedAvg: column {column!r} holds values beyond |x| <= {MAX_ABS_FEATURE:g}; "
        "the moments round sends sums of w*x and w*x^2, which must stay finite "
        "float64. Rescale the column."
    )
