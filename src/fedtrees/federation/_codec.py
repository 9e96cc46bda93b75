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
Ints (fields and the round) must fit in a signed 64-bit integer, on both sides.

Decoding checks the frame, the version, the payload kind and every field against
the payload class, and raises :class:`CodecError` naming what is wrong — and
nothing else, whatever the bytes: the header must be a JSON object of at most
16 MiB with exactly the codec's keys (no NaN, no repeated key, no deep nesting);
array dtypes must be written as :func:`encode` writes them (byte order, a kind in
``"biufcUS"``, an item size: ``"<f8"``); a shape has at most 32 dimensions and
its element count does not exceed the message's length in bytes; the byte count
must match the shape and fit in the body; bool arrays hold only 0 and 1, string
arrays only Unicode characters. All of it is checked before any array is built,
and arrays stay zero-copy views of the message.

**Empty arrays.** The rule bounds *element counts*, not dimensions: an empty
array (a zero in its shape) holds nothing, so its other dimensions may exceed
the message's length — ``(0, K, 2)`` statistics of a column with K = 450 zip
codes travel in a reply of a few hundred bytes. Its shape must still be one
numpy can build (the product of its non-zero dimensions times the item size
fits in a signed 64-bit size), as every array :func:`encode` is given is.
:func:`encode` applies the same rules to what it writes (:func:`_shape_problem`
is their one home), so ``decode(encode(p)) == p`` for every payload ``encode``
accepts.

The codec bounds what one message may *say*; how long a message may be is the
receiver's setting, ``max_message_bytes`` (default :data:`MAX_MESSAGE_BYTES`,
128 MiB), checked on the byte length before decoding by the round loop and by a
client's :func:`~fedtrees.federation.serve`.
"""

from __future__ import annotations

import json
import math
import re
import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Final, Literal

import numpy as np

from fedtrees._validation import shown
from fedtrees.exceptions import CodecError, LocalProtocolError
from fedtrees.federation._payload import Payload, field_types, payload_class

__all__ = [
    "MAX_MESSAGE_BYTES",
    "VERSION",
    "Envelope",
    "decode",
    "encode",
    "encode_broadcast",
]

MAGIC: Final = b"FTMS"
VERSION: Final = 1
_PREFIX = struct.Struct("<4sHI")
_FLOAT = struct.Struct(">d")  # a float's 8 bytes as 16 hex digits: fixed width
_ARRAY_KINDS: Final = "biufcUS"
MAX_MESSAGE_BYTES: Final = 128 * 2**20
"""Default longest message a party accepts, in bytes (``max_message_bytes``)."""
_MAX_HEADER_BYTES: Final = 16 * 2**20
_MAX_DIMS: Final = 32
_MAX_EXTENT: Final = np.iinfo(np.intp).max  # numpy's largest array, in bytes
_MAX_FLOAT_TEXT: Final = 64
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_DTYPE: Final = re.compile(r"[<>|][biufcUS][0-9]{1,10}")
_HEADER_KEYS: Final = ("envelope", "round", "client", "kind", "error", "fields")
_ARRAY_KEYS: Final = frozenset("tdsn")
_SCALAR_KEYS: Final = frozenset("tv")
_TAGS: Final = {"array": "a", "int": "i", "float": "f", "bool": "b", "str": "s"}
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
        If the payload holds an object or structured array, or an array that
        :func:`decode` would refuse (more than 32 dimensions): our own bug.
    """
    header, buffers = _encode_body(envelope)
    data = _frame(header, buffers)
    _check_shapes(header, len(data))
    return data


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
    if out:  # the shortest message bounds the element counts of them all
        _check_shapes(header, min(len(data) for data in out.values()))
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


def _check_shapes(header: dict[str, Any], size: int) -> None:
    """Refuse to send an array that :func:`decode` would refuse (our own bug)."""
    for name, spec in header["fields"]:
        if spec["t"] == "a":
            problem = _shape_problem(spec["s"], np.dtype(spec["d"]).itemsize, size)
            if problem is not None:
                raise LocalProtocolError(f"Field {name!r} cannot be sent: {problem}.")


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
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise LocalProtocolError(
                f"Field {name!r} is {value}, outside the signed 64-bit range the "
                "codec sends."
            )
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
    """Parse bytes written by :func:`encode`; raise :class:`CodecError` otherwise.

    Nothing but :class:`CodecError` leaves this function, whatever the bytes.
    """
    header, body, size = _split(data)
    envelope_type = header["envelope"]
    if envelope_type not in ("request", "reply", "error"):
        raise CodecError(
            f"unknown envelope type {_show(envelope_type)}; 'request', 'reply' or "
            "'error' expected"
        )
    round_ = _int64(header["round"], "envelope", "round")
    client = _header_str(header, "client")
    kind = _header_str(header, "kind")
    error = _header_str(header, "error")
    specs = header["fields"]
    if not isinstance(specs, list):
        raise CodecError(f"fields must be a list, got {_show(specs)}", "fields")
    if envelope_type == "error":
        if specs or len(body):
            raise CodecError(
                "an error envelope carries no fields and no body", "fields"
            )
        return Envelope("error", round_, client, kind, None, error)
    payload = _decode_payload(kind, specs, body, size)
    return Envelope(envelope_type, round_, client, kind, payload, error)


