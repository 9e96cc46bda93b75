"""Bytes between processes: in a Flower message, and to the site's worker.

A fedtrees message (bytes from the codec) travels between the ServerApp and a
ClientApp as one ``uint8`` array of a Flower ``RecordDict`` (:func:`pack`,
:func:`unpack`); content that is not such an array is :class:`MalformedContent`,
whatever it holds (the transport makes it that client's failure).

Flower starts a ClientApp process for every message (docs/flower.md). **Decision:**
a SuperNode started by ``fedtrees flower supernode`` has a *site worker* beside it:
one long-lived process of the site that keeps fedtrees, its compiled kernels and
the job's handlers loaded, and serves every message the ClientApp hands it
through a Unix socket in a folder only the site's user may open. The ClientApp
process then imports Flower and this module, nothing more, and a message costs
milliseconds of our work instead of a second of imports and kernel loads. What
crosses the socket is what the ClientApp holds: the request's bytes, the node
and run configs, the run id and the client state kept in ``context.state``; what
comes back is the reply's bytes, the state to keep and where the seconds went.
Without a worker (or when it is gone) the ClientApp serves the message itself,
with the same code and so the same reply.

A frame is a 4-byte big-endian header length, a JSON header, then the byte
strings the header lists, in order.
"""

from __future__ import annotations

import io
import json
import socket
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from flwr.app import Array, ArrayRecord, RecordDict

__all__ = [
    "NODE_CONFIG_KEY",
    "RECORD",
    "MalformedContent",
    "SiteAnswer",
    "SiteMessage",
    "WorkerUnavailable",
    "ask_worker",
    "pack",
    "read_frame",
    "unpack",
    "write_frame",
]

RECORD: Final = "fedtrees"
NODE_CONFIG_KEY: Final = "site-worker"
"""The node config entry that names the site worker's socket."""
_LENGTH: Final = struct.Struct(">I")
Scalar = bool | int | float | str


def pack(data: bytes) -> RecordDict:
    """Wrap encoded fedtrees bytes in a Flower RecordDict."""
    return RecordDict(
        {RECORD: ArrayRecord({"data": Array(np.frombuffer(data, dtype=np.uint8))})}
    )


class MalformedContent(ValueError):
    """Flower content that is not the one fedtrees array :func:`pack` makes."""


def unpack(content: RecordDict) -> bytes:
    """Return the encoded fedtrees bytes of a Flower message.

    The ``.npy`` bytes of the array :func:`pack` wrote are read without building
    an array (its header must say 1-D ``uint8``, and its data be exactly as long
    as the header says), so a malformed array costs no allocation and no cast.

    Raises
    ------
    MalformedContent
        Naming what is wrong — no fedtrees array, another serialization, a
        header that does not parse, another dtype or shape, too few or too many
        bytes — whatever the content holds; nothing else leaves this function.
    """
    try:
        records = content.array_records
        record = records.get(RECORD)
        array = None if record is None else record.get("data")
        if array is None:
            raise MalformedContent(
                f"it holds no {RECORD!r} array record with a 'data' array"
            )
        if array.stype != _NUMPY or not isinstance(array.data, bytes):
            raise MalformedContent(
                f"its array is serialized as {array.stype!r}, not {_NUMPY!r}"
            )
        return _npy_bytes(array.data)
    except MalformedContent:
        raise
    except Exception as exc:  # a content object no fedtrees peer sends
        raise MalformedContent(
            f"it cannot be read ({type(exc).__name__}: {exc})"
        ) from exc


_NUMPY: Final = "numpy.ndarray"
_HEADER_READERS: Final = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def _npy_bytes(data: bytes) -> bytes:
    """Return the data of the ``.npy`` bytes of a 1-D ``uint8`` array."""
    stream = io.BytesIO(data)
    try:
        reader = _HEADER_READERS.get(np.lib.format.read_magic(stream))
        if reader is None:
            raise ValueError("an .npy version fedtrees does not read")
        shape, _, dtype = reader(stream)
    except (ValueError, TypeError, SyntaxError, OverflowError) as exc:
        raise MalformedContent(f"its array header does not parse ({exc})") from exc
    if dtype != np.dtype(np.uint8) or len(shape) != 1:
        raise MalformedContent(
            f"its array is {dtype} of shape {shape}; 1-D uint8 bytes expected"
        )
    body = data[stream.tell() :]
    if len(body) != shape[0]:
        raise MalformedContent(
            f"its array header says {shape[0]} bytes, but {len(body)} follow"
        )
    return body


