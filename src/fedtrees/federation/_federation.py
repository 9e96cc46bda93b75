"""``Federation``: a set of clients behind one transport.

In process, :meth:`Federation.from_groups` and :meth:`Federation.from_clients`
give every client its own :class:`ClientData` behind an
:class:`InProcessTransport`; a Flower deployment builds one around its own
transport. Client ids are strings: the group values, or the names given.

A federation may carry a declaration of categories (``categories=``: column ->
category names, public metadata): its runs send the declared lists down at the
agreement instead of collecting each client's values
(:mod:`fedtrees.federation._schema`).

In process, the sites may declare their own privacy budgets
(``privacy_budget=``, the total ε of each site, and ``privacy_ledger=``, the file
keeping every site's spend across runs and processes;
:mod:`fedtrees.federation._budget`). Without a ledger file the spend lives as
long as the federation object.

In process, the sites' DP noise is theirs too (:class:`SiteNoise`): by default
fresh operating-system entropy for every release, so a DP fit is not reproducible
by ``random_state`` alone; ``noise_seed=`` gives the simulated sites a secret from
which each site keys its noise (by its own id, rows and request), so the one who
plays the sites can reproduce a fit, and ``noise_sampler=`` their Laplace sampler.
Neither ever travels: no request names the sampler or the seed.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd

from fedtrees._validation import (
    check_bool,
    check_client_id,
    check_int,
    label_array,
    shown,
)
from fedtrees.exceptions import ValidationError
from fedtrees.federation._budget import BudgetStore, MemoryBudgetStore, SiteBudget
from fedtrees.federation._budget_file import BudgetFile
from fedtrees.federation._codec import MAX_MESSAGE_BYTES
from fedtrees.federation._data import (
    ClientData,
    DeclaredCategories,
    as_frame,
    check_categories,
    check_classes,
)
from fedtrees.federation._driver import RoundCallback, RunResult, ServerStrategy, run
from fedtrees.federation._ledger import Ledger
from fedtrees.federation._noise import SiteNoise, check_noise
from fedtrees.federation._schema import Task
from fedtrees.federation._transport import Fault, InProcessTransport, Transport

__all__ = ["Federation"]

T = TypeVar("T")


class Federation:
    """Clients reachable through one transport.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(12.0).reshape(6, 2)
    >>> sites = ["b", "a", "b", "a", "b", "a"]
    >>> fed = Federation.from_groups(X, [0, 1, 0, 1, 1, 0], sites)
    >>> fed.clients
    ('a', 'b')
    >>> fed.with_categories({"x0": ["0.0", "2.0"]}).categories
    {'x0': ('0.0', '2.0')}

    ``categories`` declares the categories of columns (column -> names, in code
    order) as public metadata: no client sends its values of those columns at the
    agreement (:func:`fedtrees.federation.run`). ``classes`` declares the class
    labels likewise: no client sends its label set (classification).

    Undeclared categorical columns whose lists differ between clients agree on
    their union, sorted by text (docs/runtime.md); with
    ``require_declared_categories=True`` every categorical column must be
    declared instead, and a client holding an undeclared one fails the
    agreement, naming itself and the column, never a value.

    ``max_message_bytes`` is the longest reply the server accepts from a client,
    in bytes, checked before decoding (default 128 MiB); every run on this
    federation uses it unless :meth:`run` is given another.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        categories: Mapping[str, Sequence[str]] | None = None,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        classes: Sequence[object] | None = None,
        require_declared_categories: bool = False,
    ) -> None:
        self.transport = transport
        self.categories: DeclaredCategories = check_categories(categories, "Federation")
        self.require_declared_categories = check_bool(
            require_declared_categories, "require_declared_categories", "Federation"
        )
        self.classes = check_classes(classes, "Federation")
        self.max_message_bytes = check_int(
            max_message_bytes, "max_message_bytes", "Federation", min_value=1
        )

    def with_categories(
        self, categories: Mapping[str, Sequence[str]] | None
    ) -> Federation:
        """Return a federation over the same transport declaring ``categories``.

        It replaces this federation's declaration (None declares nothing).
        """
        clone = copy.copy(self)
        clone.categories = check_categories(categories, "Federation.with_categories")
        return clone

    def with_classes(self, classes: Sequence[object] | None) -> Federation:
        """Return a federation over the same transport declaring the class labels.

        It replaces this federation's declaration (None declares nothing).
        """
        clone = copy.copy(self)
        clone.classes = check_classes(classes, "Federation.with_classes")
        return clone

    @property
    def clients(self) -> tuple[str, ...]:
        """Client ids."""
        return self.transport.client_ids()

    @classmethod
    def from_groups(
        cls,
        X: object,
        y: npt.ArrayLike,
        groups: npt.ArrayLike,
        *,
        sample_weight: npt.ArrayLike | None = None,
        workers: int = 1,
        faults: Sequence[Fault] = (),
        categories: Mapping[str, Sequence[str]] | None = None,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        privacy_budget: float | Mapping[str, float] | None = None,
        privacy_ledger: str | os.PathLike[str] | None = None,
        noise_seed: int | None = None,
        noise_sampler: str = "numpy",
        require_declared_categories: bool = False,
    ) -> Federation:
        """Build one in-process client per distinct value of ``groups``.

        ``max_message_bytes``: as in :class:`Federation`.

        Client ids are ``str`` of the group values; values that collide once
        written as strings (``1`` and ``"1"``, or ``1`` and ``1.0``) are refused.
        ``categories`` is the
        declaration its runs send (its columns must be columns of ``X``).

        ``privacy_budget`` is every site's total ε over all its DP releases (a
        float), or some sites' (client id -> float; the others have none), and
        ``privacy_ledger`` the file keeping their spend across runs (default:
        kept by this federation only). A DP request that would exceed a site's
        budget is refused with an error naming it (:class:`SiteBudget`).

        ``noise_seed`` is the simulated sites' secret noise seed (an int >= 0;
        None, the default, draws every release's noise from fresh
        operating-system entropy) and ``noise_sampler`` their Laplace sampler
        ("numpy" or "opendp", which cannot be seeded): see :class:`SiteNoise`.
        Each site keys its noise by the seed, its own id, its rows and the
        request, so the same seed and data reproduce a DP fit.
        """
        frame = as_frame(X, "Federation.from_groups")
        declared = _declared_columns_of(
            categories, frame.columns, "Federation.from_groups"
        )
        numeric = [
            c for c in declared if not isinstance(frame[c].dtype, pd.CategoricalDtype)
        ]
        if numeric:
            raise ValidationError(
                f"Federation.from_groups: categories are declared for column "
                f"{numeric[0]!r}, which is numeric in X; make it a pandas category "
                "or string column."
            )
        target = label_array(y)
        keys = pd.Series(np.asarray(groups, dtype=object))
        if keys.shape[0] != frame.shape[0] or target.shape[0] != frame.shape[0]:
            raise ValidationError(
                f"Federation.from_groups: X has {frame.shape[0]} rows, y has "
                f"{target.shape[0]} and groups has {keys.shape[0]}; they must match."
            )
        if keys.isna().any():
            raise ValidationError(
                "Federation.from_groups: groups holds missing values."
            )
        ids = _client_ids(keys, "Federation.from_groups", "groups values", "groups")
        codes, names = pd.factorize(ids, sort=True)
        weights = (
            None if sample_weight is None else np.asarray(sample_weight, np.float64)
        )
        if weights is not None and weights.shape != (frame.shape[0],):
            raise ValidationError(
                f"Federation.from_groups: sample_weight has shape {weights.shape}; "
                f"({frame.shape[0]},) expected."
            )
        budgets = _site_budgets(
            [str(n) for n in names],
            privacy_budget,
            privacy_ledger,
            "Federation.from_groups",
        )
        noise = _site_noise(noise_seed, noise_sampler, "Federation.from_groups")
        clients = {}
        for k, name in enumerate(names):
            rows = codes == k
            part = None if weights is None else weights[rows]
            clients[str(name)] = ClientData.build(
                str(name),
                frame[rows],
                target[rows],
                part,
                budget=budgets[str(name)],
                noise=noise,
            )
        return cls(
            InProcessTransport(clients, workers=workers, faults=faults),
            categories=declared,
            max_message_bytes=max_message_bytes,
            require_declared_categories=require_declared_categories,
        )

    @classmethod
    def from_clients(
        cls,
        clients: Sequence[tuple[object, npt.ArrayLike]]
        | Mapping[str, tuple[object, npt.ArrayLike]],
        *,
        workers: int = 1,
        faults: Sequence[Fault] = (),
        categories: Mapping[str, Sequence[str]] | None = None,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        privacy_budget: float | Mapping[str, float] | None = None,
        privacy_ledger: str | os.PathLike[str] | None = None,
        noise_seed: int | None = None,
        noise_sampler: str = "numpy",
        require_declared_categories: bool = False,
    ) -> Federation:
        """Build one in-process client per ``(X, y)``.

        ``max_message_bytes``: as in :class:`Federation`; ``privacy_budget``,
        ``privacy_ledger``, ``noise_seed`` and ``noise_sampler``: as in
        :meth:`from_groups`.

        Client ids are ``"0", "1", ...`` for a sequence, or ``str`` of the
        mapping's keys; keys that collide once written as strings (``1`` and
        ``"1"``) are refused, as in :meth:`from_groups`.
        ``categories`` is the declaration its runs send (its columns must be
        columns of some client; each client checks its own at the agreement);
        clients whose other categorical columns hold other categories agree on
        their union, unless ``require_declared_categories`` (see
        :class:`Federation`).
        """
        keys = list(clients) if isinstance(clients, Mapping) else range(len(clients))
        values = list(clients.values() if isinstance(clients, Mapping) else clients)
        if not values:
            raise ValidationError("Federation.from_clients needs at least one client.")
        ids = _client_ids(
            pd.Series(list(keys), dtype=object),
            "Federation.from_clients",
            "keys",
            "clients",
        )
        items = list(zip(ids.tolist(), values, strict=True))
        budgets = _site_budgets(
            [name for name, _ in items],
            privacy_budget,
            privacy_ledger,
            "Federation.from_clients",
        )
        noise = _site_noise(noise_seed, noise_sampler, "Federation.from_clients")
        data = {
            name: ClientData.build(name, X, y, budget=budgets[name], noise=noise)
            for name, (X, y) in items
        }
        columns = {str(c) for client in data.values() for c in client.X.columns}
        declared = _declared_columns_of(categories, columns, "Federation.from_clients")
        return cls(
            InProcessTransport(data, workers=workers, faults=faults),
            categories=declared,
            max_message_bytes=max_message_bytes,
            require_declared_categories=require_declared_categories,
        )

    def run(
        self,
        strategy: ServerStrategy,
        *,
        task: Task,
        timeout: float = 60.0,
        min_clients: int = 1,
        callbacks: Sequence[RoundCallback] = (),
        ledger: Ledger | None = None,
        max_message_bytes: int | None = None,
    ) -> RunResult:
        """Run ``strategy`` on these clients (see :func:`fedtrees.federation.run`).

        ``max_message_bytes`` defaults to this federation's.
        """
        return run(
            strategy,
            self.transport,
            task=task,
            timeout=timeout,
            min_clients=min_clients,
            callbacks=callbacks,
            ledger=ledger,
            categories=self.categories,
            classes=self.classes,
            require_declared_categories=self.require_declared_categories,
            max_message_bytes=self.max_message_bytes
            if max_message_bytes is None
            else max_message_bytes,
        )

    def on_each_site(self, function: Callable[[ClientData], T]) -> dict[str, T]:
        """Run ``function`` at every in-process site, for that site's own use.

        What a site computes for itself — its personal model, say — does not
        travel: nothing is encoded, sent or counted, because nothing leaves the
        site. Only in-process federations allow it (the caller owns every site);
        on Flower each site computes its own model on its own machine.
        """
        local: Any = getattr(self.transport, "on_each_site", None)
        if local is None:
            raise ValidationError(
                f"{type(self.transport).__name__}: the sites compute their own "
                "models on their own machines; on_each_site is for in-process "
                "federations."
            )
        result: dict[str, T] = local(function)
        return result

    def __repr__(self) -> str:
        kind = type(self.transport).__name__
        declared = f", categories={list(self.categories)}" if self.categories else ""
        return f"Federation(clients={list(self.clients)}, transport={kind}{declared})"

    def row_counts(self) -> dict[str, int]:
        """Rows per client, for in-process federations (audits and tests only)."""
        counts: Any = getattr(self.transport, "row_counts", None)
        if counts is None:
            raise ValidationError(
                f"{type(self.transport).__name__} does not reveal row counts."
            )
        result: dict[str, int] = counts()
        return result