def _split(data: bytes) -> tuple[dict[str, Any], memoryview, int]:
    """Check the frame; return the header, the body and the message's length."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CodecError(f"expected bytes, got {type(data).__name__}")
    view = memoryview(data)
    if view.ndim != 1 or view.format != "B" or not view.c_contiguous:
        view = memoryview(view.tobytes())  # e.g. a view of a float array
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
    if version < 1:
        raise CodecError(f"bad version {version}")
    if end > len(view):
        raise CodecError(
            f"header length {size} is more than the {len(view) - _PREFIX.size} "
            "bytes after the prefix"
        )
    header = _parse_header(view[_PREFIX.size : end])
    return header, view[end:], len(view)


def _parse_header(raw: memoryview) -> dict[str, Any]:
    """Parse the header: a JSON object with exactly the codec's keys."""
    if len(raw) > _MAX_HEADER_BYTES:
        raise CodecError(
            f"header is {len(raw)} bytes, over the codec's limit of {_MAX_HEADER_BYTES}"
        )
    try:
        header = json.loads(
            bytes(raw).decode(),
            parse_constant=_refuse_constant,
            object_pairs_hook=_unique_keys,
        )
    except RecursionError:
        raise CodecError("header is nested too deeply to be a message header") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise CodecError(f"header is not JSON: {_show(str(exc))}") from exc
    if not isinstance(header, dict):
        raise CodecError(f"header is not a JSON object: {_show(header)}")
    if set(header) != set(_HEADER_KEYS):
        missing = [k for k in _HEADER_KEYS if k not in header]
        extra = sorted(set(header) - set(_HEADER_KEYS))
        raise CodecError(
            f"header must hold exactly the keys {list(_HEADER_KEYS)}; missing "
            f"{missing}, unexpected {_show(extra)}"
        )
    return header


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("an object repeats a key")
    return out


def _show(value: object) -> str:
    """Return a short repr of a received value, for error messages."""
    return shown(value, limit=80)


def _header_str(header: dict[str, Any], key: str) -> str:
    value = header[key]
    if not isinstance(value, str):
        raise CodecError(f"{key} must be a string, got {_show(value)}")
    return value


