"""The Flower app pieces, called directly (no SuperLink, no processes)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flwr")

from flwr.app import Context, Message, Metadata, RecordDict

from fedtrees.algorithms.toy import ToyCountsRequest
from fedtrees.datasets import (
    _site_cache,
    load_site_data,
    save_client_file,
)
from fedtrees.datasets._client_files import parse_client_file
from fedtrees.datasets._site_file import SiteFile
from fedtrees.exceptions import RemoteProtocolError, ValidationError
from fedtrees.federation import Envelope, decode, encode, receive
from fedtrees.federation._transport import Delivery
from fedtrees.federation.flower import (
    ServerConfig,
    app_dir,
    flower_env,
    make_certificates,
    make_client_app,
    superlink_command,
    supernode_command,
    write_connection,
)
from fedtrees.federation.flower._wire import pack, unpack


def _message(content: RecordDict, message_type: str) -> Message:
    metadata = Metadata(
        run_id=1,
        message_id="m1",
        src_node_id=1,
        dst_node_id=2,
        reply_to_message_id="",
        group_id="1",
        created_at=time.time(),
        ttl=60.0,
        message_type=message_type,
    )
    return Message(content, metadata=metadata)


def _context(node_config: dict[str, object]) -> Context:
    return Context(
        run_id=1, node_id=2, node_config=node_config, state=RecordDict(), run_config={}
    )  # type: ignore[arg-type]


@pytest.fixture
def site_file(tmp_path: Path) -> Path:
    X = pd.DataFrame({"age": [40.0, 50.0, 60.0]})
    return save_client_file(tmp_path / "site.npz", X, ["no", "yes", "yes"])


def test_client_app_answers_hello_and_requests(site_file: Path) -> None:
    app = make_client_app(load_site_data)
    context = _context({"client-id": "Cleveland", "data-path": str(site_file)})
    hello = app(_message(RecordDict({}), "query.fedtrees_hello"), context)
    assert hello.content.config_records["hello"]["client-id"] == "Cleveland"
    request = ToyCountsRequest(np.array(["no", "yes"]))
    data = encode(Envelope("request", 1, "Cleveland", request.kind, request))
    reply = app(_message(pack(data), "query.fedtrees"), context)
    payload = receive(
        "Cleveland", 1, request, Delivery("Cleveland", "ok", unpack(reply.content), 0.1)
    )
    assert payload.counts.tolist() == [1.0, 2.0]  # type: ignore[attr-defined]


def test_client_app_parses_its_data_once_per_run(
    site_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Later messages of a run read the SuperNode's cache; "" turns it off."""
    parsed: list[str] = []

    def counted(file: SiteFile, *args: Any) -> tuple[pd.DataFrame, Any]:
        parsed.append(file.name)
        return parse_client_file(file, *args)

    monkeypatch.setattr(_site_cache, "parse_client_file", counted)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    app = make_client_app(load_site_data)
    request = ToyCountsRequest(np.array(["no", "yes"]))
    data = encode(Envelope("request", 1, "Cleveland", request.kind, request))
    for cache_dir, parses, where in [
        (None, 1, tmp_path / "xdg" / "fedtrees" / "site-data" / "run-1"),
        (str(tmp_path / "mine"), 1, tmp_path / "mine" / "run-1"),
        ("", 3, None),
    ]:
        parsed.clear()
        config = {"client-id": "Cleveland", "data-path": str(site_file)}
        if cache_dir is not None:
            config["cache-dir"] = cache_dir
        for _ in range(3):
            reply = app(_message(pack(data), "query.fedtrees"), _context(config))
            payload = receive(
                "Cleveland",
                1,
                request,
                Delivery("Cleveland", "ok", unpack(reply.content), 0.1),
            )
            assert payload.counts.tolist() == [1.0, 2.0]  # type: ignore[attr-defined]
        assert len(parsed) == parses
        if where is not None:
            assert len(list(where.glob("*.npz"))) == 1


def test_client_app_reports_unloadable_data_naming_the_client(tmp_path: Path) -> None:
    app = make_client_app(load_site_data)
    context = _context(
        {"client-id": "Hungary", "data-path": str(tmp_path / "missing.npz")}
    )
    request = ToyCountsRequest(np.array(["no"]))
    data = encode(Envelope("request", 2, "Hungary", request.kind, request))
    reply = app(_message(pack(data), "query.fedtrees"), context)
    envelope = decode(unpack(reply.content))
    assert envelope.type == "error"
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'Hungary', round 2.*cannot load local data: DataNotFoundError",
    ):
        receive(
            "Hungary", 2, request, Delivery("Hungary", "ok", unpack(reply.content), 0.1)
        )


def test_client_app_needs_its_node_config(site_file: Path) -> None:
    app = make_client_app(load_site_data)
    request = ToyCountsRequest(np.array(["no"]))
    data = encode(Envelope("request", 1, "", request.kind, request))
    reply = app(_message(pack(data), "query.fedtrees"), _context({}))
    assert "--node-config 'client-id=" in decode(unpack(reply.content)).error


