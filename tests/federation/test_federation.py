from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedtrees.exceptions import ValidationError
from fedtrees.federation import ClientData, Federation, InProcessTransport


def test_client_ids_are_the_printed_group_values() -> None:
    fed = Federation.from_groups(np.zeros((4, 1)), [0, 1, 0, 1], [3, 10, 3, 10])
    assert fed.clients == ("10", "3")
    assert fed.row_counts() == {"3": 2, "10": 2}
    assert "InProcessTransport" in repr(fed)


def test_from_clients_names_and_dataframes() -> None:
    frame = pd.DataFrame({"colour": ["r", "g"], "size": [1.0, 2.0]})
    fed = Federation.from_clients([(frame, ["a", "b"]), (frame, ["b", "b"])])
    assert fed.clients == ("0", "1")
    named = Federation.from_clients({"Cleveland": (frame, [0, 1])})
    assert named.clients == ("Cleveland",)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: Federation.from_groups(np.zeros((3, 1)), [0, 1, 0], [0, 1]),
            "X has 3 rows, y has 3 and groups has 2",
        ),
        (
            lambda: Federation.from_groups(np.zeros((2, 1)), [0, 1], [1, "1"]),
            "the groups values 1 and .1. are distinct but both become client .1.",
        ),
        (
            lambda: Federation.from_groups(np.zeros((2, 1)), [0, 1], [None, "a"]),
            "groups holds missing values",
        ),
        (lambda: Federation.from_clients([]), "needs at least one client"),
        (
            lambda: Federation.from_clients([(np.zeros((0, 2)), [])]),
            "Client '0' has no rows",
        ),
        (
            lambda: Federation.from_clients([(np.zeros((2, 2)), [1])]),
            "y and X must have one row each per sample; X has more rows",
        ),
        (
            lambda: Federation.from_clients([(np.zeros((1, 2)), [None])]),
            "y holds missing values",
        ),
        (
            lambda: InProcessTransport({}, workers=0),
            "'workers' parameter of InProcessTransport",
        ),
    ],
)
def test_bad_federations_are_refused(call: object, message: str) -> None:
    assert callable(call)
    with pytest.raises(ValidationError, match=message):
        call()


def test_client_data_encodes_categories_and_reports_missing_values() -> None:
    frame = pd.DataFrame(
        {
            "c": pd.Categorical(["b", "a", None], categories=["a", "b"]),
            "x": [1.0, 2.0, 3.0],
        }
    )
    data = ClientData.build("h", frame, [0, 1, 0])
    np.testing.assert_array_equal(data.matrix[:2], [[1.0, 1.0], [0.0, 2.0]])
    with pytest.raises(ValidationError, match="Client 'h': column 'c' holds missing"):
        data.finite_matrix()
    assert data.label_codes(["0", "1"]).tolist() == [0, 1, 0]
    with pytest.raises(
        ValidationError, match=r"a label that is not among the \d+ agreed classes"
    ) as caught:
        data.label_codes(["0"])
    assert "'1'" not in str(caught.value)  # the label stays on the client
