"""Deployment helpers: a local CA, SuperLink/SuperNode command lines, connections.

Flower 1.41 and 1.42.

Everything follows docs/flower.md: one SuperLink port for
Fleet, Control and ServerApp APIs; ``--disable-runtime-dependency-installation``
(fedtrees is installed on every host); a distinct ``--port`` per SuperNode on one host
(a free one is picked when none is given); ``client-id`` and ``data-path`` in each
SuperNode's node config; TLS from a locally generated CA unless ``insecure=True`` is
asked for explicitly; connections in ``$FLWR_HOME/config.toml``; telemetry and update
checks off.

SuperNode authentication (Flower's ``--enable-supernode-auth``, over TLS only):
each site makes an ECDSA P-384 key pair (:func:`make_supernode_keys`, OpenSSH
format, as Flower reads it), keeps the private key for ``flower-supernode
--auth-supernode-private-key`` and sends the public key to the server operator,
who registers it (:func:`register_supernode`, ``flwr supernode register``). The
SuperLink then refuses every SuperNode whose key was not registered.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import json
import os
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final

import tomli_w
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from fedtrees._validation import shown
from fedtrees.exceptions import ValidationError
from fedtrees.federation.flower._config import check_site_id, node_config_text

__all__ = [
    "SITES_FILE",
    "app_dir",
    "first_json_object",
    "flower_env",
    "flower_home",
    "free_local_port",
    "make_certificates",
    "make_supernode_keys",
    "read_sites_record",
    "record_site",
    "register_supernode",
    "register_supernode_command",
    "superlink_command",
    "supernode_command",
    "write_connection",
]

CA_CERT: Final = "ca.crt"
CA_KEY: Final = "ca.key"
SERVER_CERT: Final = "server.pem"
SERVER_KEY: Final = "server.key"
_VALID_DAYS: Final = 365
TASK_POLL_INTERVAL: Final = 0.2
"""Seconds between a SuperExec's looks for new tasks (:func:`flower_env`)."""


def app_dir() -> Path:
    """Return the Flower App directory shipped with fedtrees (a pyproject.toml)."""
    return Path(str(resources.files("fedtrees.federation.flower").joinpath("app")))


def flower_env(flwr_home: str | Path | None = None) -> dict[str, str]:
    """Environment for Flower processes: no telemetry, no update check, quick tasks.

    Flower's executables (``flower-superlink``, ``flwr``, and the processes they
    spawn) are found first beside the running interpreter, so an environment
    used without activating it (``.venv/bin/python -m ...``) still finds them.

    **Decision:** a SuperExec looks for new tasks every
    :data:`TASK_POLL_INTERVAL` s (Flower's default: 1 s, half a second of every
    round on average; an environment's own ``FLWR_SUPEREXEC_TASK_POLL_INTERVAL``
    is kept). The look is a local request to the node's own runtime API, not to
    the SuperLink (docs/flower.md: where a round's seconds go).
    """
    env = dict(os.environ, FLWR_TELEMETRY_ENABLED="0", FLWR_DISABLE_UPDATE_CHECK="1")
    env.setdefault("FLWR_SUPEREXEC_TASK_POLL_INTERVAL", str(TASK_POLL_INTERVAL))
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


def make_supernode_keys(folder: str | Path, client_id: str) -> tuple[Path, Path]:
    """Create one site's SuperNode key pair for SuperNode authentication.

    Writes ``<client_id>.key`` (the private key, mode 0600: it stays at the site,
    for ``flower-supernode --auth-supernode-private-key``) and ``<client_id>.pub``
    (the public key, sent to the server operator, who registers it with
    :func:`register_supernode`). Both are ECDSA P-384 keys in OpenSSH format, the
    format Flower 1.41 and 1.42 read. Existing key files are never overwritten.

    Returns
    -------
    (private_key_path, public_key_path)
    """
    check_site_id(client_id, "make_supernode_keys")
    if Path(client_id).name != client_id:
        raise ValidationError(
            f"make_supernode_keys: 'client_id' must be a non-empty file name, got "
            f"{shown(client_id)}."
        )
    out = Path(folder)
    private, public = out / f"{client_id}.key", out / f"{client_id}.pub"
    existing = [str(path) for path in (private, public) if path.exists()]
    if existing:
        raise ValidationError(
            f"make_supernode_keys: {existing} already exist; a registered key is "
            "not replaced silently (remove the files to make a new pair)."
        )
    out.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP384R1())
    private.touch(mode=0o600)
    private.chmod(0o600)
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        + f" fedtrees-supernode-{client_id}\n".encode()
    )
    return private, public


