"""Deployment helpers: a local CA, SuperLink/SuperNode command lines, connections.

Everything follows shared/FLOWER.md (Flower 1.41): one SuperLink port for Fleet,
Control and ServerApp APIs; ``--disable-runtime-dependency-installation`` (fedtrees
is installed on every host); a distinct ``--port`` per SuperNode on one host;
``client-id`` and ``data-path`` in each SuperNode's node config; TLS from a locally
generated CA unless ``insecure=True`` is asked for explicitly; connections in
``$FLWR_HOME/config.toml``; telemetry and update checks off.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import sys
import tomllib
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Final

import tomli_w
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from fedtrees.exceptions import ValidationError

__all__ = [
    "app_dir",
    "flower_env",
    "make_certificates",
    "superlink_command",
    "supernode_command",
    "write_connection",
]

CA_CERT: Final = "ca.crt"
CA_KEY: Final = "ca.key"
SERVER_CERT: Final = "server.pem"
SERVER_KEY: Final = "server.key"
_VALID_DAYS: Final = 365


def app_dir() -> Path:
    """Return the Flower App directory shipped with fedtrees (a pyproject.toml)."""
    return Path(str(resources.files("fedtrees.federation.flower").joinpath("app")))


def flower_env(flwr_home: str | Path | None = None) -> dict[str, str]:
    """Environment for Flower processes: no telemetry, no update check.

    Flower's executables (``flower-superlink``, ``flwr``, and the processes they
    spawn) are found first beside the running interpreter, so an environment
    used without activating it (``.venv/bin/python -m ...``) still finds them.
    """
    env = dict(os.environ, FLWR_TELEMETRY_ENABLED="0", FLWR_DISABLE_UPDATE_CHECK="1")
    beside = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([beside, env.get("PATH", "")]).rstrip(os.pathsep)
    if flwr_home is not None:
        env["FLWR_HOME"] = str(flwr_home)
    return env


def make_certificates(
    folder: str | Path, hosts: Sequence[str] = ("127.0.0.1", "localhost")
) -> Path:
    """Create a local CA and a server certificate for ``hosts`` (IPs or DNS names).

    Writes ``ca.crt``, ``ca.key``, ``server.pem`` and ``server.key`` (keys mode
    0600). Distribute ``ca.crt`` to the SuperNodes and CLI users; keep ``ca.key``.
    The server certificate's subject alternative names must contain the address
    SuperNodes and the CLI dial.
    """
    if not hosts:
        raise ValidationError("make_certificates needs at least one host for the SAN.")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fedtrees local CA")])
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    server_cert = (
        _builder(server_name, ca_name, server_key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(x509.SubjectAlternativeName(_san(hosts)), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(out / CA_KEY, ca_key)
    _write_key(out / SERVER_KEY, server_key)
    (out / CA_CERT).write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    (out / SERVER_CERT).write_bytes(
        server_cert.public_bytes(serialization.Encoding.PEM)
    )
    return out


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
    )


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=not cert_sign,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _san(hosts: Sequence[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _tls_choice(certs: object, insecure: bool, owner: str) -> None:
    if (certs is None) == (not insecure):
        raise ValidationError(
            f"{owner}: pass the certificates for TLS, or insecure=True explicitly "
            "(exactly one of them)."
        )


def superlink_command(
    *,
    certs: str | Path | None = None,
    insecure: bool = False,
    host: str = "0.0.0.0",
    port: int = 9095,
) -> list[str]:
    """Return the ``flower-superlink`` command line (TLS with ``certs``)."""
    _tls_choice(certs, insecure, "superlink_command")
    command = [
        "flower-superlink",
        "--host",
        host,
        "--port",
        str(port),
        "--disable-runtime-dependency-installation",
    ]
    if insecure:
        return [*command, "--insecure"]
    folder = Path(str(certs))
    return [
        *command,
        "--ssl-ca-certfile",
        str(folder / CA_CERT),
        "--ssl-certfile",
        str(folder / SERVER_CERT),
        "--ssl-keyfile",
        str(folder / SERVER_KEY),
    ]


def supernode_command(
    *,
    superlink: str,
    client_id: str,
    data_path: str | Path,
    root_certificates: str | Path | None = None,
    insecure: bool = False,
    port: int = 9094,
    target: str | None = None,
    node_config: Mapping[str, str] | None = None,
) -> list[str]:
    """Return the ``flower-supernode`` command line of one site.

    ``client-id`` and ``data-path`` (and ``target`` for CSV files, and any
    ``node_config`` entries) go into the node config, quoted as TOML strings.
    """
    _tls_choice(root_certificates, insecure, "supernode_command")
    if not client_id:
        raise ValidationError(
            "supernode_command: 'client_id' must be a non-empty string."
        )
    config = f"client-id={json.dumps(client_id)} data-path={json.dumps(str(data_path))}"
    if target:
        config += f" target={json.dumps(target)}"
    for key, value in (node_config or {}).items():
        config += f" {key}={json.dumps(value)}"
    command = [
        "flower-supernode",
        "--superlink",
        superlink,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--node-config",
        config,
    ]
    if insecure:
        return [*command, "--insecure"]
    return [*command, "--root-certificates", str(root_certificates)]


def write_connection(
    name: str,
    address: str,
    *,
    flwr_home: str | Path | None = None,
    root_certificates: str | Path | None = None,
    insecure: bool = False,
    default: bool = True,
) -> Path:
    """Add (or replace) ``[superlink.<name>]`` in ``$FLWR_HOME/config.toml``."""
    _tls_choice(root_certificates, insecure, "write_connection")
    home = Path(flwr_home or os.environ.get("FLWR_HOME") or Path.home() / ".flwr")
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    config = tomllib.loads(path.read_text()) if path.exists() else {}
    superlink = config.setdefault("superlink", {})
    entry: dict[str, object] = {"address": address}
    if insecure:
        entry["insecure"] = True
    else:
        entry["root-certificates"] = str(Path(str(root_certificates)).resolve())
    superlink[name] = entry
    if default:
        superlink["default"] = name
    path.write_text(tomli_w.dumps(config))
    return path