def _int64(value: object, field: str, what: str) -> int:
    """Return ``value`` if it is an int (not a bool) that fits in 64 signed bits."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise CodecError(f"{what} must be an int, got {_show(value)}", field)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise CodecError(
            f"{what} {_show(value)} is outside the signed 64-bit range of the codec",
            field,
        )
    return value


def _decode_payload(
    kind: str, specs: list[Any], body: memoryview, size: int
) -> Payload:
    try:
        cls = payload_class(kind)
    except KeyError:
        raise CodecError(
            f"unknown payload kind {_show(kind)}; do both parties run the same "
            "fedtrees version with the same algorithms installed?",
            "kind",
        ) from None
    expected = field_types(cls)
    names = [_entry_name(i, entry) for i, entry in enumerate(specs)]
    if names != list(expected):
        raise CodecError(
            f"fields must be exactly {list(expected)} for {kind!r}, got {_show(names)}",
            "fields",
        )
    values: dict[str, Any] = {}
    offset = 0
    for name, spec in specs:
        values[name], offset = _decode_value(
            name, spec, expected[name], body, offset, size
        )
    if offset != len(body):
        raise CodecError(f"{len(body) - offset} trailing bytes after the last array")
    return cls(**values)


def _entry_name(index: int, entry: object) -> str:
    """Return the field name of a ``[name, description]`` entry of ``fields``."""
    if (
        not isinstance(entry, list)
        or len(entry) != 2
        or not isinstance(entry[0], str)
        or not isinstance(entry[1], dict)
    ):
        raise CodecError(
            f"entry {index} must be [name, description], got {_show(entry)}",
            entry[0]
            if isinstance(entry, list) and entry and isinstance(entry[0], str)
            else f"fields[{index}]",
        )
    name: str = entry[0]
    return name


def _decode_value(
    name: str,
    spec: dict[str, Any],
    wanted: str,
    body: memoryview,
    offset: int,
    size: int,
) -> tuple[Any, int]:
    tag = spec.get("t")
    if tag != _TAGS[wanted]:
        raise CodecError(
            f"holds a {_show(tag)} value where {wanted!r} is expected", name
        )
    keys = _ARRAY_KEYS if tag == "a" else _SCALAR_KEYS
    if set(spec) != keys:
        raise CodecError(
            f"description must hold exactly the keys {sorted(keys)}, got "
            f"{_show(sorted(spec))}",
            name,
        )
    if wanted == "array":
        return _decode_array(name, spec, body, offset, size)
    value = spec["v"]
    if wanted == "int":
        return _int64(value, name, "value"), offset
    if wanted == "float":
        return _read_float(name, value), offset
    if wanted == "bool" and isinstance(value, bool):
        return value, offset
    if wanted == "str" and isinstance(value, str):
        return value, offset
    raise CodecError(f"holds {_show(value)} where {wanted!r} is expected", name)


def _decode_float(text: str) -> float:
    """Read a float's 16 hex digits (or the ``float.hex`` text of older writers).

    Raises ``ValueError`` or ``OverflowError`` for other text.
    """
    if len(text) == 2 * _FLOAT.size and "x" not in text:
        value: float = _FLOAT.unpack(bytes.fromhex(text))[0]
        return value
    return float.fromhex(text)


def _read_float(name: str, text: object) -> float:
    """Return the float of field ``name``; raise CodecError if it is not one."""
    if isinstance(text, str) and len(text) <= _MAX_FLOAT_TEXT:
        try:
            return _decode_float(text)
        except (ValueError, OverflowError):
            pass
    raise CodecError(
        f"holds {_show(text)}; a float as 16 hex digits (or float.hex text) "
        "was expected",
        name,
    )


def _decode_array(
    name: str, spec: dict[str, Any], body: memoryview, offset: int, size: int
) -> tuple[np.ndarray, int]:
    dtype = _array_dtype(name, spec["d"])
    shape = _array_shape(name, spec["s"], dtype.itemsize, size)
    nbytes = spec["n"]
    expected = math.prod(shape) * dtype.itemsize  # exact: Python ints
    if isinstance(nbytes, bool) or nbytes != expected:
        raise CodecError(
            f"byte count {_show(nbytes)} does not match shape {shape} of {dtype} "
            f"({expected} bytes)",
            name,
        )
    if offset + expected > len(body):
        raise CodecError(
            f"byte count {expected} is more than the {len(body) - offset} bytes "
            "left in the body",
            name,
        )
    if dtype.itemsize == 0:  # e.g. "<U0": empty strings carry no bytes
        return np.zeros(shape, dtype=dtype), offset
    buffer = body[offset : offset + expected]
    _check_items(name, dtype, buffer)
    # A read-only view of the message (no copy): received arrays are immutable.
    flat = np.frombuffer(buffer, dtype=dtype)
    return flat.reshape(shape), offset + expected


def _array_dtype(name: str, text: object) -> np.dtype[Any]:
    """Return the dtype named by ``text``, written as :func:`encode` writes it."""
    if not isinstance(text, str) or not _DTYPE.fullmatch(text):
        raise CodecError(
            f"dtype {_show(text)} cannot be sent: a dtype is a byte order, a kind "
            f"in {_ARRAY_KINDS!r} and an item size (e.g. '<f8')",
            name,
        )
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError, OverflowError, MemoryError):
        raise CodecError(f"dtype {_show(text)} is not a numpy dtype", name) from None
    if dtype.str != text:
        raise CodecError(
            f"dtype {text!r} is not written as encode writes it ({dtype.str!r})", name
        )
    return dtype


def _array_shape(name: str, shape: object, itemsize: int, size: int) -> list[int]:
    """Check a received shape (:func:`_shape_problem`); return it."""
    if (
        not isinstance(shape, list)
        or len(shape) > _MAX_DIMS
        or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape)
    ):
        raise CodecError(
            f"shape must be a list of ints >= 0 (at most {_MAX_DIMS}), got "
            f"{_show(shape)}",
            name,
        )
    if any(d < 0 for d in shape):
        raise CodecError(f"shape must be a list of ints >= 0, got {_show(shape)}", name)
    problem = _shape_problem(shape, itemsize, size)
    if problem is not None:
        raise CodecError(problem, name)
    return shape


def _shape_problem(shape: Sequence[int], itemsize: int, size: int) -> str | None:
    """Say what is wrong with a shape of ints >= 0 in a ``size``-byte message.

    The one home of the shape rules of both directions: at most 32 dimensions;
    no more elements than the message has bytes; and, for an empty array, a
    shape numpy can build — its non-zero dimensions are not bounded by the
    message (it holds no element), only by numpy's largest array. None if
    nothing is.
    """
    if len(shape) > _MAX_DIMS:
        return f"its shape has {len(shape)} dimensions; at most {_MAX_DIMS} travel"
    elements = math.prod(shape)  # exact: Python ints
    if elements > size:
        return (
            f"shape {_show(shape)} has more elements than a {size}-byte message "
            "can hold"
        )
    extent = math.prod(d for d in shape if d) * max(itemsize, 1)
    if elements == 0 and extent > _MAX_EXTENT:
        return (
            f"empty shape {_show(shape)} is larger than numpy can build "
            "(its non-zero dimensions times the item size exceed 2**63 - 1 bytes)"
        )
    return None


def _check_items(name: str, dtype: np.dtype[Any], buffer: memoryview) -> None:
    """Refuse bools other than 0/1 and characters beyond Unicode (a cheap scan)."""
    if dtype.kind == "b" and len(buffer) and np.frombuffer(buffer, np.uint8).max() > 1:
        raise CodecError("holds a bool byte other than 0 or 1", name)
    if dtype.kind == "U" and len(buffer):
        codes = np.frombuffer(buffer, dtype.str[0] + "u4")
        if codes.max() > sys.maxunicode:
            raise CodecError("holds a character beyond U+10FFFF", name)