def _client_ids(keys: pd.Series, owner: str, what: str, name: str) -> pd.Series:
    """Return every key as its client id (``str``); refuse ids that collide.

    The one rule of both constructors: distinct keys that print alike (``1`` and
    ``"1"``) would merge two clients into one, and equal keys that print
    differently (``1`` and ``1.0``, one group to pandas) would split one; either
    is a :class:`ValidationError` naming ``owner`` and the two keys. An id
    longer than :data:`~fedtrees._validation.MAX_CLIENT_ID_CHARS` characters is
    refused, naming the parameter ``name`` (:func:`check_client_id`).
    """
    unique = pd.unique(keys.to_numpy(dtype=object))
    for key in unique:
        check_client_id(key, name, owner)
    ids = keys.astype(str)
    n_values = len(unique)
    if n_values != len(pd.unique(ids.to_numpy(dtype=object))):
        raise ValidationError(
            f"{owner}: the {what} {_collision(keys.tolist(), ids.tolist())}; give "
            "every client one id that no other key prints as."
        )
    return ids


def _collision(keys: list[object], ids: list[str]) -> str:
    """Describe two keys whose ids collide (:func:`_client_ids` found some)."""
    by_id: dict[str, object] = {}
    by_value: dict[object, object] = {}
    for key, name in zip(keys, ids, strict=True):
        other = by_id.setdefault(name, key)
        if other != key or type(other) is not type(key):
            return (
                f"{shown(other)} and {shown(key)} are distinct but both become "
                f"client {shown(name)}"
            )
        other = by_value.setdefault(key, key)
        if str(other) != name:
            return (
                f"{shown(other)} and {shown(key)} are equal but become two clients, "
                f"{shown(str(other))} and {shown(name)}"
            )
    raise AssertionError("no colliding client ids")  # pragma: no cover


