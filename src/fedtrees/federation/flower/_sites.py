"""Which registered site is which: names beside Flower's node ids (docs/flower.md).

``flwr supernode register --name`` stores a name, but ``flwr supernode list``
(Flower 1.41 and 1.42) shows node ids, owners and statuses only, never it: an
operator cannot tell which hospital is offline. So
:func:`~fedtrees.federation.flower.register_supernode` also records every
registration in ``$FLWR_HOME/fedtrees-sites.json`` (connection -> node id ->
name, key file and the SHA-256 of the public key;
:func:`~fedtrees.federation.flower._deploy.record_site`), and :func:`list_sites` joins
that record with ``flwr supernode list --format json``: each site's name, node
id, status (``online``, ``offline``, ``registered``, ``unregistered``) and key
digest (``fedtrees flower sites CONNECTION``). A node registered some other way
is listed with no name. The record lives with the connection, in the operator's
``$FLWR_HOME``: run ``sites`` where ``register`` was run.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedtrees.exceptions import ValidationError
from fedtrees.federation.flower._deploy import (
    SITES_FILE,
    first_json_object,
    flower_env,
    flower_home,
    read_sites_record,
)

__all__ = [
    "SiteStatus",
    "list_sites",
    "sites_table",
]

Runner = Callable[[list[str], Mapping[str, str]], str]
"""(command, environment) -> its standard output (``flwr`` commands)."""


@dataclass(frozen=True)
class SiteStatus:
    """One registered SuperNode: its site's name (None if unknown) and status."""

    name: str | None
    node_id: int
    status: str
    since: str
    key_sha256: str | None


def list_sites(
    connection: str,
    flwr_home: str | Path | None = None,
    *,
    run: Runner | None = None,
) -> list[SiteStatus]:
    """Return every SuperNode of ``connection``: its recorded name and its status.

    Statuses come from ``flwr supernode list CONNECTION --format json`` (``run``
    runs it; by default a subprocess with :func:`flower_env`), names from the
    record :func:`record_site` keeps.

    Raises
    ------
    ValidationError
        Flower's listing failed (its message is included).
    """
    command = ["flwr", "supernode", "list", connection, "--format", "json"]
    env = flower_env(flwr_home)
    output = (run or _run)(command, env)
    listing = first_json_object(output)
    if listing.get("success") is not True or not isinstance(listing.get("nodes"), list):
        raise ValidationError(
            f"list_sites: 'flwr supernode list {connection}' failed: "
            f"{str(listing.get('error-message') or output)[-1000:]}"
        )
    known = read_sites_record(flower_home(flwr_home) / SITES_FILE).get(connection, {})
    return [_status(node, known) for node in listing["nodes"]]


def _run(command: list[str], env: Mapping[str, str]) -> str:
    done = subprocess.run(
        command, env=dict(env), capture_output=True, text=True, timeout=120, check=False
    )
    return done.stdout + ("" if done.returncode == 0 else done.stderr)


def _status(node: Mapping[str, Any], known: Mapping[str, Any]) -> SiteStatus:
    node_id = str(node.get("node-id", ""))
    entry = known.get(node_id, {})
    status = str(node.get("status", ""))
    since = node.get("online-at") if status == "online" else node.get("offline-at")
    return SiteStatus(
        entry.get("name"),
        int(node_id) if node_id.isdigit() else -1,
        status,
        str(since if since and since != "N/A" else node.get("created-at", "")),
        entry.get("key-sha256"),
    )


def sites_table(sites: list[SiteStatus]) -> str:
    """Return the sites as a plain table: name, node id, status, since, key.

    Examples
    --------
    >>> print(sites_table([SiteStatus("Cleveland", 7, "online", "2026-11-26", None)]))
    site       node id  status  since       key sha256
    Cleveland  7        online  2026-11-26  -
    """
    header = ("site", "node id", "status", "since", "key sha256")
    rows = [
        (s.name or "-", str(s.node_id), s.status, s.since, (s.key_sha256 or "-")[:16])
        for s in sorted(sites, key=lambda s: (s.name is None, s.name or "", s.node_id))
    ]
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )
