"""Flower deployment pieces, without processes: SuperNode keys, command lines, CLI,
and the round's deadline of ``FlowerTransport`` (over a fake Grid).

The loopback deployment with a refused, unregistered SuperNode is in
``test_flower.py`` (``tls_deployment`` runs with SuperNode authentication).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import (
    load_ssh_private_key,
    load_ssh_public_key,
)
from flwr.app import ConfigRecord, Message, RecordDict
from flwr.cli.supernode.register import try_load_public_key
from flwr.supercore.task_identity import TaskIdentity
from typer.testing import CliRunner

from fedtrees.cli import app
from fedtrees.exceptions import RemoteProtocolError, ValidationError
from fedtrees.federation import ClientData, run, serve
from fedtrees.federation.flower import FlowerTransport, make_certificates
from fedtrees.federation.flower import _deploy as deploy
from fedtrees.federation.flower._deploy import (
    _UNREACHABLE,
    make_supernode_keys,
    register_supernode,
    register_supernode_command,
    superlink_command,
    supernode_command,
)
from fedtrees.federation.flower._transport import HELLO
from fedtrees.federation.flower._wire import pack, unpack
from tests.federation.helpers import NullStrategy

TIMEOUT, GRACE = 0.5, 20.0
"""GRACE: seconds a loaded machine may add to a round that ends at its timeout; below
the messages' TTL margin (30 s), so a round that waited for the TTL still fails."""