def register_supernode_command(
    public_key: str | Path, connection: str, *, name: str | None = None
) -> list[str]:
    """Return the ``flwr supernode register`` command line (JSON output).

    ``connection`` is a SuperLink connection of ``$FLWR_HOME/config.toml``
    (:func:`write_connection`); Flower keeps ``name`` but ``flwr supernode
    list`` does not show it (``fedtrees flower sites`` does).
    """
    if not connection:
        raise ValidationError(
            "register_supernode_command: 'connection' must name a SuperLink "
            "connection (see write_connection)."
        )
    command = ["flwr", "supernode", "register", str(public_key), connection]
    if name:
        command += ["--name", name]
    return [*command, "--format", "json"]


def register_supernode(
    public_key: str | Path,
    connection: str,
    *,
    name: str | None = None,
    flwr_home: str | Path | None = None,
    timeout: float = 60.0,
    wait: float = 30.0,
) -> int:
    """Register a site's public key with the SuperLink; return the new node id.

    Run by the server operator (it uses the Control API of ``connection``). Only
    SuperNodes whose key is registered may join a SuperLink started with
    ``supernode_auth=True``. The registration (node id, ``name``, key digest)
    is also recorded in ``$FLWR_HOME`` for :func:`list_sites`, since Flower's
    own listing does not show the name.

    **Decision**: while Flower reports the SuperLink unreachable, the
    registration is tried again (once a second) for up to ``wait`` seconds, so a
    script may register right after starting the SuperLink; any other refusal is
    final at once.

    Raises
    ------
    ValidationError
        The key file is missing, or Flower refused the registration (a key that
        is not an EC key on a NIST curve, a key registered already, a SuperLink
        still unreachable after ``wait`` seconds); Flower's message is included.
    """
    path = Path(public_key)
    if not path.is_file():
        raise ValidationError(
            f"register_supernode: public key file {str(path)!r} does not exist."
        )
    give_up = time.monotonic() + wait
    while True:
        reply, detail = _register_once(path, connection, name, flwr_home, timeout)
        node_id = reply.get("node-id")
        if reply.get("success") and isinstance(node_id, int):
            record_site(connection, node_id, name, path, flwr_home)
            return node_id
        if _UNREACHABLE not in detail or time.monotonic() >= give_up:
            raise ValidationError(
                f"register_supernode: Flower refused the public key {path.name!r} "
                f"at connection {connection!r}: {detail[-1000:]}"
            )
        time.sleep(1.0)


_UNREACHABLE: Final = "Connection to the SuperLink is unavailable"


