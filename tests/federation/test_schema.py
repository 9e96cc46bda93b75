from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedtrees.exceptions import RemoteProtocolError, SchemaMismatchError
from fedtrees.federation import (
    ClientData,
    ClientState,
    Federation,
    SchemaRequest,
    agree,
)
from fedtrees.federation._schema import report_schema
from tests.federation.helpers import NullStrategy


def _reply(X: object, y: object, task: str = "classification"):  # type: ignore[no-untyped-def]
    return report_schema(
        SchemaRequest(task), ClientData.build("c", X, y), ClientState()
    )


def test_labels_are_the_sorted_union_in_native_order() -> None:
    a = _reply(np.zeros((2, 1)), [10, 2])
    b = _reply(np.zeros((2, 1)), [9, 2])
    schema = agree({"a": a, "b": b}, "classification")
    assert schema.classes == ("2", "9", "10")  # numeric order, not "10" < "2"
    s = agree(
        {"a": _reply(np.zeros((1, 1)), ["b"]), "b": _reply(np.zeros((1, 1)), ["a"])},
        "classification",
    )
    assert s.classes == ("a", "b")


def test_a_client_lacking_a_class_still_agrees() -> None:
    fed = Federation.from_groups(
        np.zeros((4, 1)), ["x", "x", "x", "y"], ["p", "p", "q", "q"]
    )
    info = fed.run(NullStrategy(), task="classification").info
    assert info.schema.classes == ("x", "y")
    assert info.clients == ("p", "q")


def _frame(**columns: object) -> pd.DataFrame:
    return pd.DataFrame(columns)


@pytest.mark.parametrize(
    ("other", "message"),
    [
        (
            _frame(age=[1.0], sex=[0.0]),
            r"Client 'b' does not have the columns of client 'a': extra columns \['sex'\]",
        ),
        (_frame(chol=[1.0]), r"missing columns \['age'\]"),
        (
            _frame(age=pd.Categorical(["old"])),
            "Column 'age' is categorical at client 'b' but numeric at client 'a'",
        ),
    ],
)
def test_schema_mismatch_names_client_and_column(
    other: pd.DataFrame, message: str
) -> None:
    fed = Federation.from_clients({"a": (_frame(age=[1.0]), [0]), "b": (other, [1])})
    with pytest.raises(SchemaMismatchError, match=message):
        fed.run(NullStrategy(), task="classification")


def test_differing_category_lists_agree_on_their_sorted_union() -> None:
    # Once refused ("declare the same categories everywhere"): now the union, as
    # fit on the pooled rows (tests/federation/test_agreement.py).
    low = pd.Categorical(["x"], categories=["y", "x"])
    high = pd.Categorical(["x"], categories=["x", "z"])
    fed = Federation.from_clients(
        {"a": (_frame(c=low), [0]), "b": (_frame(c=high), [1])}
    )
    schema = fed.run(NullStrategy(), task="classification").info.schema
    assert schema.categories == (("x", "y", "z"),)
    assert schema.agreed_columns == ("c",)


def test_label_types_must_match() -> None:
    fed = Federation.from_clients(
        {"a": (np.zeros((1, 1)), [1]), "b": (np.zeros((1, 1)), ["1"])}
    )
    with pytest.raises(SchemaMismatchError, match="disagree on the label type"):
        fed.run(NullStrategy(), task="classification")


def test_regression_needs_a_numeric_target_on_every_client() -> None:
    fed = Federation.from_clients(
        {"a": (np.zeros((1, 1)), [1.5]), "b": (np.zeros((1, 1)), ["high"])}
    )
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'b', round 0.*regression needs a numeric, finite y",
    ):
        fed.run(NullStrategy(), task="regression")
