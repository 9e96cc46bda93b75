"""A malformed Flower reply is that client's failure (issue 24, round two).

A malformed Flower ``Array`` in a SuperNode's reply used to end the ServerApp
with a raw error (the transport caught only ``KeyError``; numpy's loader raised
``ValueError``, ``EOFError``, ``TypeError`` or ``MemoryError``, and a float
array was silently cast to bytes). Every unpack failure is now one
:class:`MalformedContent`, and the transport makes it that client's
``malformed`` delivery. Tested on the unpack function and on the transport's
delivery with fake replies: no Flower process.
"""

from __future__ import annotations

import io
import re
from typing import Any
from unittest.mock import Mock

import numpy as np
import pytest

from fedtrees.exceptions import RemoteProtocolError
from fedtrees.federation import Delivery, receive
from tests.hostile.test_runtime_round_two import Nap

flwr_app = pytest.importorskip("flwr.app")
_wire = pytest.importorskip("fedtrees.federation.flower._wire")
_flower_transport = pytest.importorskip("fedtrees.federation.flower._transport")
Array, ArrayRecord = flwr_app.Array, flwr_app.ArrayRecord
ConfigRecord, RecordDict = flwr_app.ConfigRecord, flwr_app.RecordDict


def _npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array, allow_pickle=False)
    return out.getvalue()


def _content(array: Any) -> Any:
    return RecordDict({_wire.RECORD: ArrayRecord({"data": array})})


HEADER = _npy(np.zeros(3, np.uint8))
MALFORMED = {
    "garbage bytes": (
        _content(Array("uint8", (3,), "numpy.ndarray", b"garbage")),
        "array header does not parse",
    ),
    "no bytes": (
        _content(Array("uint8", (0,), "numpy.ndarray", b"")),
        "array header does not parse",
    ),
    "another serialization": (
        _content(Array("uint8", (3,), "torch.Tensor", b"abc")),
        "serialized as 'torch.Tensor'",
    ),
    "floats": (_content(Array(np.arange(3.0))), "float64 of shape \\(3,\\)"),
    "text": (_content(Array(np.array(["a"]))), "<U1 of shape \\(1,\\)"),
    "a matrix": (_content(Array(np.zeros((2, 2), np.uint8))), "of shape \\(2, 2\\)"),
    "a huge header": (
        _content(
            Array(
                "uint8",
                (3,),
                "numpy.ndarray",
                HEADER.replace(b"(3,)", b"(99999999999999,)"),
            )
        ),
        "header says 99999999999999 bytes, but 16 follow",
    ),
    "truncated": (
        _content(Array("uint8", (3,), "numpy.ndarray", HEADER[:-1])),
        "header says 3 bytes, but 2 follow",
    ),
    "a config record": (
        RecordDict({_wire.RECORD: ConfigRecord({"data": b"x"})}),
        "holds no 'fedtrees' array record",
    ),
    "no data array": (
        RecordDict(
            {_wire.RECORD: ArrayRecord({"other": Array(np.zeros(2, np.uint8))})}
        ),
        "holds no 'fedtrees' array record",
    ),
    "nothing": (RecordDict({}), "holds no 'fedtrees' array record"),
}


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_every_malformed_flower_content_is_one_unpack_error(case: str) -> None:
    content, reason = MALFORMED[case]
    with pytest.raises(_wire.MalformedContent, match=reason):
        _wire.unpack(content)


@pytest.mark.hostile("correct")
def test_packed_bytes_unpack_unchanged() -> None:
    data = bytes(range(256)) * 3
    assert _wire.unpack(_wire.pack(data)) == data
    assert _wire.unpack(_wire.pack(b"")) == b""


def _reply(content: Any) -> Any:
    reply = Mock(spec=["has_error", "content"])
    reply.has_error.return_value = False
    reply.content = content
    return reply


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_flower_reply_is_that_clients_failure(case: str) -> None:
    content, _ = MALFORMED[case]
    delivery = _flower_transport._delivery("site-b", _reply(content), 0.1)
    assert (delivery.client, delivery.status, delivery.data) == (
        "site-b",
        "malformed",
        None,
    )
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'site-b', round 3, 'test.round_two_nap': field 'reply' is "
        r"malformed: Flower content: ",
    ):
        receive("site-b", 3, Nap(0.0), delivery)


@pytest.mark.hostile("correct")
def test_a_well_formed_flower_reply_is_delivered() -> None:
    delivery = _flower_transport._delivery("a", _reply(_wire.pack(b"FTMS")), 0.1)
    assert delivery == Delivery("a", "ok", b"FTMS", 0.1)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_flower_request_is_answered_with_an_error(case: str) -> None:
    # The ClientApp raised MalformedContent: Flower reported a crashed app.
    from fedtrees.federation import decode
    from fedtrees.federation.flower import make_client_app
    from tests.federation.flower.test_apps import _context, _message

    content, reason = MALFORMED[case]
    app = make_client_app(Mock(side_effect=AssertionError("no data is read")))
    message, context = (
        _message(content, "query.fedtrees"),
        _context({"client-id": "site-b"}),
    )
    reply = app(message, context)
    assert not reply.has_error()
    answer = decode(_wire.unpack(reply.content))
    assert answer.type == "error"
    assert answer.client == "site-b"
    assert "Flower content is malformed" in answer.error
    assert re.search(reason, answer.error)
