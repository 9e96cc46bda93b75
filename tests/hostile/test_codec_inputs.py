"""Hostile bytes at the codec, the round loop and a client (issue 12, item 2).

Every malformed message is a :class:`CodecError` naming the field at fault; at the
server it becomes the client's :class:`RemoteProtocolError` (client, round,
field); a client's ``serve`` answers it with an error envelope and never raises.
Messages longer than ``max_message_bytes`` are refused before decoding.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from fedtrees.algorithms import DPForestClassifier, run_toy
from fedtrees.algorithms.dpforest._payloads import DPTreeRequest
from fedtrees.algorithms.toy import HistogramReply, HistogramRequest, ToyStrategy
from fedtrees.audit import recording
from fedtrees.exceptions import (
    CodecError,
    LocalProtocolError,
    RemoteProtocolError,
    ValidationError,
)
from fedtrees.federation import (
    ClientData,
    ClientState,
    Delivery,
    Envelope,
    Federation,
    Payload,
    decode,
    encode,
    receive,
    refuse,
    serve,
)

Mangle = Callable[[dict[str, Any], bytes], tuple[Any, bytes]]
PREFIX = struct.Struct("<4sHI")


def _reply() -> bytes:
    reply = HistogramReply(np.ones((3, 2)))
    return encode(Envelope("reply", 1, "a", reply.kind, reply))


def _request() -> HistogramRequest:
    return HistogramRequest(0, np.array([-1.0, 0.0, 1.0]), np.array(["no", "yes"]))


def _request_bytes(client: str = "a") -> bytes:
    request = _request()
    return encode(Envelope("request", 1, client, request.kind, request))


def _split(data: bytes) -> tuple[dict[str, Any], bytes]:
    size = PREFIX.unpack(data[: PREFIX.size])[2]
    header = json.loads(data[PREFIX.size : PREFIX.size + size])
    return header, data[PREFIX.size + size :]


def _frame(header: Any, body: bytes = b"") -> bytes:
    if isinstance(header, bytes):
        raw = header
    else:
        raw = (header if isinstance(header, str) else json.dumps(header)).encode()
    return PREFIX.pack(b"FTMS", 1, len(raw)) + raw + body


def _mangled(data: bytes, change: Mangle) -> bytes:
    header, body = _split(data)
    new_header, new_body = change(header, body)
    return _frame(new_header, new_body)


def _spec(header: dict[str, Any], name: str) -> dict[str, Any]:
    spec: dict[str, Any] = dict(header["fields"])[name]
    return spec


def _set_spec(name: str, key: str, value: object) -> Mangle:
    def change(header: dict[str, Any], body: bytes) -> tuple[Any, bytes]:
        _spec(header, name)[key] = value
        return header, body

    return change


def _client_data() -> ClientData:
    X = np.array([[0.5], [-0.5], [1.5], [2.0]])
    return ClientData.build("a", X, np.array(["no", "yes", "no", "yes"]))


# -- the five cases the hostile tester found ----------------------------------------


@pytest.mark.hostile("clear_error")
def test_a_deeply_nested_header_is_a_codec_error() -> None:
    data = _mangled(
        _reply(), lambda h, b: (json.dumps(h)[:-1] + ',"x":' + "[" * 100_000, b)
    )
    with pytest.raises(CodecError, match="header is nested too deeply") as info:
        decode(data)
    assert info.value.field == "envelope"


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("entry", "field"),
    [(["counts"], "counts"), (["counts", {}, 3], "counts"), ([7, {}], "fields[0]")],
)
def test_a_field_entry_of_the_wrong_arity_is_named(entry: Any, field: str) -> None:
    def change(header: dict[str, Any], body: bytes) -> tuple[Any, bytes]:
        header["fields"] = [entry]
        return header, body

    with pytest.raises(
        CodecError, match=r"entry 0 must be \[name, description\]"
    ) as info:
        decode(_mangled(_reply(), change))
    assert info.value.field == field


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("shape", "reason"),
    [
        ([2**70], "more elements than a"),
        ([3, 2**62], "more elements than a"),
        # An empty array is bounded by numpy, not by the message (issue 24).
        ([2**70, 0], "larger than numpy can build"),
        ([0, 2**70], "larger than numpy can build"),
        ([0, 2**62], "larger than numpy can build"),  # 2**62 float64s: 2**65 bytes
    ],
)
def test_a_huge_dimension_is_refused_before_numpy_sees_it(
    shape: list[int], reason: str
) -> None:
    data = _mangled(_reply(), _set_spec("counts", "s", shape))
    with pytest.raises(CodecError, match=reason) as info:
        decode(data)
    assert info.value.field == "counts"


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("dtype", [None, 8, ["<f8"], {"d": "<f8"}, ""])
def test_a_dtype_that_is_not_a_dtype_string_is_refused(dtype: object) -> None:
    data = _mangled(_reply(), _set_spec("counts", "d", dtype))
    with pytest.raises(CodecError, match=r"dtype .* cannot be sent") as info:
        decode(data)
    assert info.value.field == "counts"


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("value", [10**30, 2**63, -(2**63) - 1])
def test_an_int_outside_64_bits_is_refused(value: int) -> None:
    data = _mangled(_request_bytes(), _set_spec("feature", "v", value))
    with pytest.raises(CodecError, match="outside the signed 64-bit range") as info:
        decode(data)
    assert info.value.field == "feature"


@pytest.fixture(scope="module")
def dp_exchange() -> tuple[Payload, bytes]:
    """One DP forest request (decoded) and its client's reply (bytes)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = (X[:, 0] > 0).astype(int)
    fed = Federation.from_groups(X, y, np.repeat(["a", "b"], 15))
    model = DPForestClassifier(1.0, 2, [(-4.0, 4.0)] * 2, random_state=0)
    with recording() as ledgers:
        model.fit_federation(fed)
    (ledger,) = ledgers
    down, up = (
        next(
            m
            for m in ledger.captured
            if m.kind == "dpforest.tree" and m.client == "b" and m.direction == d
        )
        for d in ("down", "up")
    )
    request = decode(down.data).payload
    assert request is not None
    return request, up.data