def test_server_config_validates_the_run_config() -> None:
    base = {
        "job": "toy",
        "params": '{"n_bins": 4}',
        "output-path": "/tmp/x.json",
        "min-clients": 3,
        "round-timeout": 30.0,
        "registration-timeout": 60,
        "poll-interval": 0.02,
    }
    config = ServerConfig.from_run_config(base)
    assert (config.params, config.min_clients, config.registration_timeout) == (
        {"n_bins": 4},
        3,
        60.0,
    )
    with pytest.raises(ValidationError, match="Run config 'params' is not JSON"):
        ServerConfig.from_run_config({**base, "params": "{n_bins: 4}"})
    with pytest.raises(
        ValidationError,
        match=r"Run config 'min-clients' must be an int >= 1.*got 'three'",
    ):
        ServerConfig.from_run_config({**base, "min-clients": "three"})


def test_app_dir_holds_only_the_app_pyproject() -> None:
    import tomllib

    files = sorted(p.name for p in app_dir().iterdir())
    assert files == ["pyproject.toml"]
    config = tomllib.loads((app_dir() / "pyproject.toml").read_text())
    assert (
        config["tool"]["flwr"]["app"]["components"]["serverapp"]
        == "fedtrees.cli.flower_app:serverapp"
    )


def test_commands_require_tls_or_an_explicit_insecure_flag(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="insecure=True explicitly"):
        superlink_command()
    insecure = superlink_command(insecure=True, port=9999)
    assert "--insecure" in insecure
    assert "--disable-runtime-dependency-installation" in insecure
    certs = make_certificates(tmp_path / "certs")
    tls = superlink_command(certs=certs)
    assert "--ssl-certfile" in tls
    assert "--insecure" not in tls
    node = supernode_command(
        superlink="h:1",
        client_id="Site A",
        data_path="/d/a.npz",
        root_certificates=certs / "ca.crt",
    )
    assert (
        node[node.index("--node-config") + 1]
        == 'client-id="Site A" data-path="/d/a.npz"'
    )
    assert (certs / "ca.key").stat().st_mode & 0o077 == 0


def test_certificates_chain_to_the_ca_and_name_the_hosts(tmp_path: Path) -> None:
    from cryptography import x509

    certs = make_certificates(tmp_path, ["10.0.0.5", "link.example.org"])
    ca = x509.load_pem_x509_certificate((certs / "ca.crt").read_bytes())
    server = x509.load_pem_x509_certificate((certs / "server.pem").read_bytes())
    server.verify_directly_issued_by(ca)
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["10.0.0.5"]
    assert san.get_values_for_type(x509.DNSName) == ["link.example.org"]


def test_connections_are_written_to_flower_home(tmp_path: Path) -> None:
    import tomllib

    path = write_connection("site", "127.0.0.1:9095", flwr_home=tmp_path, insecure=True)
    write_connection(
        "prod", "link:9095", flwr_home=tmp_path, root_certificates=tmp_path / "ca.crt"
    )
    config = tomllib.loads(path.read_text())
    assert config["superlink"]["site"] == {
        "address": "127.0.0.1:9095",
        "insecure": True,
    }
    assert config["superlink"]["default"] == "prod"
    assert config["superlink"]["prod"]["root-certificates"].endswith("ca.crt")


def test_flower_executables_are_found_beside_the_interpreter() -> None:
    # `.venv/bin/python -m pytest` without an activated venv must still find them.
    env = flower_env()
    beside = Path(sys.executable).parent
    assert env["PATH"].split(os.pathsep)[0] == str(beside)
    assert shutil.which("flower-superlink", path=env["PATH"]) == str(
        beside / "flower-superlink"
    )


@pytest.mark.parametrize("chosen", [None, "", "cache"])
def test_supernode_command_passes_the_cache_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chosen: str | None
) -> None:
    from typer.testing import CliRunner

    from fedtrees.cli import app

    started: list[list[str]] = []
    monkeypatch.setattr(os, "execvpe", lambda _, command, env: started.append(command))
    monkeypatch.chdir(tmp_path)
    site = ["--client-id", "a", "--data", "a.npz", "--insecure"]
    option = [] if chosen is None else ["--cache-dir", chosen]
    out = CliRunner().invoke(
        app, ["flower", "supernode", "--superlink", "h:1", *site, *option]
    )
    assert out.exit_code == 0, out.output
    config = started[0][started[0].index("--node-config") + 1]
    folder = str((tmp_path / "cache").resolve())
    expected = {None: None, "": 'cache-dir=""', "cache": f'cache-dir="{folder}"'}
    if chosen is None:
        assert "cache-dir" not in config
    else:
        assert str(expected[chosen]) in config


@pytest.mark.parametrize("worker", [True, False])
def test_supernode_command_starts_a_site_worker_unless_told_not_to(
    monkeypatch: pytest.MonkeyPatch, worker: bool
) -> None:
    from typer.testing import CliRunner

    from fedtrees.cli import app

    started: list[list[str]] = []
    monkeypatch.setattr(os, "execvpe", lambda _, command, env: started.append(command))
    site = ["--client-id", "a", "--data", "a.npz", "--insecure"]
    option = [] if worker else ["--no-site-worker"]
    out = CliRunner().invoke(
        app, ["flower", "supernode", "--superlink", "h:1", *site, *option]
    )
    assert out.exit_code == 0, out.output
    supernode = started[0].index("flower-supernode")
    launcher = [sys.executable, "-m", "fedtrees.cli.site_worker"]
    assert started[0][:supernode] == (launcher if worker else [])
