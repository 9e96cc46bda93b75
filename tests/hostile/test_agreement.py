"""The agreement (round 0) and the labels it agrees on (issue 24, round two).

A client's label set must be texts its label type can hold: a reply saying
``"int"`` with the label ``"abc"`` used to end round 0 with a raw ``ValueError``
while sorting the classes, and ``"nan"`` under ``"float"`` became a phantom
class. Each is now that client's :class:`RemoteProtocolError` naming the field
``labels``. On the client, labels have one text everywhere (the agreement, the
declared classes, every request's classes), and a request whose ``classes``
repeat a label is refused by name instead of answering with a pandas error.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fedtrees.algorithms.toy import ToyCountsReply, ToyCountsRequest
from fedtrees.exceptions import RemoteProtocolError, ValidationError
from fedtrees.federation import (
    ClientData,
    ClientState,
    Envelope,
    Fault,
    Federation,
    SchemaReply,
    SchemaRequest,
    decode,
    encode,
    run,
    serve,
)
from fedtrees.federation._client import dispatch
from fedtrees.federation._values import label_text_problem
from tests.federation.helpers import NullStrategy

X = np.arange(12.0).reshape(6, 2)
SITES = np.repeat(["a", "b", "c"], 2)


def _labels(labels: list[str], label_type: str | None = None) -> Any:
    def mutate(reply: Any) -> Any:
        assert isinstance(reply, SchemaReply)
        changes: dict[str, Any] = {"labels": np.asarray(labels, dtype=str)}
        if label_type is not None:
            changes["label_type"] = label_type
        return dataclasses.replace(reply, **changes)

    return mutate


def _agree(y: np.ndarray, faults: Sequence[Fault] = ()) -> Any:
    federation = Federation.from_groups(X, y, SITES, faults=faults)
    return run(NullStrategy(), federation.transport, task="classification").result


INTS = np.array([0, 1, 0, 1, 0, 1])
FLOATS = INTS.astype(float)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("y", "labels", "reason"),
    [
        (INTS, ["abc"], "not the text of an int"),
        (INTS, ["1.5"], "not the text of an int"),
        (INTS, ["1.0"], "not the text of an int"),
        (INTS, ["nan"], "not the text of an int"),
        (FLOATS, ["0.0", "nan"], "not the text of a finite float"),
        (FLOATS, ["inf"], "not the text of a finite float"),
        (FLOATS, ["x"], "not the text of a finite float"),
        (INTS, ["0", "0", "1"], "repeats a label"),
        (INTS, [], "is empty; a client with rows has labels"),
    ],
    ids=[
        "text",
        "fraction",
        "float-text",
        "int-nan",
        "nan",
        "inf",
        "float-word",
        "repeated",
        "empty",
    ],
)
def test_a_label_set_its_type_cannot_hold_is_that_clients_error(
    y: np.ndarray, labels: list[str], reason: str
) -> None:
    fault = Fault("b", "mutate", round=0, mutate=_labels(labels))
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client 'b', round 0, 'federation.schema': field 'labels' .*{reason}",
    ):
        _agree(y, [fault])


@pytest.mark.hostile("clear_error")
def test_a_bool_label_set_holds_only_true_and_false() -> None:
    y = INTS.astype(bool)
    faults = [Fault(s, "mutate", round=0, mutate=_labels(["x"])) for s in "abc"]
    with pytest.raises(
        RemoteProtocolError, match=r"Client 'a', round 0.*'labels' .*text of a bool"
    ):
        _agree(y, faults)


@pytest.mark.hostile("correct")
@pytest.mark.parametrize(
    ("labels", "label_type"),
    [
        (["0", "-12", "123456789012345678901"], "int"),
        (["0.0", "1e+03", "-2.5", "16777216.0"], "float"),  # float16/32 print short
        (["True", "False"], "bool"),
        (["nan", "", " x ", "1_0"], "str"),  # any text is a string label
    ],
)
def test_honest_label_sets_pass(labels: list[str], label_type: str) -> None:
    assert label_text_problem(labels, label_type) is None


def _client(y: Any) -> ClientData:
    return ClientData.build("a", np.zeros((len(y), 1)), y)


@pytest.mark.hostile("clear_error")
def test_labels_that_print_alike_are_refused_at_the_client() -> None:
    y = np.array([1, "1", 1, "1", 2, 2], dtype=object)
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a', round 0, 'federation.schema': field 'handler' failed on "
        r"the client: ValidationError: Client 'a': y holds distinct labels that "
        r"print alike \(such as 1 and '1'\); give y one type",
    ):
        _agree(y)


@pytest.mark.hostile("correct")
@pytest.mark.parametrize(
    ("y", "classes"),
    [
        (np.array([1, 1.0, 2, 2.0, 1.0, 2], dtype=object), ("1.0", "2.0")),
        (np.array(["2020-01-01", "2021-01-01"] * 3, "datetime64[D]"), None),
        (np.array([b"no", b"yes"] * 3), None),
    ],
    ids=["numbers-as-objects", "dates", "bytes"],
)
def test_every_label_has_one_text_at_the_agreement_and_in_requests(
    y: np.ndarray, classes: tuple[str, ...] | None
) -> None:
    info = _agree(y)
    if classes is not None:
        assert info.schema.classes == classes
    data = _client(y)
    codes = data.label_codes(info.schema.classes)  # used to be "not among" them
    assert sorted(set(codes.tolist())) == [0, 1]


@pytest.mark.hostile("clear_error")
def test_a_two_dimensional_y_is_refused_naming_the_client() -> None:
    with pytest.raises(ValidationError, match=r"Client 'a': y must be 1-D .*\(3, 1\)"):
        Federation.from_clients({"a": (X[:3], np.zeros((3, 1)))})


def _answer(classes: np.ndarray) -> Envelope:
    data = ClientData.build("a", np.zeros((3, 1)), np.array(["no", "yes", "no"]))
    request = ToyCountsRequest(classes)
    sent = encode(Envelope("request", 1, "a", request.kind, request))
    return decode(serve(sent, data, dispatch, ClientState()))


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("classes", "got"),
    [
        (np.array(["no", "no", "yes"]), r"a label repeated"),
        (np.array([["no", "yes"]]), r"shape \(1, 2\)"),
    ],
    ids=["repeated", "two-dimensional"],
)
def test_a_request_with_malformed_classes_is_refused_by_the_client(
    classes: np.ndarray, got: str
) -> None:
    answer = _answer(classes)
    assert answer.type == "error"
    assert answer.error.startswith(
        "ValidationError: Client 'a': the request's classes must be one list of "
        "distinct labels; got "
    )
    assert re.search(got, answer.error), answer.error


@pytest.mark.hostile("correct")
def test_a_request_with_distinct_classes_is_answered() -> None:
    answer = _answer(np.array(["no", "yes"]))
    assert isinstance(answer.payload, ToyCountsReply)
    assert answer.payload.counts.tolist() == [2.0, 1.0]


@pytest.mark.hostile("clear_error")
def test_a_schema_request_repeating_its_declared_classes_is_refused() -> None:
    request = dataclasses.replace(
        SchemaRequest.declaring("classification", classes=["no", "yes"]),
        declared_classes=np.array(["no", "no", "yes"]),
    )
    data = ClientData.build("a", np.zeros((3, 1)), np.array(["no", "yes", "no"]))
    sent = encode(Envelope("request", 0, "a", request.kind, request))
    answer = decode(serve(sent, data, dispatch, ClientState()))
    assert answer.type == "error"
    assert answer.error == (
        "ValidationError: SchemaRequest: classes repeats ['no'] (compared as str)."
    )


def _columns(**changes: Any) -> Any:
    def mutate(reply: Any) -> Any:
        return dataclasses.replace(
            reply, **{k: np.asarray(v) for k, v in changes.items()}
        )

    return mutate


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("changes", "field", "reason"),
    [
        (
            {"categories": ["u", "u"], "n_categories": [0, 2]},
            "categories",
            "repeat a name of column 'colour'",
        ),
        (
            {"categories": ["u", "v", "w"], "n_categories": [1, 2]},
            "n_categories",
            "give numeric column 'age' some",
        ),
        ({"feature_names": ["age", "age"]}, "feature_names", "repeat a column name"),
    ],
    ids=["repeated-category", "numeric-with-categories", "repeated-column"],
)
def test_a_schema_its_columns_cannot_hold_is_that_clients_error(
    changes: dict[str, Any], field: str, reason: str
) -> None:
    X_mixed = pd.DataFrame(
        {"age": np.arange(6.0), "colour": pd.Categorical(list("uvuvuv"))}
    )
    fault = Fault("b", "mutate", round=0, mutate=_columns(**changes))
    federation = Federation.from_groups(X_mixed, INTS, SITES, faults=[fault])
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client 'b', round 0, 'federation.schema': field '{field}' {reason}",
    ):
        run(NullStrategy(), federation.transport, task="classification")


@pytest.mark.hostile("clear_error")
def test_categories_that_print_alike_are_refused_at_the_client() -> None:
    colour = pd.Categorical(np.array([1, "1", 1, "1", 1, "1"], dtype=object))
    X_mixed = pd.DataFrame({"age": np.arange(6.0), "colour": colour})
    federation = Federation.from_clients({"a": (X_mixed, INTS)})
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a': column 'colour' has distinct categories that print "
        r"alike \(such as 1 and '1'\); give it one type",
    ):
        run(NullStrategy(), federation.transport, task="classification")
