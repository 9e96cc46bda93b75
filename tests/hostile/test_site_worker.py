"""The site worker's socket, driven directly, round four (issue 37).

Before: a frame whose header was a JSON list, lacked its ``blobs``, listed a
non-number, or nested too deep raised out of the worker's loop and ended it
(every later message then paid the ClientApp's imports); a header length of
4 GiB was read until the peer gave up; and a connection that sent half a frame
and stalled held the worker for ever. Now frames are bounded before anything is
allocated, a malformed one is answered with a ``FrameError`` naming what is
wrong, a stalled one is closed after ``frame_seconds``, and the worker serves
the next connection every time.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import socket
import struct
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from fedtrees.federation.flower._wire import (
    MAX_FRAME_BLOBS,
    MAX_FRAME_BYTES,
    MAX_FRAME_HEADER_BYTES,
    SiteAnswer,
    SiteMessage,
    read_frame,
    write_frame,
)
from fedtrees.federation.flower._worker import serve_forever

HANG: float = 60.0
"""Seconds after which a test's own socket gives up: it only catches a hang."""


def _serve(message: SiteMessage) -> SiteAnswer:
    return SiteAnswer(message.request[::-1], {"seen": b"1"})


@pytest.fixture
def worker() -> Iterator[str]:
    """A worker on a thread whose frames must arrive within 1 s; its socket path."""
    folder = Path(tempfile.mkdtemp(prefix="fedtrees-w-"))  # short: AF_UNIX paths
    path = str(folder / "site.sock")
    parent_r, parent_w = os.pipe()
    ready_r, ready_w = os.pipe()
    thread = threading.Thread(
        target=serve_forever,
        args=(path, parent_r, ready_w, _serve),
        kwargs={"frame_seconds": 1.0},
        daemon=True,
    )
    thread.start()
    assert select.select([ready_r], [], [], HANG)[0], "the worker never listened"
    assert os.read(ready_r, 1) == b"1"
    os.close(ready_r)
    yield path
    os.close(parent_w)  # the SuperNode exits: the worker ends
    thread.join(HANG)
    assert not thread.is_alive()
    shutil.rmtree(folder, ignore_errors=True)


def _connect(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(HANG)
    sock.connect(path)
    return sock


def _good_request_is_served(path: str) -> None:
    """The worker is alive and serving: a well-formed message gets its answer."""
    with _connect(path) as sock:
        write_frame(sock, *SiteMessage(b"abc", {"client-id": "a"}, {}, 1).to_frame())
        header, blobs = read_frame(sock)
    assert SiteAnswer.from_frame(header, blobs) == SiteAnswer(b"cba", {"seen": b"1"})


def _raw(header: bytes, blobs: bytes = b"", length: int | None = None) -> bytes:
    size = len(header) if length is None else length
    return struct.pack(">I", size) + header + blobs


def _frame(header: object) -> bytes:
    return _raw(json.dumps(header).encode())


MESSAGE = {"node_config": {}, "run_config": {}, "run_id": 1, "state": []}
BAD_FRAMES = {
    "header-4-GiB": (
        _raw(b"", length=2**32 - 1),
        rf"its header is 4294967295 bytes long, more than {MAX_FRAME_HEADER_BYTES}",
    ),
    "header-not-json": (_raw(b"{not json"), r"its header is not JSON"),
    "header-a-list": (_frame([1, 2]), r"its header is a JSON list, not an object"),
    "header-too-deep": (_raw(b"[" * 100_000), r"its header is not JSON"),
    "no-blobs": (_frame({"state": []}), r"'blobs' is not a list of byte counts"),
    "blob-negative": (_frame({"blobs": [-1]}), r"'blobs' is not a list of byte"),
    "blob-text": (_frame({"blobs": ["x"]}), r"'blobs' is not a list of byte counts"),
    "blob-null": (_frame({"blobs": [None]}), r"'blobs' is not a list of byte counts"),
    "too-many-blobs": (
        _frame({"blobs": [0] * (MAX_FRAME_BLOBS + 1)}),
        rf"carries {MAX_FRAME_BLOBS + 1} byte strings, more than {MAX_FRAME_BLOBS}",
    ),
    "blobs-of-4-GiB": (
        _frame({"blobs": [2**32]}),  # refused before a byte of it is read
        rf"byte strings hold 4294967296 bytes, more than {MAX_FRAME_BYTES}",
    ),
    "state-not-a-list": (
        _raw(json.dumps({**MESSAGE, "state": "x", "blobs": [1]}).encode(), b"r"),
        r"a site message's state must be a list of payload keys",
    ),
    "run-id-text": (
        _raw(json.dumps({**MESSAGE, "run_id": "1", "blobs": [1]}).encode(), b"r"),
        r"a site message's run_id must be an int; got '1'",
    ),
    "node-config-a-list": (
        _raw(json.dumps({**MESSAGE, "node_config": [], "blobs": [1]}).encode(), b"r"),
        r"a site message's node_config must map names to bool, int, float or str",
    ),
    "request-without-blob": (
        _frame({**MESSAGE, "blobs": []}),
        r"a site message frame holds its request and its state",
    ),
}


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("name", list(BAD_FRAMES))
def test_a_malformed_frame_is_answered_and_the_worker_serves_on(
    worker: str, name: str
) -> None:
    frame, message = BAD_FRAMES[name]
    with _connect(worker) as sock:
        sock.sendall(frame)
        header, blobs = read_frame(sock)
    assert blobs == []
    assert header["error"].startswith("FrameError: malformed frame: ")
    assert re.search(message, header["error"]), header["error"]
    _good_request_is_served(worker)


@pytest.mark.hostile("correct")
def test_a_stalled_connection_is_closed_and_the_next_one_served(worker: str) -> None:
    """Half a frame, then silence: closed after frame_seconds, never for ever."""
    with _connect(worker) as stalled:
        stalled.sendall(_frame({**MESSAGE, "blobs": [10]}) + b"only")
        _good_request_is_served(worker)  # waits in the backlog, then is served
        assert stalled.recv(1) == b""  # the worker closed the stalled connection
    with _connect(worker) as silent:  # connected, sends nothing at all
        _good_request_is_served(worker)
        assert silent.recv(1) == b""


@pytest.mark.hostile("correct")
def test_a_peer_that_closes_mid_frame_costs_nothing(worker: str) -> None:
    with _connect(worker) as sock:
        sock.sendall(_frame({**MESSAGE, "blobs": [100]}) + b"partial")
    _good_request_is_served(worker)
    with _connect(worker) as sock:
        sock.sendall(b"\x00\x00")  # not even a header length
    _good_request_is_served(worker)
