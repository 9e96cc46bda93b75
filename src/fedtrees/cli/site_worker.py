"""A SuperNode with its site worker: ``python -m fedtrees.cli.site_worker``.

    python -m fedtrees.cli.site_worker flower-supernode --superlink HOST:PORT ...

starts this site's worker, then replaces itself with the SuperNode command it is
given, the worker's socket added to the node config
(:func:`fedtrees.federation.flower._worker.launch`); ``fedtrees flower
supernode`` runs it. ``--serve SOCKET PARENT_FD READY_FD`` is the worker itself:
it keeps fedtrees, the compiled kernels and every job's handlers loaded, and
serves the messages its SuperNode's ClientApps hand it (docs/flower.md).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from fedtrees.cli.flower_app import serve_here, warm_up

__all__ = ["main", "with_site_worker"]

SERVE = "--serve"
_LAUNCHER = (sys.executable, "-m", "fedtrees.cli.site_worker")


def with_site_worker(supernode: Sequence[str]) -> list[str]:
    """Return the command that starts ``supernode`` with a site worker beside it.

    Examples
    --------
    >>> with_site_worker(["flower-supernode", "--insecure"])[-2:]
    ['flower-supernode', '--insecure']
    """
    return [*_LAUNCHER, *supernode]


def main(argv: Sequence[str]) -> None:
    """Launch a SuperNode with its worker, or (``--serve``) be the worker."""
    from fedtrees.exceptions import ValidationError
    from fedtrees.federation.flower import launch, serve_forever

    if not argv:
        raise SystemExit(
            "usage: python -m fedtrees.cli.site_worker FLOWER-SUPERNODE-COMMAND ..."
        )
    if argv[:1] == [SERVE]:
        path, parent, ready = argv[1], int(argv[2]), int(argv[3])
        serve_forever(path, parent, ready, serve_here, warm_up)
        return
    try:
        launch(argv, [*_LAUNCHER, SERVE])
    except ValidationError as exc:
        raise SystemExit(f"fedtrees: {exc}") from exc


if __name__ == "__main__":
    main(sys.argv[1:])
