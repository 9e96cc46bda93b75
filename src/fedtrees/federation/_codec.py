"""The message codec: envelopes <-> bytes, pure and versioned (STYLE habit 2).

Layout: ``b"FTMS"`` | version (uint16, little-endian) | header length (uint32) |
header (UTF-8 JSON) | the raw buffers of the array fields, in field order.

The header holds the envelope (``request`` / ``reply`` / ``error``), the round, the
client id, the payload kind and every field with a type tag: ints and bools as
JSON, strings as JSON strings, floats as the 16 hex digits of their IEEE-754
bytes (exact, NaN and inf included, and of fixed width, so a message's size
never depends on a float's value; ``float.hex`` text is still read), arrays as
dtype string, shape and byte count. Arrays keep their dtype
(byte order included) and shape; object and structured arrays are refused.
Decoding checks the frame, the version, the payload kind and every field against
the payload class, and raises :class:`CodecError` naming what is wrong.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Final, Literal

import numpy as np

from fedtrees.exceptions import CodecError, LocalProtocolError
from fedtrees.federation._payload import Payload, field_types, payload_class

__all__ = ["VERSION", "Envelope", "decode", "encode", "encode_broadcast"]

MAGIC: Final = b"FTMS"
VERSION: Final = 1
_PREFIX = struct.Struct("<4sHI")
_FLOAT = struct.Struct(">d")  # a float's 8 bytes as 16 hex digits: fixed width
_ARRAY_KINDS: Final = "biufcUS"
EnvelopeType = Literal["request", "reply", "error"]


@dataclass(frozen=True, eq=False)
class Envelope:
    """One message: who, which round, what kind, and a payload or an error.

    A reply copies ``round``, ``client`` and the request's ``kind`` family from
    its request; an ``error`` envelope carries ``error`` text and no payload.
    """

    type: EnvelopeType
    round: int
    client: str
    kind: str
    payload: Payload | None = None
    error: str = ""


def encode(envelope: Envelope) -> bytes:
    """Serialize an envelope to bytes.

    Raises
    ------
    LocalProtocolError
        If the payload holds an object or structured array (our own bug).
    """
    header, buffers = _encode_body(envelope)
    return _frame(header, buffers)


def encode_broadcast(
    type_: EnvelopeType, round_: int, clients: Sequence[str], payload: Payload
) -> dict[str, bytes]:
    """Encode one payload for many clients: the fields once, a header per client.

    The bytes for each client are exactly ``encode(Envelope(type_, round_,
    client, payload.kind, payload))``; only the client id differs between them.
    """
    header, buffers = _encode_body(Envelope(type_, round_, "", payload.kind, payload))
    out = {}
    for client in clients:
        header["client"] = client
        out[client] = _frame(header, buffers)
    return out


def _encode_body(envelope: Envelope) -> tuple[dict[str, Any], list[memoryview]]:
    header: dict[str, Any] = {
        "envelope": envelope.type,
        "round": envelope.round,
        "client": envelope.client,
        "kind": envelope.kind,
        "error": envelope.error,
        "fields": [],
    }
    buffers: list[memoryview] = []  # byte views of the arrays: joined, not copied
    if envelope.payload is not None:
        for f in fields(envelope.payload):  # type: ignore[arg-type]
            spec, buffer = _encode_value(f.name, getattr(envelope.payload, f.name))
            header["fields"].append([f.name, spec])
            if buffer is not None:
                buffers.append(buffer)
    return header, buffers


def _frame(header: dict[str, Any], buffers: list[memoryview]) -> bytes:
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    return b"".join([_PREFIX.pack(MAGIC, VERSION, len(text)), text, *buffers])


def _encode_value(name: str, value: object) -> tuple[dict[str, Any], memoryview | None]:
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _ARRAY_KINDS or value.dtype.fields is not None:
            raise LocalProtocolError(
                f"Field {name!r} is a {value.dtype} array; object and structured "
                "arrays cannot be sent."
            )
        flat = np.ascontiguousarray(value).reshape(-1)
        data = (
            flat.view(np.uint8) if flat.dtype.itemsize else np.zeros(0, np.uint8)
        ).data
        return {
            "t": "a",
            "d": value.dtype.str,
            "s": list(value.shape),
            "n": data.nbytes,
        }, data
    if isinstance(value, bool):
        return {"t": "b", "v": value}, None
    if isinstance(value, int):
        return {"t": "i", "v": value}, None
    if isinstance(value, float):
        return {"t": "f", "v": _FLOAT.pack(value).hex()}, None
    if isinstance(value, str):
        return {"t": "s", "v": value}, None
    raise LocalProtocolError(
        f"Field {name!r} holds a {type(value).__name__}; payload fields must be "
        "int, float, str, bool or numpy arrays."
    )


def decode(data: bytes) -> Envelope:
    """Parse bytes written by :func:`encode`; raise :class:`CodecError` otherwise."""
    header, body = _split(data)
    kind = _header_str(header, "kind")
    envelope_type = header.get("envelope")
    if envelope_type not in ("request", "reply", "error"):
        raise CodecError(f"unknown envelope type {envelope_type!r}")
    round_ = header.get("round")
    if isinstance(round_, bool) or not isinstance(round_, int):
        raise CodecError(f"round must be an int, got {round_!r}")
    client = _header_str(header, "client")
    error = _header_str(header, "error")
    if envelope_type == "error":
        return Envelope("error", round_, client, kind, None, error)
    payload = _decode_payload(kind, header.get("fields"), body)
    return Envelope(envelope_type, round_, client, kind, payload, error)


def _split(data: bytes) -> tuple[dict[str, Any], memoryview]:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CodecError(f"expected bytes, got {type(data).__name__}")
    view = memoryview(data)
    if len(view) < _PREFIX.size:
        raise CodecError(f"{len(view)} bytes is shorter than the message prefix")
    magic, version, size = _PREFIX.unpack(view[: _PREFIX.size])
    if magic != MAGIC:
        raise CodecError("not a fedtrees message (bad magic bytes)")
    if version > VERSION:
        raise CodecError(
            f"message version {version} is newer than this fedtrees reads "
            f"({VERSION}); upgrade fedtrees on this party"
        )
    end = _PREFIX.size + size
    if version < 1 or end > len(view):
        raise CodecError(f"bad version {version} or header length {size}")
    try:
        header = json.loads(bytes(view[_PREFIX.size : end]).decode())
    except (UnicodeDecodeError, ValueError) as exc:
        raise CodecError(f"header is not JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise CodecError("header is not a JSON object")
    return header, view[end:]


def _header_str(header: dict[str, Any], key: str) -> str:
    value = header.get(key)
    if not isinstance(value, str):
        raise CodecError(f"{key} must be a string, got {value!r}")
    return value


def _decode_payload(kind: str, specs: object, body: memoryview) -> Payload:
    try:
        cls = payload_class(kind)
    except KeyError:
        raise CodecError(
            f"unknown payload kind {kind!r}; do both parties run the same fedtrees "
            "version with the same algorithms installed?",
            "kind",
        ) from None
    expected = field_types(cls)
    if not isinstance(specs, list) or [
        s[0] if isinstance(s, list) and s else None for s in specs
    ] != list(expected):
        raise CodecError(
            f"fields must be exactly {list(expected)} for {kind!r}", "fields"
        )
    values: dict[str, Any] = {}
    offset = 0
    for name, spec in specs:
        values[name], offset = _decode_value(name, spec, expected[name], body, offset)
    if offset != len(body):
        raise CodecError(f"{len(body) - offset} trailing bytes after the last array")
    return cls(**values)


def _decode_value(
    name: str, spec: object, wanted: str, body: memoryview, offset: int
) -> tuple[Any, int]:
    if not isinstance(spec, dict):
        raise CodecError("field description is not an object", name)
    tag = spec.get("t")
    value = spec.get("v")
    if wanted == "array" and tag == "a":
        return _decode_array(name, spec, body, offset)
    if (
        wanted == "int"
        and tag == "i"
        and isinstance(value, int)
        and not isinstance(value, bool)
    ):
        return value, offset
    if wanted == "bool" and tag == "b" and isinstance(value, bool):
        return value, offset
    if wanted == "str" and tag == "s" and isinstance(value, str):
        return value, offset
    if wanted == "float" and tag == "f" and isinstance(value, str):
        try:
            return _decode_float(value), offset
        except ValueError:
            pass
    raise CodecError(f"holds a {tag!r} value where {wanted!r} is expected", name)


def _decode_float(text: str) -> float:
    """Read a float's 16 hex digits (or the ``float.hex`` text of older writers)."""
    if len(text) == 2 * _FLOAT.size and "x" not in text and text not in ("inf", "nan"):
        value: float = _FLOAT.unpack(bytes.fromhex(text))[0]
        return value
    return float.fromhex(text)


def _decode_array(
    name: str, spec: dict[str, Any], body: memoryview, offset: int
) -> tuple[np.ndarray, int]:
    try:
        dtype = np.dtype(spec.get("d"))
    except TypeError as exc:
        raise CodecError(f"invalid dtype {spec.get('d')!r}", name) from exc
    shape, nbytes = spec.get("s"), spec.get("n")
    if dtype.kind not in _ARRAY_KINDS or dtype.fields is not None:
        raise CodecError(f"dtype {dtype} cannot be sent", name)
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise CodecError(f"shape must be a list of ints >= 0, got {shape!r}", name)
    expected = math.prod(shape) * dtype.itemsize
    if nbytes != expected or offset + expected > len(body):
        raise CodecError(
            f"byte count {nbytes!r} does not match shape {shape} of {dtype}", name
        )
    if dtype.itemsize == 0:  # e.g. "<U0": empty strings carry no bytes
        return np.zeros(shape, dtype=dtype), offset
    # A read-only view of the message (no copy): received arrays are immutable.
    flat = np.frombuffer(body[offset : offset + expected], dtype=dtype)
    return flat.reshape(shape), offset + expected
