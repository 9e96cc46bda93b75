"""FedForest protocol v2: per-run client state is a cache, deltas are lean.

per-run client state, :mod:`fedtrees.federation._state`: results never depend on the state. A client
that loses it answers a resync and is resent the whole forest in the same round.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedtrees import FedForestClassifier, FedForestRegressor
from fedtrees.algorithms.fedforest._forest import SplitBatch, chain
from fedtrees.algorithms.fedforest._payloads import ForestState
from fedtrees.audit import find_client_values, recording
from fedtrees.federation import (
    ClientState,
    Fault,
    Federation,
    Ledger,
    Resync,
    decode,
    encode,
    encode_broadcast,
)
from fedtrees.federation._codec import Envelope
from fedtrees.tree import NodeKind

ROWS = {"a": 137, "b": 151, "c": 173}
PAPER = {"candidates": "quantile"}  # the sketch rounds (the default is "hist")


def _data(regression: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    n = sum(ROWS.values())
    X = rng.normal(size=(n, 5))
    X[:, 4] = rng.integers(0, 4, n)  # ties
    signal = X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(scale=0.3, size=n)
    y = signal if regression else (signal > 0).astype(int)
    return X, y, np.repeat(list(ROWS), list(ROWS.values()))


def _fit(
    model: FedForestClassifier | FedForestRegressor,
    faults: tuple[Fault, ...] = (),
    regression: bool = False,
) -> tuple[list[object], Ledger]:
    X, y, groups = _data(regression)
    fed = Federation.from_groups(X, y, groups, faults=faults)
    with recording() as ledgers:
        model.fit_federation(fed)
    (ledger,) = ledgers
    assert find_client_values(ledger, fed).messages == len(ledger.captured)
    return list(model.trees_), ledger


@pytest.mark.parametrize("regression", [False, True])
def test_dropping_client_state_at_random_rounds_gives_the_same_forest(
    regression: bool,
) -> None:
    make = FedForestRegressor if regression else FedForestClassifier
    params = {"n_estimators": 6, "max_depth": 5, "n_quantiles": 8, "random_state": 4}
    params["candidates"] = "quantile"  # the hist mode's own test is below
    reference, clean = _fit(make(**params), regression=regression)
    rounds = clean.rounds
    rng = np.random.default_rng(11)
    faults = tuple(
        Fault(str(client), "forget", round=int(r))
        for client, r in zip(
            rng.choice(list(ROWS), 5), rng.integers(2, rounds, 5), strict=True
        )
    )
    trees, ledger = _fit(make(**params), faults, regression)
    assert trees == reference  # bit for bit: the Tree equality compares arrays
    resent = _resyncs(ledger)
    assert resent == {(f.round, f.client) for f in faults}
    assert ledger.rounds == rounds  # a resync stays inside its round


def _resyncs(ledger: Ledger) -> set[tuple[int | None, str]]:
    """(round, client) pairs that were sent a full request after a resync."""
    out = set()
    for message in ledger.captured:
        if message.direction != "up":
            continue
        payload = decode(message.data).payload
        if isinstance(payload, Resync):
            out.add((message.round, message.client))
    return out


def test_delta_requests_carry_new_splits_only_and_are_shared() -> None:
    _, ledger = _fit(
        FedForestClassifier(
            n_estimators=4, max_depth=4, n_quantiles=8, random_state=1, **PAPER
        )
    )
    sent: list[int] = []
    by_round: dict[tuple[int, bytes], set[bytes]] = {}
    deltas: dict[int, set[tuple[str, str, bytes]]] = {}
    for message in ledger.captured:
        if message.direction != "down" or message.round == 0:
            continue
        request = decode(message.data).payload
        assert request is not None
        full = bool(request.full)  # type: ignore[attr-defined]
        assert full == (message.round == 1)  # the first request only
        if message.client == "a":
            sent.extend(request.split_node.tolist())  # type: ignore[attr-defined]
        anonymous = Envelope("request", message.round, "", request.kind, request)
        nodes = request.open_nodes.tobytes()  # type: ignore[attr-defined]
        if message.kind == "fedforest.sketch":  # evaluations: per-client candidates
            by_round.setdefault((message.round, nodes), set()).add(encode(anonymous))
        delta = (request.base, request.digest, request.split_node.tobytes())  # type: ignore[attr-defined]
        deltas.setdefault(message.round, set()).add(delta)
    final = FedForestClassifier(
        n_estimators=4, max_depth=4, n_quantiles=8, random_state=1, **PAPER
    )
    trees, _ = _fit(final)
    # Every split travels once, in id order, except the last level's: no
    # request follows them (a forest of depth 4 sends the splits of depths 0-2).
    assert sent == sorted(set(sent))
    assert len(sent) == sum(_splits_above(t, depth=3) for t in trees)
    # every client of a round gets the same delta; clients asked to sketch the
    # same nodes get the same bytes, up to the client id
    assert all(len(d) == 1 for r, d in deltas.items() if r > 1)
    assert all(len(b) == 1 for (r, _), b in by_round.items() if r > 1)


def test_bytes_per_client_follow_its_rows_not_the_number_of_clients() -> None:
    """The same 1,200 rows as 4 or as 24 clients: each client moves less."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(1200, 5))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    per_client = {}
    for k in (4, 24):
        groups = np.arange(1200) % k
        model = FedForestClassifier(
            n_estimators=10, max_depth=6, random_state=0, **PAPER
        )
        ledger = model.fit(X, y, groups=groups).communication_.to_frame()
        moved = ledger[ledger["round"] > 0].groupby("client")[
            ["bytes_down", "bytes_up"]
        ]
        per_client[k] = moved.sum().sum(axis=1).mean()
    assert per_client[24] < 0.5 * per_client[4]