@dataclass(frozen=True)
class SiteMessage:
    """One request as a site serves it, with what its ClientApp knows."""

    request: bytes
    node_config: Mapping[str, Scalar]
    run_config: Mapping[str, Scalar]
    run_id: int
    state: Mapping[str, bytes] = field(default_factory=dict)
    """The client state kept in ``context.state``: payload key -> encoded payload."""

    def to_frame(self) -> tuple[dict[str, Any], list[bytes]]:
        """Return the JSON header and the byte strings of a frame."""
        keys = list(self.state)
        header = {
            "node_config": dict(self.node_config),
            "run_config": dict(self.run_config),
            "run_id": self.run_id,
            "state": keys,
        }
        return header, [self.request, *(self.state[k] for k in keys)]

    @classmethod
    def from_frame(cls, header: dict[str, Any], blobs: list[bytes]) -> SiteMessage:
        """Rebuild a message from a frame (the inverse of :meth:`to_frame`)."""
        keys = [str(k) for k in header["state"]]
        if len(blobs) != len(keys) + 1:
            raise ValueError("a site message frame holds its request and its state")
        return cls(
            blobs[0],
            dict(header["node_config"]),
            dict(header["run_config"]),
            int(header["run_id"]),
            dict(zip(keys, blobs[1:], strict=True)),
        )


@dataclass(frozen=True)
class SiteAnswer:
    """The reply to a :class:`SiteMessage`, the state to keep, the seconds taken."""

    reply: bytes
    state: dict[str, bytes] = field(default_factory=dict)
    laps: dict[str, float] = field(default_factory=dict)
    """Seconds of each step (handlers, data, serve), for the site's log."""

    def to_frame(self) -> tuple[dict[str, Any], list[bytes]]:
        """Return the JSON header and the byte strings of a frame."""
        keys = list(self.state)
        header = {"state": keys, "laps": self.laps}
        return header, [self.reply, *(self.state[k] for k in keys)]

    @classmethod
    def from_frame(cls, header: dict[str, Any], blobs: list[bytes]) -> SiteAnswer:
        """Rebuild an answer from a frame (the inverse of :meth:`to_frame`)."""
        if "error" in header:
            raise RuntimeError(f"the site worker failed: {header['error']}")
        keys = [str(k) for k in header["state"]]
        if len(blobs) != len(keys) + 1:
            raise ValueError("a site answer frame holds its reply and its state")
        laps = {str(k): float(v) for k, v in header["laps"].items()}
        return cls(blobs[0], dict(zip(keys, blobs[1:], strict=True)), laps)


def write_frame(
    sock: socket.socket, header: dict[str, Any], blobs: list[bytes]
) -> None:
    """Send one frame: the header (with the blobs' lengths), then the blobs."""
    text = json.dumps({**header, "blobs": [len(b) for b in blobs]}).encode()
    sock.sendall(_LENGTH.pack(len(text)) + text)
    for blob in blobs:
        sock.sendall(blob)


def read_frame(sock: socket.socket) -> tuple[dict[str, Any], list[bytes]]:
    """Receive one frame; ``ConnectionError`` if the peer closes first."""
    (size,) = _LENGTH.unpack(_read(sock, _LENGTH.size))
    header = json.loads(_read(sock, size))
    blobs = [_read(sock, int(n)) for n in header.pop("blobs")]
    return header, blobs


def _read(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the peer closed the connection mid-frame")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class WorkerUnavailable(Exception):
    """The site worker cannot be reached, or went away before it answered."""


def ask_worker(path: str, message: SiteMessage) -> SiteAnswer:
    """Have the site worker listening at ``path`` serve ``message``.

    Raises
    ------
    WorkerUnavailable
        No worker listens there, or it closed the connection before answering:
        the caller serves the message itself (its state is untouched).
    """
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(path)
            write_frame(sock, *message.to_frame())
            header, blobs = read_frame(sock)
    except OSError as exc:  # ConnectionError included
        raise WorkerUnavailable(f"site worker at {path}: {exc}") from exc
    return SiteAnswer.from_frame(header, blobs)
