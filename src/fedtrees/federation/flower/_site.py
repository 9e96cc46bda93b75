"""Serving one request at a site: its data, its handlers, its kept state.

The ClientApp hands every request here, in its own process or through the site
worker (:mod:`fedtrees.federation.flower._wire`); either way the reply is the
same. The node config names the site (``client-id``) and its data file
(``data-path``, and for a CSV ``target``, ``na-values`` and ``categorical``:
:mod:`fedtrees.federation.flower._site_files`); the data is read through a per-run
cache on the SuperNode's disk (:func:`site_cache_dir`). The run config's ``job``
says which handlers to load, ``categories`` are the run's public categories
(applied to the data of every message: a new process may answer each one) and
``max-message-bytes`` bounds what the site reads and writes.

A site may declare its own privacy budget in its node config (:func:`site_budget`):
``privacy-budget``, its total ε over every DP release, and ``privacy-ledger``, the
absolute path of the file that keeps its spend across runs (a new process answers
every message, so only a file can). Every DP release is charged to it; a request
that would exceed it is refused with an error naming the budget. A malformed
declaration refuses every request, saying why.

A site's DP noise is its own (:mod:`fedtrees.federation.flower._noise`):
``noise-seed``, its secret (without it, fresh operating-system entropy), and
``noise-sampler`` come from its node config, never from the run config.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, Protocol

import pandas as pd

from fedtrees.exceptions import ValidationError
from fedtrees.federation._agreement import apply_kept_agreement
from fedtrees.federation._budget import SiteBudget
from fedtrees.federation._budget_file import BudgetFile
from fedtrees.federation._client import describe_error, refuse, serve
from fedtrees.federation._data import ClientData
from fedtrees.federation._noise import SiteNoise
from fedtrees.federation.flower._apps import declared_categories, max_message_bytes
from fedtrees.federation.flower._config import check_node_config, reports_categories
from fedtrees.federation.flower._noise import site_noise
from fedtrees.federation.flower._site_files import csv_declarations
from fedtrees.federation.flower._state import kept_state, load_state
from fedtrees.federation.flower._stopwatch import Stopwatch
from fedtrees.federation.flower._wire import SiteAnswer, SiteMessage

__all__ = [
    "BUDGET_KEY",
    "LEDGER_KEY",
    "DataLoader",
    "serve_site",
    "site_budget",
    "site_cache_dir",
]

BUDGET_KEY: Final = "privacy-budget"
"""The node config entry holding the site's total ε."""
LEDGER_KEY: Final = "privacy-ledger"
"""The node config entry naming the site's privacy ledger file (absolute path)."""


class DataLoader(Protocol):
    """Reads a site's data file, through the run's cache folder when one is given."""

    def __call__(
        self,
        path: str,
        target: str | None,
        *,
        cache_dir: Path | None,
        run_id: int,
        na_values: tuple[str, ...],
        categorical: tuple[str, ...],
    ) -> tuple[pd.DataFrame, Any]:
        """Return ``(X, y)`` of the file at ``path`` (``target``: its label column).

        ``na_values`` and ``categorical`` are the node config's declarations
        about a CSV file (:mod:`fedtrees.federation.flower._site_files`).
        """
        ...


def serve_site(
    message: SiteMessage, load_data: DataLoader, load_handlers: Callable[[str], None]
) -> SiteAnswer:
    """Answer one request from the site's data; refuse it, saying why, if needed.

    ``load_handlers(job)`` registers the payloads and handlers of the run's job
    before the request is decoded.
    """
    watch = Stopwatch()
    client = str(message.node_config.get("client-id", ""))
    try:
        check_node_config(message.node_config)
        limit = max_message_bytes(message.run_config)
        declared = declared_categories(message.run_config)
        budget = site_budget(message.node_config, client, message.run_id)
        noise = site_noise(message.node_config)
    except ValidationError as exc:  # refuse every request, saying why
        return SiteAnswer(
            refuse(message.request, client, str(exc)), dict(message.state)
        )
    load_handlers(str(message.run_config.get("job", "")))
    watch.lap("handlers")
    try:
        data = _load(load_data, client, message, budget, noise)
        data.declare_categories(declared)
        watch.lap("data")
    except Exception as exc:  # the data itself failed: say so, naming the client
        reply = refuse(
            message.request,
            client,
            f"cannot load local data: {describe_error(exc)}",
            max_message_bytes=limit,
        )
        return SiteAnswer(reply, dict(message.state))
    state = load_state(message.node_config, message.state, message.request)
    try:
        apply_kept_agreement(data, state)
    except ValidationError as exc:  # a kept agreement that no longer fits the data
        reply = refuse(message.request, client, str(exc), max_message_bytes=limit)
        return SiteAnswer(reply, dict(message.state))
    reply = serve(message.request, data, state=state, max_message_bytes=limit)
    watch.lap("serve")
    return SiteAnswer(reply, kept_state(state), watch.laps)