def _splits_above(tree: object, depth: int) -> int:
    """Split nodes of ``tree`` at depth < ``depth`` (children listed per kind)."""
    kind, left, right = tree.kind, tree.left, tree.right  # type: ignore[attr-defined]
    ptr, child = tree.branch_ptr, tree.branch_child  # type: ignore[attr-defined]
    count, level = 0, [0]
    for _ in range(depth):
        nxt = []
        for g in level:
            if kind[g] == NodeKind.LEAF:
                continue
            count += 1
            kids = {int(left[g]), int(right[g]), *child[ptr[g] : ptr[g + 1]].tolist()}
            nxt.extend(k for k in kids if k >= 0)
        level = nxt
    return count


def test_encode_broadcast_equals_encoding_each_client() -> None:
    state = ForestState(
        fit_id=1,
        digest="x",
        seed=2,
        bootstrap=True,
        task="classification",
        target="label",
        classes=np.array(["no", "yes"]),
        holdout=0.0,
        client_code=0,
        participation=np.ones(3, bool),
        node_tree=np.arange(3),
        node_feature=np.full(3, -1),
        node_threshold=np.full(3, np.nan),
        node_left=np.full(3, -1),
        node_right=np.full(3, -1),
        set_ptr=np.zeros(4, np.int64),
        set_codes=np.zeros(0, np.int64),
        node_missing=np.zeros(3, bool),
    )
    shared = encode_broadcast("request", 7, ["a", "bb", "c c"], state)
    for client, data in shared.items():
        assert data == encode(Envelope("request", 7, client, state.kind, state))


def test_a_client_with_another_version_asks_for_a_resync() -> None:
    from fedtrees.algorithms.fedforest import _client, _handlers

    X, y, groups = _data()
    fed = Federation.from_groups(X, y, groups)
    model = FedForestClassifier(n_estimators=2, max_depth=3, random_state=0, **PAPER)
    with recording() as ledgers:
        model.fit_federation(fed)
    (ledger,) = ledgers
    requests = [
        decode(m.data).payload
        for m in ledger.captured
        if m.direction == "down" and m.client == "a" and m.round > 1
    ]
    data = fed.transport._clients["a"]  # type: ignore[attr-defined]
    fresh = ClientState()
    assert isinstance(_handlers.sketch(requests[0], data, fresh), Resync)
    # a digest that does not follow from the batch is refused the same way
    first = next(
        decode(m.data).payload
        for m in ledger.captured
        if m.direction == "down" and m.client == "a" and m.round == 1
    )
    state = ClientState()
    assert not isinstance(_handlers.sketch(first, data, state), Resync)
    kept = state.get(_client.STATE_KEY, ForestState)
    assert kept is not None
    assert kept.digest == first.digest  # type: ignore[union-attr]
    batch = SplitBatch.of(requests[1])  # type: ignore[arg-type]
    assert chain(kept.digest, batch) == requests[1].digest or batch.size == 0  # type: ignore[union-attr]


def test_non_finite_candidates_are_refused_by_field() -> None:
    """The compiled bin search relies on this: checked first."""
    from fedtrees.algorithms.fedforest import _answers
    from fedtrees.exceptions import ValidationError

    _answers.check_finite(np.array([1.0, 2.0, 0.5, 3.0]))
    with pytest.raises(ValidationError, match="thresholds"):
        _answers.check_finite(np.array([1.0, np.nan, 0.5, 3.0]))


def test_every_request_kind_has_its_handler_registered() -> None:
    """Registration is explicit: the package's HANDLERS, one per request kind,
    are the handlers the client dispatches to."""
    from fedtrees.algorithms.fedforest import (
        HANDLERS,
        _class_counts,
        _hist_payloads,
        _oob,
        _payloads,
        _sketch_payloads,
    )
    from fedtrees.federation._client import _HANDLERS

    requests = {
        cls.kind
        for module in (_payloads, _sketch_payloads, _hist_payloads, _class_counts, _oob)
        for cls in vars(module).values()
        if isinstance(cls, type)
        and issubclass(cls, _payloads.LevelFields)
        and cls is not _payloads.LevelFields
    }
    assert set(HANDLERS) == requests
    assert all(_HANDLERS[kind] is answer for kind, answer in HANDLERS.items())


@pytest.mark.parametrize("regression", [False, True])
def test_hist_mode_survives_lost_state_and_sends_the_grid_once(
    regression: bool,
) -> None:
    # The regressor considers every feature: its levels use subtraction. Fewer
    # bins than rows: the grid replies are sketches, not whole columns (audit).
    make = FedForestRegressor if regression else FedForestClassifier
    params = {"n_estimators": 4, "max_depth": 4, "candidates": "hist", "max_bins": 32}
    reference, clean = _fit(make(**params, random_state=2), regression=regression)
    faults = (Fault("b", "forget", round=3), Fault("c", "forget", round=5))
    trees, ledger = _fit(make(**params, random_state=2), faults, regression)
    assert trees == reference
    assert _resyncs(ledger) == {(3, "b"), (5, "c")}  # the grid travels again
    grids = [
        (m.round, m.client)
        for m in clean.captured
        if m.direction == "down"
        and m.kind == "fedforest.histogram"
        and decode(m.data).payload.grid_edge_ptr.size  # type: ignore[union-attr]
    ]
    assert sorted(grids) == [(2, c) for c in sorted(ROWS)]  # once, after round 1
