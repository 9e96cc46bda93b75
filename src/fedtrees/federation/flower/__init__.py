"""fedtrees on Flower: the transport, the apps, the site worker and deployment helpers.

This is the only package that imports ``flwr`` (in a fedtrees clone: ``pip install
'.[flower]'``). The names below load on first use (PEP 562): the ClientApp process
Flower starts for every message imports only the ClientApp (docs/flower.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

try:
    import flwr  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "fedtrees.federation.flower needs Flower: "
        "pip install '.[flower]' in a fedtrees clone"
    ) from exc

from fedtrees._lazy import lazy_names

_HOMES: Final[dict[str, str]] = {
    "FlowerTransport": "fedtrees.federation.flower._transport",
    "JobRunner": "fedtrees.federation.flower._apps",
    "NODE_CONFIG": "fedtrees.federation.flower._config",
    "RUN_CONFIG": "fedtrees.federation.flower._config",
    "ServerConfig": "fedtrees.federation.flower._apps",
    "SiteAnswer": "fedtrees.federation.flower._wire",
    "SiteMessage": "fedtrees.federation.flower._wire",
    "app_dir": "fedtrees.federation.flower._deploy",
    "check_node_config": "fedtrees.federation.flower._config",
    "csv_declarations": "fedtrees.federation.flower._site_files",
    "flower_env": "fedtrees.federation.flower._deploy",
    "launch": "fedtrees.federation.flower._worker",
    "list_sites": "fedtrees.federation.flower._sites",
    "make_certificates": "fedtrees.federation.flower._deploy",
    "make_client_app": "fedtrees.federation.flower._clientapp",
    "make_server_app": "fedtrees.federation.flower._apps",
    "make_supernode_keys": "fedtrees.federation.flower._deploy",
    "node_config_text": "fedtrees.federation.flower._config",
    "register_supernode": "fedtrees.federation.flower._deploy",
    "serve_forever": "fedtrees.federation.flower._worker",
    "serve_site": "fedtrees.federation.flower._site",
    "site_budget": "fedtrees.federation.flower._site",
    "site_noise": "fedtrees.federation.flower._noise",
    "sites_table": "fedtrees.federation.flower._sites",
    "superlink_command": "fedtrees.federation.flower._deploy",
    "supernode_command": "fedtrees.federation.flower._deploy",
    "write_connection": "fedtrees.federation.flower._deploy",
    "write_outputs": "fedtrees.federation.flower._apps",
}
"""Every public name and the module it loads from."""

__all__ = [
    "NODE_CONFIG",
    "RUN_CONFIG",
    "FlowerTransport",
    "JobRunner",
    "ServerConfig",
    "SiteAnswer",
    "SiteMessage",
    "app_dir",
    "check_node_config",
    "csv_declarations",
    "flower_env",
    "launch",
    "list_sites",
    "make_certificates",
    "make_client_app",
    "make_server_app",
    "make_supernode_keys",
    "node_config_text",
    "register_supernode",
    "serve_forever",
    "serve_site",
    "site_budget",
    "site_noise",
    "sites_table",
    "superlink_command",
    "supernode_command",
    "write_connection",
    "write_outputs",
]

if TYPE_CHECKING:
    from fedtrees.federation.flower._apps import (
        JobRunner,
        ServerConfig,
        make_server_app,
        write_outputs,
    )
    from fedtrees.federation.flower._clientapp import make_client_app
    from fedtrees.federation.flower._config import (
        NODE_CONFIG,
        RUN_CONFIG,
        check_node_config,
        node_config_text,
    )
    from fedtrees.federation.flower._deploy import (
        app_dir,
        flower_env,
        make_certificates,
        make_supernode_keys,
        register_supernode,
        superlink_command,
        supernode_command,
        write_connection,
    )
    from fedtrees.federation.flower._noise import site_noise
    from fedtrees.federation.flower._site import serve_site, site_budget
    from fedtrees.federation.flower._site_files import csv_declarations
    from fedtrees.federation.flower._sites import list_sites, sites_table
    from fedtrees.federation.flower._transport import FlowerTransport
    from fedtrees.federation.flower._wire import SiteAnswer, SiteMessage
    from fedtrees.federation.flower._worker import launch, serve_forever

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
