"""The site worker: its socket's frames, serving, falling back, ending with its node."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from flwr.app import Context, RecordDict

from fedtrees.algorithms.toy import ToyCountsRequest
from fedtrees.datasets import load_site_data, save_client_file
from fedtrees.federation import Envelope, decode, encode
from fedtrees.federation.flower._clientapp import STATE_RECORD, make_client_app
from fedtrees.federation.flower._site import serve_site
from fedtrees.federation.flower._wire import (
    SiteAnswer,
    SiteMessage,
    WorkerUnavailable,
    ask_worker,
    pack,
    unpack,
)
from fedtrees.federation.flower._worker import serve_forever
from tests.federation.flower.test_apps import _message

Serve = Callable[[SiteMessage], SiteAnswer]


def test_frames_carry_messages_and_answers_unchanged() -> None:
    message = SiteMessage(
        b"\x00request\xff",
        {"client-id": "Cleveland", "port": 9, "ok": True, "w": 0.5},
        {"job": "fedforest", "params": "{}"},
        7,
        {"kept": b"\x01\x02", "empty": b""},
    )
    assert SiteMessage.from_frame(*message.to_frame()) == message
    answer = SiteAnswer(b"reply", {"kept": b"\x03"}, {"serve": 0.25})
    assert SiteAnswer.from_frame(*answer.to_frame()) == answer
    assert unpack(pack(b"\x00\x01fedtrees")) == b"\x00\x01fedtrees"


def test_a_frame_with_missing_parts_is_refused() -> None:
    header, blobs = SiteMessage(b"r", {}, {}, 1, {"a": b"1"}).to_frame()
    with pytest.raises(ValueError, match="holds its request and its state"):
        SiteMessage.from_frame(header, blobs[:1])
    with pytest.raises(RuntimeError, match="the site worker failed: KeyError: 'x'"):
        SiteAnswer.from_frame({"error": "KeyError: 'x'"}, [])


@pytest.fixture
def socket_folder() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="fedtrees-test-"))  # short: AF_UNIX paths
    yield folder
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def _start(folder: Path, serve: Serve) -> tuple[str, int, threading.Thread]:
    """A worker on a thread; returns its socket, the parent pipe's write end, it."""
    path = str(folder / "site.sock")
    parent_r, parent_w = os.pipe()
    ready_r, ready_w = os.pipe()
    thread = threading.Thread(
        target=serve_forever, args=(path, parent_r, ready_w, serve), daemon=True
    )
    thread.start()
    assert os.read(ready_r, 1) == b"1"  # it listens
    os.close(ready_r)
    return path, parent_w, thread


def test_the_worker_serves_until_its_parent_is_gone(socket_folder: Path) -> None:
    seen: list[SiteMessage] = []

    def serve(message: SiteMessage) -> SiteAnswer:
        seen.append(message)
        if message.request == b"boom":
            raise KeyError("boom")
        return SiteAnswer(message.request[::-1], {"n": bytes([len(seen)])})

    path, parent_w, thread = _start(socket_folder, serve)
    for k in range(3):
        answer = ask_worker(path, SiteMessage(b"abc", {"k": k}, {}, 1))
        assert answer == SiteAnswer(b"cba", {"n": bytes([k + 1])})
    with pytest.raises(RuntimeError, match="site worker failed: KeyError: 'boom'"):
        ask_worker(path, SiteMessage(b"boom", {}, {}, 1))
    assert ask_worker(path, SiteMessage(b"xy", {}, {}, 1)).reply == b"yx"  # serves on
    os.close(parent_w)  # the SuperNode exits
    thread.join(30)
    assert not thread.is_alive()
    assert not socket_folder.exists()  # its folder is removed
    with pytest.raises(WorkerUnavailable, match="site worker at"):
        ask_worker(path, SiteMessage(b"abc", {}, {}, 1))


