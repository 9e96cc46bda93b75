from __future__ import annotations

import numpy as np
import pytest

from fedtrees.federation import (
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    check_reply,
    payload,
)


@payload("test.reply_under_check")
class Reply(Payload):
    values: np.ndarray
    labels: np.ndarray
    n: int


def _spec(**constraints: Field) -> ReplySpec:
    return ReplySpec(Reply, constraints)


def _reply(
    values: object = (1.0, 2.0), labels: object = ("a", "b"), n: int = 3
) -> Reply:
    return Reply(np.asarray(values, dtype=np.float64), np.asarray(labels), n)


@pytest.mark.parametrize(
    ("field", "reply", "reason"),
    [
        (Field.array("f", (3,)), _reply(), r"has shape \(2,\); \(3,\) expected"),
        (
            Field.array("f", (None, 2)),
            _reply(),
            r"has shape \(2,\); \('\*', 2\) expected",
        ),
        (Field.array("iu"), _reply(), "has dtype float64; kind 'iu' expected"),
        (Field.array("f"), _reply(values=(1.0, np.nan)), "holds NaN or inf"),
        (Field.array("f"), _reply(values=(1.0, np.inf)), "holds NaN or inf"),
        (
            Field.array("f", nonnegative=True),
            _reply(values=(1.0, -1.0)),
            "negative values",
        ),
        (Field.array("f", low=0.0, high=1.0), _reply(values=(0.5, 2.0)), "above 1.0"),
        (
            Field.array("f", nan_padding=True),
            _reply(values=(np.nan, 1.0)),
            "outside trailing padding",
        ),
    ],
)
def test_array_constraints(field: Field, reply: Reply, reason: str) -> None:
    with pytest.raises(InvalidField, match=reason) as info:
        check_reply(_spec(values=field), reply)
    assert info.value.field == "values"


def test_nan_padding_accepts_trailing_nan_only() -> None:
    check_reply(
        _spec(values=Field.array("f", nan_padding=True)), _reply(values=(1.0, np.nan))
    )


def test_label_order_must_be_the_agreed_one() -> None:
    spec = _spec(labels=Field.array("U", equals=np.array(["a", "b"])))
    check_reply(spec, _reply())
    with pytest.raises(InvalidField, match=r"is \['b', 'a'\]; \['a', 'b'\] expected"):
        check_reply(spec, _reply(labels=("b", "a")))


def test_scalar_constraints_and_custom_check() -> None:
    with pytest.raises(InvalidField, match="at least 5 expected"):
        check_reply(_spec(n=Field.scalar(low=5)), _reply())

    def even(reply: Reply) -> None:
        if reply.n % 2:
            raise InvalidField("n", "must be even")

    with pytest.raises(InvalidField, match="must be even"):
        check_reply(ReplySpec(Reply, {}, check=even), _reply())


def test_wrong_payload_type_is_named() -> None:
    from fedtrees.federation import SchemaRequest

    with pytest.raises(InvalidField, match=r"'federation.schema' reply was expected"):
        check_reply(ReplySpec(SchemaRequest, {}), _reply())
