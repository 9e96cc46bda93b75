"""Step 3 of ICDTA4FL: score every client tree by the others, keep the good ones.

The score of client i's tree is the mean of the scores the OTHER clients gave it
on their own rows (docs/icdta.md, step 3). A filter turns the scores into a
threshold; the trees at or above it are kept:

- ``"mean"`` (the paper's default): the mean of all trees' scores;
- ``"median"``: their median;
- ``"percentile:P"`` (``0 <= P <= 100``): their P-th percentile;
- ``"threshold:T"`` (``0 <= T <= 1``, beyond the paper): a fixed score.

Scores within ``1e-12`` of the threshold pass (so a mean of equal scores keeps
them all). **Decision:** with a single client nobody can score its tree; it is
kept (there is nothing to filter). A *sequence* of filters (beyond the paper) is
tried in order: the server aggregates with the next one when the product of the
previous one's rules would exceed ``max_rules`` — one federation, no refit
(:func:`parse_filters`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from fedtrees._typing import BoolArray, FloatArray
from fedtrees._validation import invalid
from fedtrees.exceptions import ValidationError

__all__ = ["FILTERS", "TreeFilter", "parse_filters", "tree_scores"]

FILTERS: Final = ("mean", "median", "percentile:P", "threshold:T")
_SLACK: Final = 1e-12


@dataclass(frozen=True)
class TreeFilter:
    """A parsed ``filter=`` setting: its rule and parameter.

    Examples
    --------
    >>> TreeFilter.parse("percentile:75", "ICDTAClassifier").keep([0.5, 0.7, 0.9])
    array([False, False,  True])
    """

    text: str
    rule: str
    value: float = 0.0

    @classmethod
    def parse(cls, text: object, owner: str) -> TreeFilter:
        """Check and parse a ``filter=`` value (errors name the parameter)."""
        if text in ("mean", "median"):
            return cls(str(text), str(text))
        if isinstance(text, str) and text.count(":") == 1:
            rule, _, number = text.partition(":")
            limit = {"percentile": 100.0, "threshold": 1.0}.get(rule)
            value = _number(number)
            if limit is not None and value is not None and 0.0 <= value <= limit:
                return cls(text, rule, value)
        raise invalid("filter", owner, f"one of {', '.join(FILTERS)}", text)

    def threshold(self, scores: npt.ArrayLike) -> float:
        """Return the score a tree must reach (NaN scores are ignored)."""
        valid = np.asarray(scores, dtype=np.float64)
        valid = valid[~np.isnan(valid)]
        if self.rule == "threshold":
            return self.value
        if self.rule == "mean":
            return float(valid.mean())
        if self.rule == "median":
            return float(np.median(valid))
        return float(np.percentile(valid, self.value))

    def keep(self, scores: npt.ArrayLike) -> BoolArray:
        """Which trees pass; every tree when none could be scored (one client)."""
        values = np.asarray(scores, dtype=np.float64)
        if np.isnan(values).all():
            return np.ones(values.shape, dtype=bool)
        result: BoolArray = values >= self.threshold(values) - _SLACK
        return result

    def kept_or_raise(
        self, scores: npt.ArrayLike, owners: list[str], owner: str
    ) -> list[str]:
        """Client ids of the kept trees; a clear error if the filter keeps none."""
        values = np.asarray(scores, dtype=np.float64)
        mask = self.keep(values)
        if not mask.any():
            best = float(np.nanmax(values))
            raise ValidationError(
                f"The filter {self.text!r} of {owner} kept no tree: the best tree "
                f"scored {best:.4f} (mean over the other clients) and the filter "
                f"asks for {self.threshold(values):.4f}. Use a looser filter, such "
                "as 'mean' or 'median'."
            )
        return [o for o, k in zip(owners, mask.tolist(), strict=True) if k]


def parse_filters(value: object, owner: str) -> tuple[TreeFilter, ...]:
    """Parse ``filter=``: one filter, or a non-empty sequence tried in order.

    Examples
    --------
    >>> [f.text for f in parse_filters(["mean", "percentile:90"], "ICDTAClassifier")]
    ['mean', 'percentile:90']
    """
    if isinstance(value, str):
        return (TreeFilter.parse(value, owner),)
    if isinstance(value, list | tuple) and value:
        return tuple(TreeFilter.parse(text, owner) for text in value)
    raise invalid("filter", owner, f"one of {', '.join(FILTERS)}, or a list", value)


def tree_scores(matrix: FloatArray) -> FloatArray:
    """Mean score of every tree (columns) over the clients that scored it (rows).

    Examples
    --------
    >>> m = np.array([[np.nan, 0.8], [0.6, np.nan]])
    >>> tree_scores(m).tolist()
    [0.6, 0.8]
    """
    scored = ~np.isnan(matrix)
    total = np.where(scored, matrix, 0.0).sum(axis=0)
    n = scored.sum(axis=0)
    result: FloatArray = np.where(n > 0, total / np.maximum(n, 1), np.nan)
    return result


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if np.isfinite(value) else None