def test_the_client_app_gives_the_same_reply_with_or_without_a_worker(
    socket_folder: Path, tmp_path: Path
) -> None:
    site = save_client_file(
        tmp_path / "site.npz",
        pd.DataFrame({"age": [40.0, 50.0, 60.0]}),
        ["a", "b", "b"],
    )
    served_by_worker: list[int] = []

    def serve(message: SiteMessage) -> SiteAnswer:
        served_by_worker.append(message.run_id)
        return serve_site(message, load_site_data, lambda job: None)

    path, parent_w, thread = _start(socket_folder, serve)
    app = make_client_app(load_site_data, site_worker=True)
    request = ToyCountsRequest(np.array(["a", "b"]))
    data = encode(Envelope("request", 1, "Cleveland", request.kind, request))
    node = {"client-id": "Cleveland", "data-path": str(site), "cache-dir": ""}
    replies = {}
    for where, config in [
        ("here", node),
        ("worker", {**node, "site-worker": path}),
        ("fallback", {**node, "site-worker": str(socket_folder / "gone.sock")}),
    ]:
        context = Context(
            run_id=1, node_id=2, node_config=config, state=RecordDict(), run_config={}
        )  # type: ignore[arg-type]
        reply = app(_message(pack(data), "query.fedtrees"), context)
        replies[where] = (unpack(reply.content), dict(context.state[STATE_RECORD]))
    custom = make_client_app(load_site_data)  # no site worker: always served here
    context = Context(
        run_id=1,
        node_id=2,
        node_config={**node, "site-worker": path},
        state=RecordDict(),
        run_config={},
    )  # type: ignore[arg-type]
    assert (
        unpack(custom(_message(pack(data), "query.fedtrees"), context).content)
        == (replies["here"][0])
    )
    assert served_by_worker == [1]  # only the app that asks a worker, and a live one
    assert replies["here"] == replies["worker"] == replies["fallback"]
    assert decode(replies["worker"][0]).payload.counts.tolist() == [1.0, 2.0]  # type: ignore[union-attr]
    os.close(parent_w)
    thread.join(30)


def _launch_probe(tmp_path: Path, site: Path) -> str:
    """A stand-in SuperNode: asks the worker named in its node config, prints it."""
    request = ToyCountsRequest(np.array(["a", "b"]))
    data = encode(Envelope("request", 1, "Cleveland", request.kind, request))
    (tmp_path / "request.bin").write_bytes(data)
    return (
        "import sys, shlex\n"
        "from fedtrees.federation.flower._wire import SiteMessage, ask_worker\n"
        "config = dict(kv.split('=', 1) for kv in shlex.split(sys.argv[2]))\n"
        f"request = open({str(tmp_path / 'request.bin')!r}, 'rb').read()\n"
        "node = {'client-id': 'Cleveland', 'data-path': config['data-path'], 'cache-dir': ''}\n"
        "answer = ask_worker(config['site-worker'], SiteMessage(request, node, {'job': 'toy'}, 1))\n"
        "print(config['site-worker'])\n"
        "sys.stdout.buffer.write(answer.reply)\n"
    )


def test_the_launcher_starts_the_worker_and_it_ends_with_the_node(
    tmp_path: Path,
) -> None:
    """``python -m fedtrees.cli.site_worker COMMAND``: the command gets the socket."""
    site = save_client_file(
        tmp_path / "site.npz",
        pd.DataFrame({"age": [40.0, 50.0, 60.0]}),
        ["a", "b", "b"],
    )
    probe = _launch_probe(tmp_path, site)
    node_config = (
        f"client-id={json.dumps('Cleveland')} data-path={json.dumps(str(site))}"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "fedtrees.cli.site_worker",
            sys.executable,
            "-c",
            probe,
            "--node-config",
            node_config,
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    first, _, reply = done.stdout.partition(b"\n")
    socket_path = Path(first.decode())
    assert socket_path.name == "site.sock"
    assert decode(reply).payload.counts.tolist() == [1.0, 2.0]  # type: ignore[union-attr]
    deadline = time.monotonic() + 60
    while socket_path.parent.exists():  # the worker saw its node end: cleaned up
        assert time.monotonic() < deadline, "the worker outlived its SuperNode"
        time.sleep(0.05)


def test_the_launcher_without_a_command_says_how_to_call_it() -> None:
    from fedtrees.cli.site_worker import main

    with pytest.raises(SystemExit, match="FLOWER-SUPERNODE-COMMAND"):
        main([])


def test_the_client_app_process_imports_flower_and_no_serving_stack() -> None:
    """A message's process, with a site worker, needs Flower and a socket only."""
    probe = (
        "import json, sys\n"
        "from fedtrees.cli.flower_app import clientapp\n"
        "heavy = ('pandas', 'numba', 'sklearn', 'fedtrees.federation._codec',"
        " 'fedtrees.algorithms')\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == []
