"""A DP-forest site whose rows lie outside the declared ranges (issue 37, item 4).

Before issue 37 such a site grew its tree in silence: every threshold is drawn
inside the declared range, so a row beyond it goes to one side of every split
and the column cannot split it; a forest of such trees scores at the majority
rate and nobody is told. Now the site clips its values into the declared ranges
and warns, at the site, naming itself and the columns (docs/dpforest.md). The
warning does not travel: the server receives exactly the tree that clipped rows
give, and no error.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fedtrees import DPForestClassifier
from fedtrees.audit import recording
from fedtrees.exceptions import OutOfRangeWarning
from fedtrees.federation import Federation

RANGES = {"x0": (0.0, 1.0), "x1": (0.0, 1.0)}


def _sites(shift: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three sites; site "c" holds x0 shifted by ``shift`` (beyond the range)."""
    rng = np.random.default_rng(3)
    X = rng.random((150, 2))
    y = (X[:, 0] > 0.5).astype(int)
    groups = np.repeat(["a", "b", "c"], 50)
    X[groups == "c", 0] += shift
    return X, y, groups


def _forest() -> DPForestClassifier:
    return DPForestClassifier(
        epsilon=np.inf, max_depth=2, feature_ranges=RANGES, random_state=0
    )


@pytest.mark.hostile("documented")
def test_a_site_beyond_the_declared_ranges_warns_naming_itself_and_the_column() -> None:
    X, y, groups = _sites(shift=10.0)

    with pytest.warns(OutOfRangeWarning) as caught:
        _forest().fit(X, y, groups=groups)

    messages = [str(w.message) for w in caught if w.category is OutOfRangeWarning]
    assert len(messages) == 1, messages  # site "c" only
    assert "Client 'c'" in messages[0]
    assert "['x0']" in messages[0]
    assert "clipped" in messages[0]


@pytest.mark.hostile("correct")
def test_the_server_receives_the_tree_of_the_clipped_rows_and_nothing_more() -> None:
    X, y, groups = _sites(shift=10.0)
    clipped = X.copy()
    clipped[:, 0] = np.clip(clipped[:, 0], 0.0, 1.0)
    sent = []
    for rows in (X, clipped):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OutOfRangeWarning)
            with recording() as ledgers:
                _forest().fit_federation(Federation.from_groups(rows, y, groups))
        sent.append([(m.client, m.direction, m.data) for m in ledgers[-1].captured])

    assert sent[0] == sent[1]  # the same messages, byte for byte


@pytest.mark.hostile("correct")
def test_sites_within_the_ranges_do_not_warn() -> None:
    X, y, groups = _sites(shift=0.0)

    with warnings.catch_warnings():
        warnings.simplefilter("error", OutOfRangeWarning)
        _forest().fit(X, y, groups=groups)