@pytest.mark.hostile("clear_error")
def test_a_huge_n_queries_is_the_clients_error_at_the_server(
    dp_exchange: tuple[Payload, bytes],
) -> None:
    request, reply = dp_exchange
    round_ = decode(reply).round
    assert receive("b", round_, request, Delivery("b", "ok", reply, 0.0)) is not None
    hostile = _mangled(reply, _set_spec("n_queries", "v", 10**30))
    with pytest.raises(
        RemoteProtocolError, match=rf"Client 'b', round {round_}.*'n_queries'"
    ) as info:
        receive("b", round_, request, Delivery("b", "ok", hostile, 0.0))
    assert "64-bit" in info.value.reason


# -- the message-size limit -----------------------------------------------------------


@pytest.mark.hostile("clear_error")
def test_an_over_long_reply_is_refused_at_the_server_before_decoding() -> None:
    request = _request()
    reply = encode(
        Envelope("reply", 4, "c", HistogramReply.kind, HistogramReply(np.ones((4, 2))))
    )
    limit = len(reply) - 1
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client 'c', round 4, 'toy.histogram': field 'reply' is {len(reply)} "
        rf"bytes, over the limit of {limit} bytes \(max_message_bytes\)",
    ):
        receive(
            "c", 4, request, Delivery("c", "ok", reply, 0.0), max_message_bytes=limit
        )
    garbage = b"\xff" * 1000  # not even decoded: the length decides
    with pytest.raises(RemoteProtocolError, match="over the limit of 999 bytes"):
        receive(
            "c", 4, request, Delivery("c", "ok", garbage, 0.0), max_message_bytes=999
        )


@pytest.mark.hostile("clear_error")
def test_a_federation_limit_applies_to_every_run_on_it() -> None:
    X = np.arange(12.0).reshape(6, 2)
    fed = Federation.from_groups(X, [0, 1] * 3, list("aabbcc"), max_message_bytes=300)
    with pytest.raises(
        RemoteProtocolError, match=r"Client 'a', round 0, .*over the limit of 300"
    ):
        run_toy(fed, n_rounds=1)
    # A run given its own limit overrides the federation's.
    result = fed.run(
        ToyStrategy(0, 4, 1, [-1.0, 0.0, 1.0]),
        task="classification",
        max_message_bytes=10**6,
    )
    assert result.rounds == 2


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("value", [0, -5, 1.5, "big", True])
def test_a_bad_limit_is_named(value: object) -> None:
    X = np.arange(12.0).reshape(6, 2)
    with pytest.raises(ValidationError, match="max_message_bytes"):
        Federation.from_groups(X, [0, 1] * 3, list("aabbcc"), max_message_bytes=value)  # type: ignore[arg-type]


@pytest.mark.hostile("clear_error")
def test_an_over_long_request_is_answered_with_an_error_by_the_client() -> None:
    request = _request_bytes()
    answer = decode(serve(request, _client_data(), max_message_bytes=len(request) - 1))
    assert answer.type == "error"
    assert answer.client == "a"
    assert f"is {len(request)} bytes, over this client's limit" in answer.error
    assert "max_message_bytes" in answer.error
    refused = decode(refuse(request, "a", "no data", max_message_bytes=10))
    assert refused.type == "error"
    assert "over this client's limit of 10" in refused.error
    assert decode(serve(request, _client_data())).type == "reply"


# -- the other holes, closed ----------------------------------------------------------


