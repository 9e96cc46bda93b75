"""fedtrees on Flower: the transport, the app builders and deployment helpers.

This is the only package that imports ``flwr`` (``pip install 'fedtrees[flower]'``).
"""

try:
    import flwr  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "fedtrees.federation.flower needs Flower: pip install 'fedtrees[flower]'"
    ) from exc

from fedtrees.federation.flower._apps import (
    JobRunner,
    ServerConfig,
    make_client_app,
    make_server_app,
    write_outputs,
)
from fedtrees.federation.flower._deploy import (
    app_dir,
    flower_env,
    make_certificates,
    superlink_command,
    supernode_command,
    write_connection,
)
from fedtrees.federation.flower._transport import FlowerTransport

__all__ = [
    "FlowerTransport",
    "JobRunner",
    "ServerConfig",
    "app_dir",
    "flower_env",
    "make_certificates",
    "make_client_app",
    "make_server_app",
    "superlink_command",
    "supernode_command",
    "write_connection",
    "write_outputs",
]
