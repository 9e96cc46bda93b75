"""The site worker: one long-lived process that serves a SuperNode's messages.

:func:`launch` starts the worker, waits until it listens, then replaces itself
with the SuperNode's command, adding the worker's socket to the node config
(``site-worker``). The worker (:func:`serve_forever`) listens on a Unix socket
in a folder only the site's user may open (``mkdtemp``: mode 0700), loads what
serving needs once (``warm_up``), then answers one connection at a time, as the
SuperNode hands over one message at a time. It ends when the SuperNode does: it
holds the read end of a pipe whose write end the SuperNode process holds, and
the system closes that end when the SuperNode exits, however it exits.

The worker changes where a message is served, not what the reply is: the
ClientApp sends it the same request, configs and kept state it would serve
itself (docs/flower.md).

**Decision (one connection cannot stop it):** a connection's frame must arrive
whole within :data:`FRAME_SECONDS` (and the answer be taken within as long), so
a stalled peer holds the worker that long at most, then is closed; a frame that
breaks the format or its bounds (:class:`~fedtrees.federation.flower._wire.FrameError`)
is answered with that error; and nothing one connection does ends the worker:
it logs what went wrong and accepts the next connection.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from logging import ERROR, WARNING
from pathlib import Path
from typing import Any, Final, NoReturn

from flwr.common.logger import log

from fedtrees.exceptions import ValidationError
from fedtrees.federation.flower._config import node_config_text
from fedtrees.federation.flower._wire import (
    NODE_CONFIG_KEY,
    FrameError,
    SiteAnswer,
    SiteMessage,
    read_frame,
    write_frame,
)

__all__ = ["launch", "serve_forever", "with_worker_socket"]

SOCKET_NAME: Final = "site.sock"
READY_TIMEOUT: Final = 60.0  # seconds to wait for the worker to listen
FRAME_SECONDS: Final = 30.0
"""Seconds a connection has to send its whole frame, and to take the answer."""


def with_worker_socket(command: Sequence[str], path: str) -> list[str]:
    """Return the ``flower-supernode`` command with ``site-worker`` in its node config.

    The node config must be ``key=value`` pairs (``--node-config VALUE`` or
    ``--node-config=VALUE``; the last one counts, as for Flower).

    Raises
    ------
    ValidationError
        A node config given as a TOML file, or one that names a ``site-worker``
        already: the worker cannot add its socket.

    Examples
    --------
    >>> with_worker_socket(["flower-supernode", "--node-config", 'a="1"'], "/s")
    ['flower-supernode', '--node-config', 'a="1" site-worker="/s"']
    """
    out = list(command)
    entry = node_config_text({NODE_CONFIG_KEY: path})
    given = [
        k for k, arg in enumerate(out)
        if arg == "--node-config" or arg.startswith("--node-config=")
    ]  # fmt: skip
    if not given:
        return [*out, "--node-config", entry]
    at = given[-1] + 1 if out[given[-1]] == "--node-config" else given[-1]
    if at >= len(out):
        raise ValidationError("--node-config needs a value ('key=\"value\" ...').")
    value = out[at].removeprefix("--node-config=")
    if value.strip().endswith(".toml") or f"{NODE_CONFIG_KEY}=" in value:
        raise ValidationError(
            f"The site worker adds its socket to --node-config key=value pairs; got "
            f"{value!r} (a TOML file, or a {NODE_CONFIG_KEY} of its own). Give the "
            "node config as pairs, or start the SuperNode without a site worker."
        )
    out[at] = f"{out[at]} {entry}"
    return out


def launch(supernode: Sequence[str], worker: Sequence[str]) -> NoReturn:
    """Start the site worker (``worker`` + socket and pipe arguments), become the node.

    ``worker`` is the command that runs :func:`serve_forever` (its last three
    arguments: the socket path, the parent pipe's and the ready pipe's file
    descriptors). Without a worker listening within :data:`READY_TIMEOUT` s the
    worker is stopped, its folder removed, and the SuperNode starts without one:
    its ClientApp serves every message itself.

    Raises
    ------
    ValidationError
        The SuperNode's node config cannot take the worker's socket
        (:func:`with_worker_socket`); nothing is started.
    """
    folder = tempfile.mkdtemp(prefix="fedtrees-site-")
    path = os.path.join(folder, SOCKET_NAME)
    try:
        command = with_worker_socket(supernode, path)
    except ValidationError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    parent_r, parent_w = os.pipe()
    ready_r, ready_w = os.pipe()
    process = subprocess.Popen(
        [*worker, path, str(parent_r), str(ready_w)], pass_fds=(parent_r, ready_w)
    )
    os.close(parent_r)
    os.close(ready_w)
    if not _ready(ready_r):
        process.kill()
        code = process.wait()
        shutil.rmtree(folder, ignore_errors=True)
        log(
            WARNING,
            "fedtrees: the site worker did not start (exit code %s); the "
            "ClientApp serves every message itself",
            code,
        )
        command = list(supernode)
    os.close(ready_r)
    os.set_inheritable(parent_w, True)  # held by the SuperNode: the worker's lifeline
    os.execvp(command[0], command)


def _ready(fd: int) -> bool:
    """Whether the worker said it listens (one byte) before the timeout or its end."""
    readable, _, _ = select.select([fd], [], [], READY_TIMEOUT)
    return bool(readable) and os.read(fd, 1) == b"1"


def serve_forever(
    path: str,
    parent: int,
    ready: int,
    serve: Callable[[SiteMessage], SiteAnswer],
    warm_up: Callable[[], None] = lambda: None,
    frame_seconds: float = FRAME_SECONDS,
) -> None:
    """Listen at ``path``; answer each connection with ``serve``; end with the parent.

    Says it listens by writing one byte to the ``ready`` pipe, then runs
    ``warm_up`` (connections wait in the backlog meanwhile). An exception in
    ``serve`` goes back to the ClientApp as an error, which fails that message
    as it would have failed in the ClientApp; the worker serves on. So it does
    after a malformed frame (answered with a :class:`FrameError`) and after a
    connection that does not send its frame within ``frame_seconds`` (closed).
    SIGTERM (the node's process group stopped) ends it, cleaning up, when it
    runs in the main thread.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit)
    folder = Path(path).parent
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(path)
            listener.listen(8)
            os.write(ready, b"1")
            os.close(ready)
            warm_up()
            while True:
                readable, _, _ = select.select([listener.fileno(), parent], [], [])
                if parent in readable:  # the SuperNode is gone (EOF)
                    return
                connection, _ = listener.accept()
                with connection:
                    _survive(connection, serve, frame_seconds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _survive(
    connection: socket.socket,
    serve: Callable[[SiteMessage], SiteAnswer],
    seconds: float,
) -> None:
    """Answer one connection; whatever it does, the worker goes on to the next."""
    try:
        connection.settimeout(seconds)  # also bounds sending the answer
        _answer(connection, serve, seconds)
    except Exception as exc:  # one connection's failure is logged, never fatal
        log(
            ERROR,
            "fedtrees site worker: a connection failed (%s: %s); serving the next",
            type(exc).__name__,
            exc,
        )


def _answer(
    connection: socket.socket,
    serve: Callable[[SiteMessage], SiteAnswer],
    seconds: float,
) -> None:
    """Serve one connection's message; a broken connection is the ClientApp's loss."""
    try:
        message = SiteMessage.from_frame(*read_frame(connection, timeout=seconds))
    except FrameError as exc:  # answered, saying why, then closed
        _reply(connection, {"error": f"FrameError: malformed frame: {exc}"}, [])
        return
    except OSError as exc:  # closed mid-frame, or stalled: closed
        log(WARNING, "fedtrees site worker: a connection dropped (%s)", exc)
        return
    reply: tuple[dict[str, Any], list[bytes]]
    try:
        reply = serve(message).to_frame()
    except Exception as exc:  # reported to the ClientApp, which fails the message
        reply = {"error": f"{type(exc).__name__}: {exc}"}, []
    _reply(connection, *reply)


def _reply(
    connection: socket.socket, header: dict[str, Any], blobs: list[bytes]
) -> None:
    """Send the answer; a ClientApp that went away (or stalls) loses it."""
    try:
        try:
            write_frame(connection, header, blobs)
        except FrameError as exc:  # an answer too large for a frame: say so instead
            write_frame(connection, {"error": f"FrameError: {exc}"}, [])
    except OSError as exc:
        log(WARNING, "fedtrees site worker: the answer was not taken (%s)", exc)


def _exit(signum: int, frame: object) -> NoReturn:
    raise SystemExit(0)  # runs serve_forever's clean-up