def _load(
    load_data: DataLoader,
    client: str,
    message: SiteMessage,
    budget: SiteBudget | None,
    noise: SiteNoise,
) -> ClientData:
    node_config = message.node_config
    path = node_config.get("data-path")
    if not client or not isinstance(path, str) or not path:
        raise ValidationError(
            'start the SuperNode with --node-config \'client-id="NAME" '
            'data-path="/path/to/data.npz"\''
        )
    target = node_config.get("target")
    declared = csv_declarations(node_config)
    X, y = load_data(
        path,
        str(target) if target else None,
        cache_dir=site_cache_dir(node_config),
        run_id=message.run_id,
        na_values=declared.na_values,
        categorical=declared.categorical,
    )
    return ClientData.build(
        client,
        X,
        y,
        budget=budget,
        noise=noise,
        reports_categories=reports_categories(node_config),
        from_file=True,
    )


def site_budget(
    node_config: Mapping[str, Any], client: str, run_id: int
) -> SiteBudget | None:
    """Return the site's privacy budget its node config declares (None: none).

    ``privacy-budget`` is the site's total ε (a number > 0, finite; a string
    holding one is accepted) and ``privacy-ledger`` the absolute path of its
    ledger file (:class:`~fedtrees.federation.BudgetFile`); each needs the
    other. Charges record ``run_id``.

    Raises
    ------
    ValidationError
        Saying which entry is wrong and how to write it.

    Examples
    --------
    >>> site_budget({"client-id": "a"}, "a", 1) is None
    True
    >>> site_budget({"privacy-budget": 3, "privacy-ledger": "/srv/a.json"}, "a", 1)
    SiteBudget(site='a', epsilon=3, store=BudgetFile)
    """
    total, ledger = node_config.get(BUDGET_KEY), node_config.get(LEDGER_KEY)
    if total is None and ledger is None:
        return None
    example = f'{BUDGET_KEY}=3.0 {LEDGER_KEY}="/var/lib/fedtrees/ledger.json"'
    if total is None or ledger is None:
        given, missing = (
            (LEDGER_KEY, BUDGET_KEY) if total is None else (BUDGET_KEY, LEDGER_KEY)
        )
        raise ValidationError(
            f"The node config gives {given} without {missing}: a site's privacy "
            f"budget needs both (--node-config '{example}'); a new process answers "
            "every message, so only the ledger file keeps the site's spend."
        )
    epsilon = _total_epsilon(total)
    if epsilon is None:
        raise ValidationError(
            f"The node config's {BUDGET_KEY} must be the site's total epsilon, a "
            f"finite number > 0 ({example}). Got {total!r} instead."
        )
    path = Path(str(ledger)).expanduser() if isinstance(ledger, str) else None
    if path is None or not path.is_absolute():
        raise ValidationError(
            f"The node config's {LEDGER_KEY} must be the absolute path of the "
            f"site's ledger file ({example}). Got {ledger!r} instead."
        )
    return SiteBudget(client, epsilon, BudgetFile(path), run=str(run_id))


def _total_epsilon(value: object) -> float | None:
    """Return the declared total as a finite float > 0 (None if it is not one)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        epsilon = float(value)
    except ValueError:
        return None
    return epsilon if math.isfinite(epsilon) and epsilon > 0 else None


def site_cache_dir(node_config: Mapping[str, Any]) -> Path | None:
    """Return the folder caching this site's prepared data per run (None: no cache).

    The node config's ``cache-dir`` (``""`` turns the cache off); by default
    ``fedtrees/site-data`` under ``$XDG_CACHE_HOME`` (else ``~/.cache``).
    """
    chosen = node_config.get("cache-dir")
    if chosen is not None:
        return Path(str(chosen)).expanduser() if str(chosen) else None
    home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(home) / "fedtrees" / "site-data"