def test_supernode_keys_are_p384_openssh_keys_flower_accepts(tmp_path: Path) -> None:
    private, public = make_supernode_keys(tmp_path / "keys", "Long-Beach-VA")
    assert (private.name, public.name) == ("Long-Beach-VA.key", "Long-Beach-VA.pub")
    assert private.stat().st_mode & 0o077 == 0  # the private key is the site's only
    key = load_ssh_private_key(private.read_bytes(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert key.curve.name == "secp384r1"
    assert load_ssh_public_key(public.read_bytes()) == key.public_key()
    assert try_load_public_key(public)  # what `flwr supernode register` reads


def test_every_site_gets_its_own_key(tmp_path: Path) -> None:
    _, a = make_supernode_keys(tmp_path, "a")
    _, b = make_supernode_keys(tmp_path, "b")
    assert a.read_bytes().split()[1] != b.read_bytes().split()[1]


@pytest.mark.parametrize(
    ("client_id", "rule"),
    [
        ("", "this site's client id: text of 1 to"),  # the node config's rule first
        ("../escape", "a non-empty file name"),
        ("a/b", "a non-empty file name"),
    ],
)
@pytest.mark.hostile("clear_error")
def test_a_key_name_that_is_not_a_file_name_is_refused(
    tmp_path: Path, client_id: str, rule: str
) -> None:
    with pytest.raises(ValidationError, match=rf"'client_id' must be {rule}"):
        make_supernode_keys(tmp_path, client_id)


@pytest.mark.hostile("clear_error")
def test_an_existing_key_pair_is_never_overwritten(tmp_path: Path) -> None:
    private, _ = make_supernode_keys(tmp_path, "a")
    before = private.read_bytes()
    with pytest.raises(ValidationError, match=r"a\.key.*already exist"):
        make_supernode_keys(tmp_path, "a")
    assert private.read_bytes() == before


def test_commands_enable_supernode_auth_over_tls(tmp_path: Path) -> None:
    certs = make_certificates(tmp_path / "certs")
    private, public = make_supernode_keys(tmp_path / "keys", "a")
    link = superlink_command(certs=certs, supernode_auth=True)
    assert "--enable-supernode-auth" in link
    assert "--enable-supernode-auth" not in superlink_command(certs=certs)
    node = supernode_command(
        superlink="h:1",
        client_id="a",
        data_path="/d/a.npz",
        root_certificates=certs / "ca.crt",
        auth_private_key=private,
    )
    assert node[node.index("--auth-supernode-private-key") + 1] == str(private)
    assert register_supernode_command(public, "fed", name="a") == [
        "flwr",
        *("supernode", "register", str(public), "fed"),
        *("--name", "a", "--format", "json"),
    ]


@pytest.mark.hostile("clear_error")
def test_supernode_auth_without_tls_is_refused_by_name() -> None:
    with pytest.raises(ValidationError, match=r"superlink_command: 'supernode_auth'"):
        superlink_command(insecure=True, supernode_auth=True)
    with pytest.raises(
        ValidationError, match=r"supernode_command: 'auth_private_key'.*needs TLS"
    ):
        supernode_command(
            superlink="h:1",
            client_id="a",
            data_path="/d/a.npz",
            insecure=True,
            auth_private_key="a.key",
        )


@pytest.mark.hostile("clear_error")
def test_registering_a_missing_key_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"public key file .*nobody.pub"):
        register_supernode(tmp_path / "nobody.pub", "fed")


@pytest.mark.hostile("clear_error")
def test_a_registration_flower_refuses_reports_flowers_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, public = make_supernode_keys(tmp_path, "a")
    refused = json.dumps({"success": False, "error-message": "Public key in use"})
    calls: list[list[str]] = []

    def flwr(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        return subprocess.CompletedProcess(command, 1, refused, "")

    monkeypatch.setattr(subprocess, "run", flwr)
    with pytest.raises(
        ValidationError,
        match=r"Flower refused the public key 'a.pub' at connection 'fed': "
        r"Public key in use",
    ):
        register_supernode(public, "fed")
    assert calls == [register_supernode_command(public, "fed")]


def test_registration_waits_while_the_superlink_comes_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, public = make_supernode_keys(tmp_path, "a")
    down = json.dumps({"success": False, "error-message": _UNREACHABLE + "..."})
    replies = [down, down, json.dumps({"success": True, "node-id": 42})]
    naps: list[float] = []

    def flwr(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(command, 0, replies.pop(0), "")

    monkeypatch.setattr(subprocess, "run", flwr)
    monkeypatch.setattr(deploy.time, "sleep", naps.append)
    assert register_supernode(public, "fed") == 42
    assert naps == [1.0, 1.0]


@pytest.mark.hostile("clear_error")
def test_a_superlink_unreachable_beyond_the_wait_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, public = make_supernode_keys(tmp_path, "a")
    down = json.dumps({"success": False, "error-message": _UNREACHABLE + "."})

    def flwr(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(command, 0, down, "")

    monkeypatch.setattr(subprocess, "run", flwr)
    with pytest.raises(ValidationError, match=r"'fed': Connection to the SuperLink"):
        register_supernode(public, "fed", wait=0.0)


def test_supernodes_without_a_port_get_distinct_free_ones(tmp_path: Path) -> None:
    def port() -> int:
        command = supernode_command(
            superlink="h:1", client_id="a", data_path="/d/a.npz", insecure=True
        )
        return int(command[command.index("--port") + 1])

    ports = {port() for _ in range(4)}
    assert 9094 not in ports
    assert len(ports) >= 2  # the system hands out new ones
    pinned = supernode_command(
        superlink="h:1", client_id="a", data_path="/d/a.npz", insecure=True, port=9200
    )
    assert pinned[pinned.index("--port") + 1] == "9200"


def test_the_cli_writes_a_sites_key_pair(tmp_path: Path) -> None:
    out = CliRunner().invoke(
        app, ["flower", "keys", str(tmp_path), "--client-id", "Cleveland"]
    )
    assert out.exit_code == 0, out.output
    # The console folds a path longer than its 80 columns (a deep tmp_path, as
    # under parallel workers): read the message unfolded.
    assert str(tmp_path / "Cleveland.pub") in out.output.replace("\n", "")
    assert try_load_public_key(tmp_path / "Cleveland.pub")


# --- the round's deadline on Flower (FlowerTransport over a silent node) ------------


@dataclass
class _Reply:
    """What FlowerTransport reads of a Flower reply (duck-typed, no SuperLink)."""

    reply_to: str
    content: object

    @property
    def metadata(self) -> object:
        return type("Metadata", (), {"reply_to_message_id": self.reply_to})()

    def has_error(self) -> bool:
        return False


class SilentNodeGrid:
    """A Grid whose nodes answer at once with the client runtime — except one.

    The silent node answers its hello but never a fedtrees query, as a SuperNode
    whose ClientApp hangs.
    """

    def __init__(self, data: Mapping[str, ClientData], silent: str) -> None:
        self.nodes = {i + 1: client for i, client in enumerate(sorted(data))}
        self.data, self.silent = data, silent
        self.replies: dict[str, _Reply] = {}
        self.pushed = 0

    def get_node_ids(self) -> list[int]:
        return list(self.nodes)

    def push_messages(self, messages: Sequence[Message]) -> list[str]:
        ids = []
        for message in messages:
            self.pushed += 1
            message_id = f"m{self.pushed}"
            ids.append(message_id)
            client = self.nodes[message.metadata.dst_node_id]
            if message.metadata.message_type == HELLO:
                hello = RecordDict({"hello": ConfigRecord({"client-id": client})})
                self.replies[message_id] = _Reply(message_id, hello)
            elif client != self.silent:
                request = unpack(message.content)
                reply = serve(request, self.data[client])
                self.replies[message_id] = _Reply(message_id, pack(reply))
        return ids

    def pull_messages(self, message_ids: Sequence[str]) -> list[_Reply]:
        return [self.replies.pop(i) for i in message_ids if i in self.replies]


@pytest.mark.hostile("clear_error")
def test_on_flower_a_silent_node_ends_the_round_at_its_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in {"_task_id": 1, "_run_id": 1, "_node_id": 0}.items():
        monkeypatch.setattr(TaskIdentity, name, value)  # as inside a ServerApp
    data = {
        c: ClientData.build(c, np.zeros((3, 1)), np.array([0, 1, 0])) for c in "abc"
    }
    grid = SilentNodeGrid(data, silent="c")
    transport = FlowerTransport(grid, min_clients=3)  # type: ignore[arg-type]
    start = time.monotonic()
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'c', round 0, 'federation.schema': field 'reply' did not "
        r"arrive in time \(no reply in time\)",
    ):
        run(NullStrategy(), transport, task="classification", timeout=TIMEOUT)
    assert time.monotonic() - start < TIMEOUT + GRACE
