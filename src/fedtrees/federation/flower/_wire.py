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
strings the header lists, in order. **Decision (frames are bounded):** a header
of at most :data:`MAX_FRAME_HEADER_BYTES`, at most :data:`MAX_FRAME_BLOBS` byte
strings, and at most :data:`MAX_FRAME_BYTES` in all, checked before anything is
allocated; a reader may give a deadline for the whole frame. A frame that breaks
them, or whose header is not the fields of a message, is a :class:`FrameError`
naming what is wrong; the worker answers it with that error and serves on
(:mod:`fedtrees.federation.flower._worker`).
"""

from __future__ import annotations

import io
import json
import socket
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from flwr.app import Array, ArrayRecord, RecordDict

__all__ = [
    "MAX_FRAME_BLOBS",
    "MAX_FRAME_BYTES",
    "MAX_FRAME_HEADER_BYTES",
    "NODE_CONFIG_KEY",
    "RECORD",
    "FrameError",
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
MAX_FRAME_HEADER_BYTES: Final = 16 * 2**20
"""The longest JSON header of a frame (the node and run configs, the state's keys)."""
MAX_FRAME_BLOBS: Final = 4096
"""The most byte strings a frame carries (the request or reply, and kept state)."""
MAX_FRAME_BYTES: Final = 2**31
"""The most bytes a frame's byte strings hold in all (2 GiB)."""
_SCALARS: Final = (bool, int, float, str)


class FrameError(ValueError):
    """A frame between a ClientApp and its site worker that breaks the format."""


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
        """Rebuild a message from a frame (the inverse of :meth:`to_frame`).

        Raises
        ------
        FrameError
            Naming the header field that is missing or of the wrong type, or
            saying the byte strings are not the request and the state.
        """
        keys = _keys(header, "site message")
        run_id = header.get("run_id")
        if isinstance(run_id, bool) or not isinstance(run_id, int):
            raise FrameError(f"a site message's run_id must be an int; got {run_id!r}")
        if len(blobs) != len(keys) + 1:
            raise FrameError("a site message frame holds its request and its state")
        return cls(
            blobs[0],
            _config(header, "node_config"),
            _config(header, "run_config"),
            run_id,
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
        keys = _keys(header, "site answer")
        laps = header.get("laps")
        if not isinstance(laps, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool)
            for v in laps.values()
        ):
            raise FrameError("a site answer's laps must map steps to seconds")
        if len(blobs) != len(keys) + 1:
            raise FrameError("a site answer frame holds its reply and its state")
        return cls(
            blobs[0],
            dict(zip(keys, blobs[1:], strict=True)),
            {str(k): float(v) for k, v in laps.items()},
        )


def _keys(header: Mapping[str, Any], what: str) -> list[str]:
    keys = header.get("state")
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise FrameError(f"a {what}'s state must be a list of payload keys")
    return keys


def _config(header: Mapping[str, Any], name: str) -> dict[str, Scalar]:
    config = header.get(name)
    if not isinstance(config, dict) or not all(
        isinstance(v, _SCALARS) for v in config.values()
    ):
        raise FrameError(
            f"a site message's {name} must map names to bool, int, float or str"
        )
    return config


def write_frame(
    sock: socket.socket, header: dict[str, Any], blobs: list[bytes]
) -> None:
    """Send one frame: the header (with the blobs' lengths), then the blobs.

    Raises
    ------
    FrameError
        Before sending anything, if the frame would break a bound.
    """
    text = json.dumps({**header, "blobs": [len(b) for b in blobs]}).encode()
    _check_bounds(len(text), [len(b) for b in blobs])
    sock.sendall(_LENGTH.pack(len(text)) + text)
    for blob in blobs:
        sock.sendall(blob)


def read_frame(
    sock: socket.socket, *, timeout: float | None = None
) -> tuple[dict[str, Any], list[bytes]]:
    """Receive one frame, within ``timeout`` seconds in all (None: no deadline).

    Raises
    ------
    FrameError
        The frame breaks a bound or its header is not a JSON object listing
        its byte strings' lengths (checked before they are read).
    ConnectionError
        The peer closed the connection mid-frame.
    TimeoutError
        The frame did not arrive whole within ``timeout`` seconds.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    (size,) = _LENGTH.unpack(_read(sock, _LENGTH.size, deadline))
    _check_bounds(size, [])
    header = _header(_read(sock, size, deadline))
    lengths = header.pop("blobs")
    _check_bounds(size, lengths)
    return header, [_read(sock, n, deadline) for n in lengths]


def _header(text: bytes) -> dict[str, Any]:
    try:
        header = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise FrameError(f"its header is not JSON ({type(exc).__name__})") from exc
    if not isinstance(header, dict):
        raise FrameError(f"its header is a JSON {type(header).__name__}, not an object")
    lengths = header.get("blobs")
    if not isinstance(lengths, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in lengths
    ):
        raise FrameError("its header's 'blobs' is not a list of byte counts")
    return header


def _check_bounds(header_bytes: int, lengths: list[int]) -> None:
    if header_bytes > MAX_FRAME_HEADER_BYTES:
        raise FrameError(
            f"its header is {header_bytes} bytes long, more than "
            f"{MAX_FRAME_HEADER_BYTES} (MAX_FRAME_HEADER_BYTES)"
        )
    if len(lengths) > MAX_FRAME_BLOBS:
        raise FrameError(
            f"it carries {len(lengths)} byte strings, more than {MAX_FRAME_BLOBS} "
            "(MAX_FRAME_BLOBS)"
        )
    if sum(lengths) > MAX_FRAME_BYTES:
        raise FrameError(
            f"its byte strings hold {sum(lengths)} bytes, more than "
            f"{MAX_FRAME_BYTES} (MAX_FRAME_BYTES)"
        )


def _read(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    chunks, left = [], n
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the frame did not arrive in time")
            sock.settimeout(remaining)
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
        No worker listens there, it closed the connection before answering,
        the message is too large for a frame, or the answer is malformed: the
        caller serves the message itself (its state is untouched).
    """
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(path)
            write_frame(sock, *message.to_frame())
            header, blobs = read_frame(sock)
        return SiteAnswer.from_frame(header, blobs)
    except (OSError, FrameError) as exc:  # ConnectionError included
        raise WorkerUnavailable(f"site worker at {path}: {exc}") from exc
