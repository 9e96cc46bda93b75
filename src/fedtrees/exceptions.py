"""Every error fedtrees raises, in one place.

All exceptions derive from :class:`FedTreesError`. Those about bad input also derive
from the matching built-in (``ValueError``, ``FileNotFoundError``) so that code written
for scikit-learn conventions keeps working. Messages follow one template: what was
wrong, what was expected, and what was received.
"""

from __future__ import annotations

__all__ = [
    "DataNotFoundError",
    "FedTreesError",
    "PrivacyBudgetExceeded",
    "SerializationError",
    "ValidationError",
]


class FedTreesError(Exception):
    """Base class of every error raised by fedtrees."""


class ValidationError(FedTreesError, ValueError):
    """A parameter, an array or a column does not meet its documented constraint.

    The message names the parameter (or column, client, field) and says what was
    expected and what was received.
    """


class SerializationError(FedTreesError, ValueError):
    """A serialized document is malformed, of another format, or of a newer version."""


class DataNotFoundError(FedTreesError, FileNotFoundError):
    """A data folder or file that a loader needs does not exist or is incomplete."""


class PrivacyBudgetExceeded(FedTreesError):
    """A release would spend more privacy budget than the party has left.

    Raised by :class:`fedtrees.privacy.PrivacyAccountant` *before* any noise is drawn,
    so the refused release leaves no trace in the output.
    """