def _declared_columns_of(
    categories: Mapping[str, Sequence[str]] | None,
    columns: Iterable[object],
    owner: str,
) -> DeclaredCategories:
    """Validate a declaration against the known columns, before any message."""
    declared = check_categories(categories, owner)
    known = {str(c) for c in columns}
    unknown = [c for c in declared if c not in known]
    if unknown:
        raise ValidationError(
            f"{owner}: categories are declared for column {unknown[0]!r}, which X "
            f"does not have (its columns: {sorted(known)})."
        )
    return declared


def _site_budgets(
    sites: Sequence[str],
    privacy_budget: float | Mapping[str, float] | None,
    privacy_ledger: str | os.PathLike[str] | None,
    owner: str,
) -> dict[str, SiteBudget | None]:
    """Every site's budget (None: none declared), sharing one store."""
    if privacy_budget is None:
        if privacy_ledger is not None:
            raise ValidationError(
                f"{owner}: privacy_ledger is given without privacy_budget; declare "
                "the sites' total epsilon (privacy_budget=...) to keep a ledger."
            )
        return dict.fromkeys(sites)
    totals = (
        {str(k): v for k, v in privacy_budget.items()}
        if isinstance(privacy_budget, Mapping)
        else dict.fromkeys(sites, privacy_budget)
    )
    unknown = sorted(set(totals) - set(sites))
    if unknown:
        raise ValidationError(
            f"{owner}: privacy_budget names sites {unknown} that are not clients "
            f"(the clients: {sorted(sites)})."
        )
    store: BudgetStore = (
        MemoryBudgetStore() if privacy_ledger is None else BudgetFile(privacy_ledger)
    )
    return {
        site: None if site not in totals else _budget(site, totals[site], store, owner)
        for site in sites
    }


def _budget(site: str, total: object, store: BudgetStore, owner: str) -> SiteBudget:
    try:
        return SiteBudget(site, total, store)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise ValidationError(
            f"{owner}: the privacy_budget of site {site!r} must be a finite "
            f"epsilon > 0; got {total!r}."
        ) from exc


def _site_noise(seed: object, sampler: object, owner: str) -> SiteNoise:
    """Return the simulated sites' noise source (errors name ``owner``'s keywords)."""
    checked = check_noise(sampler, seed, owner, ("noise_sampler", "noise_seed"))
    return SiteNoise(sampler, checked)  # type: ignore[arg-type]
