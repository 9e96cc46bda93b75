"""Every error fedtrees raises, in one place.

All exceptions derive from :class:`FedTreesError`. Those about bad input also derive
from the matching built-in (``ValueError``, ``FileNotFoundError``) so that code written
for scikit-learn conventions keeps working. Messages follow one template: what was
wrong, what was expected, and what was received.
"""

from __future__ import annotations

__all__ = [
    "CentralizedFitWarning",
    "ClientDropoutWarning",
    "CodecError",
    "DataNotFoundError",
    "FedTreesError",
    "LocalProtocolError",
    "MaskedSumError",
    "NotEnoughClientsError",
    "OutOfRangeWarning",
    "PrivacyAuditError",
    "PrivacyBudgetExceeded",
    "PrivacyLeakWarning",
    "RemoteProtocolError",
    "RuleLimitExceeded",
    "SchemaMismatchError",
    "SerializationError",
    "UnknownParameterError",
    "ValidationError",
]


class FedTreesError(Exception):
    """Base class of every error raised by fedtrees."""


class ValidationError(FedTreesError, ValueError):
    """A parameter, an array or a column does not meet its documented constraint.

    The message names the parameter (or column, client, field) and says what was
    expected and what was received.
    """


class UnsupportedInputError(ValidationError, TypeError):
    """Input of a type fedtrees cannot use (sparse matrices, complex or object values).

    A :class:`ValidationError` that is also a ``TypeError``, as scikit-learn raises
    for such input.
    """


class UnknownParameterError(FedTreesError, TypeError):
    """An estimator was given a keyword (or positional) argument it does not take.

    The message names the public class, the closest parameter name and the
    parameters it takes; a ``TypeError``, as Python's own.
    """


class SerializationError(FedTreesError, ValueError):
    """A serialized document is malformed, of another format, or of a newer version."""


class DataNotFoundError(FedTreesError, FileNotFoundError):
    """A data folder or file that a loader needs does not exist or is incomplete."""


class PrivacyBudgetExceeded(FedTreesError):
    """A release would spend more privacy budget than the party has left.

    Raised by :class:`fedtrees.privacy.PrivacyAccountant` *before* any noise is drawn,
    so the refused release leaves no trace in the output; and by a site's own
    :class:`fedtrees.federation.SiteBudget`, which refuses a DP request that would
    take the site above the total ε it declared.
    """


class CodecError(SerializationError):
    """Bytes that are not a well-formed fedtrees message (or of a newer version).

    ``field`` names the part at fault (``"envelope"`` for the frame itself).
    """

    def __init__(self, reason: str, field: str = "envelope") -> None:
        self.field, self.reason = field, reason
        super().__init__(f"Malformed fedtrees message ({field}): {reason}")


class RuleLimitExceeded(FedTreesError):
    """An aggregation of rules would create more rules than its limit allows.

    Raised by ICDTA4FL's Cartesian product (docs/icdta.md, step 4) *before* the
    product is allocated; the message names the step and suggests a stricter
    filter.
    """


class LocalProtocolError(FedTreesError):
    """Our own code misused the federation protocol (a bug on this side).

    Kept apart from :class:`RemoteProtocolError`, which blames another party.
    """


class RemoteProtocolError(FedTreesError):
    """A client sent something malformed, failed, or did not answer in time.

    Attributes name the client, the round, the message kind and the field at
    fault, so the server can report it, or drop that client from the round.
    """

    def __init__(
        self, client: str, round: int, kind: str, field: str, reason: str
    ) -> None:
        self.client, self.round, self.kind = client, round, kind
        self.field, self.reason = field, reason
        end = "" if reason.endswith(".") else "."
        super().__init__(
            f"Client {client!r}, round {round}, {kind!r}: field {field!r} {reason}{end}"
        )


class MaskedSumError(FedTreesError):
    """A masked round's sum is impossible, or two sites disagree on their keys.

    Under secure aggregation (docs/security.md) the server sees only the sum
    of a round's masked vectors. When that sum breaks a bound that no honest
    sites' statistics can break, some site of the round sent a wrong vector,
    and a sum cannot tell which: the error names the round, the message kind
    and the sites that took part (``sites``); ``field`` and ``reason`` say
    what is impossible.
    """

    def __init__(
        self, round: int, kind: str, sites: tuple[str, ...], field: str, reason: str
    ) -> None:
        self.round, self.kind, self.sites = round, kind, tuple(sites)
        self.field, self.reason = field, reason
        end = "" if reason.endswith(".") else "."
        super().__init__(
            f"Round {round}, {kind!r}, the masked sum of sites {list(self.sites)}: "
            f"field {field!r} {reason}{end} A masked sum cannot name the site that "
            "sent a wrong vector or key: one of these did "
            "(docs/security.md, 'Secure aggregation')."
        )


class NotEnoughClientsError(FedTreesError):
    """Fewer clients than ``min_clients`` are available or answered validly."""


class SchemaMismatchError(FedTreesError, ValueError):
    """Clients disagree on the feature schema or the target (docs/runtime.md).

    The message names the client and the column.
    """


class PrivacyAuditError(FedTreesError, AssertionError):
    """A message of a run carried an array shaped like a client's rows."""


class ClientDropoutWarning(UserWarning):
    """A client was dropped from a round (the algorithm allows partial rounds)."""


class PrivacyLeakWarning(UserWarning):
    """A setting releases information about the private data (e.g. data ranges)."""


class OutOfRangeWarning(UserWarning):
    """A site's values lie outside the declared feature ranges; they were clipped.

    Issued at the site (its own log or console), naming the site and the columns;
    it never travels to the server (docs/dpforest.md).
    """


class CentralizedFitWarning(UserWarning):
    """``fit(X, y)`` was called without ``groups``: one client holds every row.

    That is centralized training on one client (id ``"0"``), which scikit-learn's
    checks, pipelines and cross-validation rely on; pass ``groups=`` (the site of
    every row) to simulate a federation. Issued once per fit. Inside
    ``GridSearchCV``/``cross_validate``, turn on scikit-learn's metadata routing
    (the estimators request ``groups`` by default) so each fit gets its rows' sites.
    """