def _top(key: str, value: object) -> Mangle:
    def change(header: dict[str, Any], body: bytes) -> tuple[Any, bytes]:
        header[key] = value
        return header, body

    return change


def _text(old: str, new: str) -> Mangle:
    return lambda h, b: (json.dumps(h, separators=(",", ":")).replace(old, new), b)


HOLES: list[tuple[str, Mangle, str, str]] = [
    ("void dtype", _set_spec("counts", "d", "|V8"), "counts", "cannot be sent"),
    ("object dtype", _set_spec("counts", "d", "|O"), "counts", "cannot be sent"),
    ("datetime dtype", _set_spec("counts", "d", "<M8"), "counts", "cannot be sent"),
    (
        "huge string itemsize",
        _set_spec("counts", "d", ">U99999999999"),
        "counts",
        "cannot be sent",
    ),
    (
        "string itemsize over 32 bits",
        _set_spec("counts", "d", "<U9999999999"),
        "counts",
        "not a numpy dtype",
    ),
    ("native byte order", _set_spec("counts", "d", "=f8"), "counts", "cannot be sent"),
    ("no byte order", _set_spec("counts", "d", "f8"), "counts", "cannot be sent"),
    ("non-canonical", _set_spec("counts", "d", "|U3"), "counts", "not written as"),
    ("bad itemsize", _set_spec("counts", "d", "<f3"), "counts", "not a numpy dtype"),
    (
        "huge bytes itemsize",
        _set_spec("counts", "d", "|S999999999"),
        "counts",
        "byte count",
    ),
    ("bool dimension", _set_spec("counts", "s", [True, 2]), "counts", "shape must"),
    ("float dimension", _set_spec("counts", "s", [3.0, 2]), "counts", "shape must"),
    ("nested shape", _set_spec("counts", "s", [[3], 2]), "counts", "shape must"),
    ("33 dimensions", _set_spec("counts", "s", [1] * 33), "counts", "at most 32"),
    ("bool byte count", _set_spec("counts", "n", True), "counts", "byte count"),
    ("spec extra key", _set_spec("counts", "x", 1), "counts", "exactly the keys"),
    (
        "spec not object",
        lambda h, b: ({**h, "fields": [["counts", 3]]}, b),
        "counts",
        "must be \\[name, description\\]",
    ),
    ("fields not a list", _top("fields", {"counts": 1}), "fields", "must be a list"),
    ("kind not a string", _top("kind", 5), "envelope", "kind must be a string"),
    ("error not a string", _top("error", None), "envelope", "error must be a string"),
    ("client not a string", _top("client", ["a"]), "envelope", "client must be"),
    ("round a bool", _top("round", True), "envelope", "round must be an int"),
    ("round a float", _top("round", 1.0), "envelope", "round must be an int"),
    ("round over 64 bits", _top("round", 2**64), "envelope", "64-bit range"),
    ("envelope type", _top("envelope", None), "envelope", "unknown envelope type"),
    (
        "missing key",
        lambda h, b: ({k: v for k, v in h.items() if k != "error"}, b),
        "envelope",
        "missing \\['error'\\]",
    ),
    ("extra key", _top("extra", 1), "envelope", "unexpected \\['extra'\\]"),
    ("NaN in JSON", _text('"round":1', '"round":NaN'), "envelope", "NaN is not JSON"),
    (
        "repeated key",
        _text('{"envelope"', '{"round":2,"envelope"'),
        "envelope",
        "repeats a key",
    ),
    ("header an array", lambda h, b: ("[1, 2]", b), "envelope", "not a JSON object"),
    ("header not UTF-8", lambda h, b: (b'"\xff"', b), "envelope", "not JSON"),
    ("short body", lambda h, b: (h, b[:-8]), "counts", "byte count 48 is more than"),
    ("long body", lambda h, b: (h, b + b"\x00"), "envelope", "1 trailing bytes"),
    (
        "bool byte 2",
        lambda h, b: (_bool_header(h), b"\x02" + b"\x01" * 5),
        "counts",
        "bool byte other than 0 or 1",
    ),
    (
        "code point",
        lambda h, b: (_unicode_header(h), b"\xff" * 24),
        "counts",
        "beyond U\\+10FFFF",
    ),
    (
        "error with fields",
        lambda h, b: ({**h, "envelope": "error"}, b),
        "fields",
        "carries no fields",
    ),
]


def _bool_header(header: dict[str, Any]) -> dict[str, Any]:
    _spec(header, "counts").update(d="|b1", n=6)
    return header


