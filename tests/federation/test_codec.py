from __future__ import annotations

import contextlib
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fedtrees.algorithms
from fedtrees.exceptions import CodecError, LocalProtocolError
from fedtrees.federation import Envelope, Payload, decode, encode, payload
from fedtrees.federation._payload import _REGISTRY, field_types
from tests.conftest import per_case

# Names load on first use: importing every method's package registers all the
# payload types here, not only those an earlier test module happened to import.
for _name in fedtrees.algorithms.__all__:
    getattr(fedtrees.algorithms, _name)

DTYPES = ["<f8", "<f4", "<i8", ">i4", "|u1", "|b1", "<U5", "<c16", "<f2"]

arrays = st.sampled_from(DTYPES).flatmap(
    lambda d: hnp.arrays(
        np.dtype(d), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
    )
)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "int": st.integers(-(2**63), 2**63 - 1),  # the codec's signed 64 bits
    "float": st.floats(allow_nan=True, allow_infinity=True),
    "str": st.text(),
    "bool": st.booleans(),
    "array": arrays,
}


# Every registered type (about a hundred) with ten examples each by default: the
# field kinds and dtypes are shared, so the types together cover them; the
# thorough profile runs each type with the full count.
@pytest.mark.parametrize("kind", sorted(_REGISTRY))
@per_case(10)
@given(data=st.data())
def test_every_payload_type_round_trips_exactly(kind: str, data: st.DataObject) -> None:
    cls = _REGISTRY[kind]
    values = {
        name: data.draw(VALUES[t], label=name) for name, t in field_types(cls).items()
    }
    original = cls(**values)
    for envelope_type in ("request", "reply"):
        envelope = Envelope(envelope_type, 3, "site-A", kind, original)  # type: ignore[arg-type]
        back = decode(encode(envelope))
        assert (back.type, back.round, back.client, back.kind) == (
            envelope_type,
            3,
            "site-A",
            kind,
        )
        assert back.payload == original
        for name in values:
            a, b = getattr(original, name), getattr(back.payload, name)
            if isinstance(a, np.ndarray):
                assert (a.dtype, a.shape) == (b.dtype, b.shape)
                assert a.tobytes() == b.tobytes()


def test_special_arrays_keep_dtype_and_shape() -> None:
    @payload("test.arrays")
    class Arrays(Payload):
        a: np.ndarray
        b: np.ndarray
        c: np.ndarray
        d: np.ndarray

    original = Arrays(
        a=np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)),
        b=np.arange(10.0)[::3],
        c=np.array(5.0),
        d=np.zeros((0, 5), dtype=np.int32),
    )
    back = decode(encode(Envelope("reply", 0, "c", "test.arrays", original))).payload
    assert back == original


def test_error_envelopes_carry_no_payload() -> None:
    back = decode(
        encode(Envelope("error", 2, "c", "toy.counts", None, "ValueError: bad"))
    )
    assert (back.type, back.payload, back.error) == ("error", None, "ValueError: bad")


def test_object_and_structured_arrays_are_refused() -> None:
    @payload("test.holder")
    class Holder(Payload):
        values: np.ndarray

    with pytest.raises(
        LocalProtocolError, match="object and structured arrays cannot be sent"
    ):
        encode(
            Envelope(
                "reply",
                0,
                "c",
                "test.holder",
                Holder(np.array([{"a": 1}], dtype=object)),
            )
        )
    structured = np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")])
    with pytest.raises(LocalProtocolError, match="structured"):
        encode(Envelope("reply", 0, "c", "test.holder", Holder(structured)))


def test_unsupported_field_types_are_refused_at_registration() -> None:
    with pytest.raises(
        LocalProtocolError, match="payload fields must be int, float, str, bool"
    ):

        @payload("test.bad_field")
        class Bad(Payload):
            values: list[int]


def test_malformed_kinds_and_duplicates_are_refused() -> None:
    with pytest.raises(LocalProtocolError, match=r"must look like '<method>.<action>'"):
        payload("NoDot")
    with pytest.raises(LocalProtocolError, match="already registered"):

        @payload("toy.counts")
        class Impostor(Payload):
            counts: np.ndarray


def _message() -> bytes:
    from fedtrees.algorithms.toy import HistogramReply

    return encode(
        Envelope("reply", 1, "a", HistogramReply.kind, HistogramReply(np.ones((3, 2))))
    )


def _rewrite(old: bytes, new: bytes) -> Any:
    """Replace text in the header and fix the header length prefix."""

    def mangle(data: bytes) -> bytes:
        size = struct.unpack("<I", data[6:10])[0]
        header = data[10 : 10 + size].replace(old, new)
        return data[:6] + struct.pack("<I", len(header)) + header + data[10 + size :]

    return mangle


@pytest.mark.parametrize(
    ("mangle", "field", "message"),
    [
        (lambda b: b[:5], "envelope", "shorter than the message prefix"),
        (lambda b: b"XXXX" + b[4:], "envelope", "bad magic"),
        (
            lambda b: b[:4] + struct.pack("<H", 2) + b[6:],
            "envelope",
            "newer than this fedtrees reads",
        ),
        (lambda b: b + b"\x00", "envelope", "1 trailing bytes"),
        (lambda b: b[:-8], "counts", "byte count"),
        (
            _rewrite(b'"toy.histogram_reply"', b'"toy.unknown_reply"'),
            "kind",
            "unknown payload kind",
        ),
        (_rewrite(b'"counts"', b'"kounts"'), "fields", "fields must be exactly"),
        (_rewrite(b'"t":"a"', b'"t":"i"'), "counts", "where 'array' is expected"),
        (_rewrite(b'"<f8"', b'"|O"'), "counts", "cannot be sent"),
        (_rewrite(b'"round":1', b'"round":"1"'), "envelope", "round must be an int"),
        (
            _rewrite(b'"envelope":"reply"', b'"envelope":"gossip"'),
            "envelope",
            "unknown envelope type",
        ),
        (
            _rewrite(b'"s":[3,2]', b'"s":[-3,2]'),
            "counts",
            "shape must be a list of ints",
        ),
    ],
)
def test_malformed_bytes_name_what_is_wrong(
    mangle: Any, field: str, message: str
) -> None:
    with pytest.raises(CodecError, match=message) as info:
        decode(mangle(_message()))
    assert info.value.field == field


@given(st.binary(max_size=300))
def test_random_bytes_never_crash_the_decoder(data: bytes) -> None:
    with contextlib.suppress(CodecError):
        decode(data)


@given(st.integers(0, 400), st.integers(0, 255))
def test_flipped_bytes_decode_or_fail_cleanly(position: int, value: int) -> None:
    data = bytearray(_message())
    data[position % len(data)] = value
    with contextlib.suppress(CodecError):
        decode(bytes(data))


def test_a_float_field_costs_the_same_bytes_whatever_its_value() -> None:
    """Fixed-width float text: message sizes (the ledger) never depend on a value."""
    from fedtrees.federation._codec import _decode_float, _encode_value

    widths = set()
    for value in (0.0, 0.1, 1.5, 1e-300, float("inf"), -float("inf"), -2.75):
        spec, _ = _encode_value("x", value)
        widths.add(len(spec["v"]))
        assert _decode_float(spec["v"]) == value
    assert widths == {16}
    spec, _ = _encode_value("x", float("nan"))
    assert np.isnan(_decode_float(spec["v"]))
    assert _decode_float((0.1).hex()) == 0.1  # text of older writers is still read