def _register_once(
    path: Path,
    connection: str,
    name: str | None,
    flwr_home: str | Path | None,
    timeout: float,
) -> tuple[dict[str, object], str]:
    """One ``flwr supernode register``: its JSON reply and its error text."""
    done = subprocess.run(
        register_supernode_command(path, connection, name=name),
        env=flower_env(flwr_home),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    reply = first_json_object(done.stdout)
    if done.returncode != 0:
        reply = {**reply, "success": False}
    detail = str(reply.get("error-message") or (done.stdout + done.stderr).strip())
    return reply, detail


def _tls_choice(certs: object, insecure: bool, owner: str) -> None:
    if (certs is None) == (not insecure):
        raise ValidationError(
            f"{owner}: pass the certificates for TLS, or insecure=True explicitly "
            "(exactly one of them)."
        )


def _auth_needs_tls(auth: object, insecure: bool, owner: str, name: str) -> None:
    if auth and insecure:
        raise ValidationError(
            f"{owner}: {name!r} (SuperNode authentication) needs TLS; Flower "
            "refuses it with insecure=True."
        )


def superlink_command(
    *,
    certs: str | Path | None = None,
    insecure: bool = False,
    host: str = "0.0.0.0",
    port: int = 9095,
    supernode_auth: bool = False,
) -> list[str]:
    """Return the ``flower-superlink`` command line (TLS with ``certs``).

    ``supernode_auth=True`` adds ``--enable-supernode-auth``: only SuperNodes whose
    public key was registered (:func:`register_supernode`) may join. It needs TLS.
    """
    _tls_choice(certs, insecure, "superlink_command")
    _auth_needs_tls(supernode_auth, insecure, "superlink_command", "supernode_auth")
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
    if supernode_auth:
        command.append("--enable-supernode-auth")
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
    port: int | None = None,
    target: str | None = None,
    node_config: Mapping[str, str] | None = None,
    auth_private_key: str | Path | None = None,
) -> list[str]:
    """Return the ``flower-supernode`` command line of one site.

    ``client-id`` and ``data-path`` (and ``target`` for CSV files, and any
    ``node_config`` entries) go into the node config, each checked and quoted
    so that Flower reads it back unchanged, whatever characters it holds
    (:func:`~fedtrees.federation.flower._config.node_config_text`); text that
    cannot travel (control characters in a client id, NUL or undecodable bytes
    in a path) is refused, naming the argument.
    ``auth_private_key`` (from :func:`make_supernode_keys`) authenticates the
    SuperNode to a SuperLink started with ``supernode_auth=True``; it needs TLS.

    ``port`` is the SuperNode's local ClientAppIO port on 127.0.0.1 (Flower's
    default is 9094 for every SuperNode). **Decision**: when it is None, a port
    the system reports free is picked (:func:`free_local_port`), so several
    SuperNodes started the same way share one host; pass it to pin one.
    """
    _tls_choice(root_certificates, insecure, "supernode_command")
    _auth_needs_tls(auth_private_key, insecure, "supernode_command", "auth_private_key")
    check_site_id(client_id, "supernode_command")
    entries: dict[str, object] = {"client-id": client_id, "data-path": str(data_path)}
    if target:
        entries["target"] = target
    entries.update(node_config or {})
    try:
        config = node_config_text(entries)
    except ValidationError as exc:
        raise ValidationError(f"supernode_command: {exc}") from None
    command = [
        "flower-supernode",
        "--superlink",
        superlink,
        "--host",
        "127.0.0.1",
        "--port",
        str(free_local_port() if port is None else port),
        "--node-config",
        config,
    ]
    if insecure:
        return [*command, "--insecure"]
    if auth_private_key is not None:
        command += ["--auth-supernode-private-key", str(auth_private_key)]
    return [*command, "--root-certificates", str(root_certificates)]


def free_local_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free now (the system picks it).

    The port is released before the caller binds it; another process could take
    it in between, which the caller then reports as 'address already in use'.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


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
    home = flower_home(flwr_home)
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


# -- which registered site is which (fedtrees.federation.flower._sites) ----------
SITES_FILE: Final = "fedtrees-sites.json"
"""The file in ``$FLWR_HOME`` recording every registration's name."""


def flower_home(flwr_home: str | Path | None = None) -> Path:
    """Return Flower's home: ``flwr_home``, else ``$FLWR_HOME``, else ``~/.flwr``."""
    return Path(flwr_home or os.environ.get("FLWR_HOME") or Path.home() / ".flwr")


def record_site(
    connection: str,
    node_id: int,
    name: str | None,
    public_key: Path,
    flwr_home: str | Path | None = None,
) -> Path:
    """Record a registration (node id -> name and key); return the record's path."""
    path = flower_home(flwr_home) / SITES_FILE
    record = read_sites_record(path)
    record.setdefault(connection, {})[str(node_id)] = {
        "name": name,
        "key-file": public_key.name,
        "key-sha256": hashlib.sha256(public_key.read_bytes()).hexdigest(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1))
    return path


def read_sites_record(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Return the sites record (connection -> node id -> entry), {} if none."""
    if not path.is_file():
        return {}
    try:
        record = json.loads(path.read_text())
    except ValueError as exc:
        raise ValidationError(
            f"The sites record {str(path)!r} is not JSON ({exc}); remove it and "
            "register the sites again."
        ) from exc
    if not isinstance(record, dict):
        raise ValidationError(f"The sites record {str(path)!r} is not a JSON object.")
    return record


def first_json_object(text: str) -> dict[str, Any]:
    r"""Return the first JSON object printed in ``text`` ({} when there is none).

    ``flwr ... --format json`` may print log lines before its JSON.

    Examples
    --------
    >>> first_json_object('INFO: x\n{"success": true}')
    {'success': True}
    """
    start = text.find("{")
    if start < 0:
        return {}
    try:
        value, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