def _unicode_header(header: dict[str, Any]) -> dict[str, Any]:
    _spec(header, "counts").update(d="<U1", n=24)
    return header


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("change", "field", "message"),
    [h[1:] for h in HOLES],
    ids=[h[0] for h in HOLES],
)
def test_each_malformed_header_is_a_codec_error_naming_the_field(
    change: Mangle, field: str, message: str
) -> None:
    data = _mangled(_reply(), change)
    with pytest.raises(CodecError, match=message) as info:
        decode(data)
    assert info.value.field == field


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("text", ["zz" * 8, "0x1p99999", "x" * 100, 1.5, None, "inf!"])
def test_float_text_that_is_not_a_float_is_named(text: object) -> None:
    request = DPTreeRequest(
        1.0, 2, "paper", "average", np.zeros((1, 2)), np.array([0, 1]), 7
    )
    data = _mangled(
        encode(Envelope("request", 1, "a", request.kind, request)),
        _set_spec("epsilon", "v", text),
    )
    with pytest.raises(CodecError, match="16 hex digits") as info:
        decode(data)
    assert info.value.field == "epsilon"


@pytest.mark.hostile("clear_error")
def test_a_malformed_reply_names_client_round_and_field_at_the_server() -> None:
    data = _mangled(_reply(), _set_spec("counts", "s", [2**70]))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a', round 1, 'toy.histogram': field 'counts' is malformed",
    ):
        receive("a", 1, _request(), Delivery("a", "ok", data, 0.0))


# -- a client's serve never raises ----------------------------------------------------


def _returns(value: object) -> Callable[..., Any]:
    return lambda request, data, state: value


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message")


def _raise_unprintable(request: Payload, data: ClientData, state: ClientState) -> Any:
    raise _Unprintable


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("handle", "message"),
    [
        (_returns(None), "returned a NoneType, not a payload"),
        (_returns({"counts": [1]}), "returned a dict, not a payload"),
        (
            _returns(HistogramReply(np.array([object()]))),
            "could not be encoded: LocalProtocolError: Field 'counts' is a object",
        ),
        (
            _returns(HistogramReply(np.zeros(2, dtype=[("a", "<f8")]))),
            "could not be encoded: .*'counts'.*structured",
        ),
        # not fedtrees' own: its type and line travel, not its (broken) text
        (_raise_unprintable, "_Unprintable in fedtrees.*its message is withheld"),
    ],
)
def test_serve_answers_a_broken_handler_with_an_error_envelope(
    handle: Any, message: str
) -> None:
    answer = decode(serve(_request_bytes(), _client_data(), handle))
    assert (answer.type, answer.client, answer.round) == ("error", "a", 1)
    assert answer.kind == "toy.histogram"
    with pytest.raises(AssertionError, match=message):
        raise AssertionError(answer.error)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (b"", "shorter than the message prefix"),
        (_reply(), "not a request: a 'reply' envelope"),
        (_request_bytes("b"), "addressed to 'b', this client is 'a'"),
        (bytearray(_request_bytes()), ""),
        (None, "expected bytes, got NoneType"),
    ],
)
def test_serve_answers_any_request_bytes(request_: Any, message: str) -> None:
    answer = decode(serve(request_, _client_data()))
    if not message:
        assert answer.type == "reply"
        return
    assert (answer.type, answer.client) == ("error", "a")
    assert message in answer.error


@pytest.mark.hostile("clear_error")
def test_encode_refuses_an_int_the_codec_cannot_carry() -> None:
    request = HistogramRequest(2**63, np.zeros(1), np.array(["a"]))
    with pytest.raises(LocalProtocolError, match=r"'feature' is .*signed 64-bit"):
        encode(Envelope("request", 1, "a", request.kind, request))


# -- on Flower: the run config's max-message-bytes ------------------------------------

RUN_CONFIG = {
    "job": "toy",
    "params": "{}",
    "output-path": "out.json",
    "min-clients": 2,
    "round-timeout": 30.0,
    "registration-timeout": 60.0,
    "poll-interval": 0.02,
}


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("value", [0, -1, 2.5, "big", float("inf")])
def test_a_bad_max_message_bytes_in_the_run_config_is_named(value: object) -> None:
    pytest.importorskip("flwr")
    from fedtrees.federation.flower._apps import ServerConfig, max_message_bytes

    assert ServerConfig.from_run_config(RUN_CONFIG).max_message_bytes == 128 * 2**20
    config = ServerConfig.from_run_config({**RUN_CONFIG, "max-message-bytes": 4096})
    assert config.max_message_bytes == 4096
    with pytest.raises(ValidationError, match="Run config 'max-message-bytes' must be"):
        ServerConfig.from_run_config({**RUN_CONFIG, "max-message-bytes": value})
    # The ClientApp reads the same key for its own limit, with the same errors.
    assert max_message_bytes({"max-message-bytes": 4096}) == 4096
    with pytest.raises(ValidationError, match="Run config 'max-message-bytes' must be"):
        max_message_bytes({"max-message-bytes": value})
