"""Secure aggregation in FedForest hist mode: what it must show (docs/security.md).

(a) the model equals the plain run's (classification bit for bit with declared
edges, regression to fixed-point precision); (b) the ledger and the value audit
see masked replies in every histogram and grid round; (c) the server's state
never holds one site's statistics; (d) a dropout after masking is recovered
(``federation.reveal``) and gives the plain dropout's model; (e) bad input is
refused by name.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from fedtrees.algorithms import FedForestClassifier, FedForestRegressor
from fedtrees.algorithms.fedforest import _hist_handlers
from fedtrees.algorithms.fedforest._strategy import FedForestStrategy
from fedtrees.audit import find_client_values, recording
from fedtrees.exceptions import (
    ClientDropoutWarning,
    RemoteProtocolError,
    ValidationError,
)
from fedtrees.federation import (
    Fault,
    Federation,
    Ledger,
    MaskedReply,
    Payload,
    decode,
    masked_reply,
    to_fixed,
)

N_FEATURES = 6
EDGES: dict[object, object] = {j: np.linspace(-3, 3, 40) for j in range(N_FEATURES)}
RANGES = dict.fromkeys(range(N_FEATURES), (-8.0, 8.0))
SIZES = {"a": 70, "b": 18, "c": 45, "d": 9, "e": 33}  # skewed sizes
FOREST: dict[str, Any] = {"n_estimators": 5, "max_depth": 5, "random_state": 0}


def _data(task: str = "classification") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Five sites, each shifted and with its own class mix; about 5 % NaN."""
    rng = np.random.default_rng(11)
    X, y, site = [], [], []
    for k, (name, n) in enumerate(SIZES.items()):
        shift = np.linspace(-1.0, 1.0, N_FEATURES) * (k - 2) / 2
        Xk = rng.normal(shift, 1.0 + 0.2 * k, size=(n, N_FEATURES))
        score = Xk[:, 0] - 0.7 * Xk[:, 2] + 0.5 * Xk[:, 4] * Xk[:, 1]
        yk: np.ndarray
        if task == "classification":
            yk = np.digitize(score + 0.4 * rng.normal(size=n), [-0.8 + 0.3 * k, 0.9])
        else:
            yk = score + 0.1 * rng.normal(size=n)
        Xk[rng.random(Xk.shape) < 0.05] = np.nan
        X.append(Xk)
        y.append(yk)
        site += [name] * n
    return np.vstack(X), np.concatenate(y), np.asarray(site)


X_CLS, Y_CLS, SITE = _data()
X_REG, Y_REG, _ = _data("regression")


def _fit_edges(secure: bool, **kw: Any) -> FedForestClassifier:
    """Fit with every column's edges declared (no grid round)."""
    model = FedForestClassifier(
        **FOREST, secure_aggregation=secure, bin_edges=EDGES, **kw
    )
    model.fit(X_CLS, Y_CLS, groups=SITE)
    return model


def _same_trees(one: Any, two: Any) -> None:
    assert len(one.trees_) == len(two.trees_)
    for t1, t2 in zip(one.trees_, two.trees_, strict=True):
        assert t1 == t2


Fitted = tuple[FedForestClassifier, FedForestClassifier, Ledger]


@pytest.fixture(scope="module")
def secure_and_plain() -> Fitted:
    """The secure fit, the plain one, and the secure fit's messages."""
    with recording() as ledgers:
        secure = _fit_edges(True)
    return secure, _fit_edges(False), ledgers[0]


# -- (a) the model is the plain run's ------------------------------------------------
def test_secure_classifier_equals_the_plain_one_bit_for_bit(
    secure_and_plain: Fitted,
) -> None:
    secure, plain, _ = secure_and_plain
    assert np.isnan(X_CLS).any()
    assert sum(t.n_nodes for t in secure.trees_) > 5 * 7  # real trees, not stumps
    _same_trees(secure, plain)
    assert np.array_equal(secure.predict_proba(X_CLS), plain.predict_proba(X_CLS))


def test_secure_classifier_with_feature_ranges_cuts_a_grid_of_at_most_max_bins() -> (
    None
):
    model = FedForestClassifier(
        **FOREST, secure_aggregation=True, feature_ranges=RANGES, max_bins=16
    ).fit(X_CLS, Y_CLS, groups=SITE)
    assert len(model.bin_edges_) == N_FEATURES
    for edges in model.bin_edges_:
        assert edges is not None
        assert 2 <= edges.shape[0] + 1 <= 16  # bins: the edges cut the line
        assert np.all(np.diff(edges) > 0)
        assert np.all((edges > -8.0) & (edges < 8.0))
    # the grid round is masked too: it and every level
    assert 1 in model.communication_.masked_rounds
    assert model.score(X_CLS, Y_CLS) > 0.6


def _regressors(y: np.ndarray, **kw: Any) -> tuple[Any, Any]:
    def fit(secure: bool) -> FedForestRegressor:
        model = FedForestRegressor(
            **{**FOREST, **kw}, secure_aggregation=secure, bin_edges=EDGES
        )
        model.fit(X_REG, y, groups=SITE)
        return model

    return fit(True), fit(False)


@pytest.mark.parametrize("seed", [0, 1])
def test_secure_regressor_is_the_plain_one_to_fixed_point_precision(
    seed: int,
) -> None:
    # Leaves of 8 rows: in a node of a few rows two features often cut the same
    # rows, with gains equal in exact arithmetic; the last bits (float sums in the
    # plain run, sums rounded to 2^-32 in the secure one) then pick the feature,
    # and the two runs may pick differently (not an error of either).
    secure, plain = _regressors(Y_REG, random_state=seed, min_samples_leaf=8)
    for t1, t2 in zip(secure.trees_, plain.trees_, strict=True):
        assert np.array_equal(t1.feature, t2.feature)
        assert np.array_equal(t1.threshold, t2.threshold, equal_nan=True)
        assert np.array_equal(t1.left, t2.left)
        assert np.array_equal(t1.count, t2.count)  # bootstrap counts: exact
        np.testing.assert_allclose(t1.value, t2.value, rtol=0, atol=1e-8)
    np.testing.assert_allclose(
        secure.predict(X_REG), plain.predict(X_REG), rtol=0, atol=1e-8
    )
    assert secure.communication_.summary()["masked_rounds"] == FOREST["max_depth"]


def test_secure_regressor_is_the_plain_one_when_the_targets_are_fixed_point() -> None:
    # Targets on a 2^-10 grid: every moment is a multiple of 2^-32, so nothing
    # is rounded and the secure forest is the plain one bit for bit.
    y = np.round(Y_REG * 2**10) / 2**10
    secure, plain = _regressors(y)
    _same_trees(secure, plain)
    assert np.array_equal(secure.predict(X_REG), plain.predict(X_REG))


def test_secure_regressor_takes_large_targets_in_wide_fixed_point() -> None:
    # Σw·y² of a node reaches ~1e12 here, far beyond one word's 2^30/K: the
    # moments travel in two words each and the forest is still the plain one.
    secure, plain = _regressors(Y_REG * 1e5 + 3e4, min_samples_leaf=8)
    for t1, t2 in zip(secure.trees_, plain.trees_, strict=True):
        assert np.array_equal(t1.feature, t2.feature)
        assert np.array_equal(t1.threshold, t2.threshold, equal_nan=True)
    np.testing.assert_allclose(
        secure.predict(X_REG), plain.predict(X_REG), rtol=1e-12, atol=1e-6
    )


# -- (b) the ledger and the audit ----------------------------------------------------
def test_every_reply_of_a_masked_round_is_a_masked_reply(
    secure_and_plain: Fitted,
) -> None:
    _, _, ledger = secure_and_plain
    rounds = {m.round for m in ledger.captured if m.kind == "fedforest.histogram"}
    assert rounds == set(range(1, FOREST["max_depth"] + 1))  # no grid round here
    assert ledger.masked_rounds == rounds
    assert ledger.summary()["masked_rounds"] == len(rounds)
    frame = ledger.to_frame()
    assert frame["masked"].tolist() == (frame["round"] >= 1).tolist()
    kinds: dict[int, set[str]] = {}
    for m in ledger.captured:
        if m.direction == "up":
            envelope = decode(m.data)
            assert envelope.payload is not None
            kinds.setdefault(m.round, set()).add(envelope.payload.kind)
    assert kinds[0] == {"federation.schema_reply"}
    for r in rounds:
        assert kinds[r] == {"federation.masked_reply"}, r


def test_the_audit_passes_and_tells_masked_from_plain_replies(
    secure_and_plain: Fitted,
) -> None:
    _, _, ledger = secure_and_plain
    fed = Federation.from_groups(X_CLS, Y_CLS, SITE)
    report = find_client_values(ledger, fed)
    assert not report.findings
    assert report.masked_replies == len(SIZES) * FOREST["max_depth"]
    assert report.plain_replies == len(SIZES)  # the schema replies of round 0
    # and a plain run has no masked reply
    with recording() as ledgers:
        _fit_edges(False)
    plain = find_client_values(ledgers[0], fed)
    assert plain.masked_replies == 0
    assert plain.plain_replies == len(ledgers[0].captured) // 2
    merged = report.merge(plain)
    assert merged.masked_replies == report.masked_replies
    assert merged.plain_replies == report.plain_replies + plain.plain_replies


# -- (c) the server never holds one site's statistics --------------------------------
def _arrays(root: object) -> Iterator[np.ndarray]:
    """Every numpy array reachable from ``root`` (attributes, containers; no cycles)."""
    seen: set[int] = set()
    todo: list[object] = [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or obj is None:
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            if obj.dtype == object:
                todo.extend(obj.ravel().tolist())
            else:
                yield obj
        elif isinstance(obj, (str, bytes, int, float, bool, np.generic, type)):
            continue
        elif isinstance(obj, dict):
            todo.extend(obj.keys())
            todo.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            todo.extend(obj)
        elif callable(obj) and not hasattr(obj, "__dict__"):
            continue
        else:
            if dataclasses.is_dataclass(obj):
                todo.extend(getattr(obj, f.name) for f in dataclasses.fields(obj))
            todo.extend(getattr(obj, "__dict__", {}).values())
            for name in getattr(type(obj), "__slots__", ()):
                todo.append(getattr(obj, name, None))


def _found(root: object, needles: list[np.ndarray]) -> list[np.ndarray]:
    """The arrays of ``root`` equal (same shape, same values) to a needle."""
    by_shape: dict[tuple[int, ...], list[np.ndarray]] = {}
    for n in needles:
        by_shape.setdefault(n.shape, []).append(n)
    out = []
    for a in _arrays(root):
        if a.dtype.kind not in "biuf" or a.size < 2:
            continue
        for n in by_shape.get(a.shape, ()):
            if n.dtype.kind == "u" and a.dtype.kind == "u":  # words: exact
                hit = np.array_equal(a, n)
            else:
                hit = np.array_equal(a.astype(np.float64), n.astype(np.float64))
            if hit:
                out.append(a)
    return out


@contextmanager
def _site_vectors() -> Iterator[list[tuple[str, Any, np.ndarray]]]:
    """Capture, at each site, the plain vector it masks (test only)."""
    got: list[tuple[str, Any, np.ndarray]] = []
    original = masked_reply  # the handlers' own (fedtrees.federation's)

    def spy(
        request: Any, data: Any, state: Any, values: np.ndarray, *, wide: bool = False
    ) -> MaskedReply:
        got.append((data.client_id, request, np.array(values, dtype=np.float64)))
        return original(request, data, state, values, wide=wide)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_hist_handlers, "masked_reply", spy)
        yield got


def _run(secure: bool, **kw: Any) -> tuple[FedForestStrategy, Ledger]:
    config = FedForestClassifier(**FOREST, secure_aggregation=secure, **kw)._config()
    strategy = FedForestStrategy(config)
    ledger = Ledger(keep_messages=True)
    Federation.from_groups(X_CLS, Y_CLS, SITE).run(
        strategy, task="classification", ledger=ledger
    )
    return strategy, ledger


def _needles(vectors: list[tuple[str, Any, np.ndarray]]) -> list[np.ndarray]:
    """Each site's vector, its node statistics and its fixed-point words.

    A vector equal to its round's sum (the other sites hold nothing there) is
    what the sum reveals by design: left out.
    """
    totals: dict[int, np.ndarray] = {}
    for _, request, v in vectors:
        r = request.mask_round
        totals[r] = totals.get(r, np.zeros_like(v)) + v
    out = []
    for _, request, v in vectors:
        if not np.any(v) or np.array_equal(v, totals[request.mask_round]):
            continue
        out += [v, to_fixed(v, len(SIZES), "test")]
        if hasattr(request, "dense_layout"):  # a level: its node statistics too
            layout = request.dense_layout()
            stats, bins = layout.sparse(v)
            out += [stats, bins.stats]
        else:  # the grid: fine histograms per column
            out.append(v.reshape(-1, v.size // int(np.count_nonzero(request.columns))))
    return [n for n in out if n.size >= 2]


@pytest.mark.parametrize(
    "grid", [{"bin_edges": EDGES}, {"feature_ranges": RANGES}], ids=["edges", "ranges"]
)
def test_the_server_state_holds_no_single_sites_statistics(
    grid: dict[str, Any],
) -> None:
    with _site_vectors() as vectors:
        secure, ledger = _run(True, **grid)
    assert len(vectors) == len(SIZES) * len(ledger.masked_rounds)
    needles = _needles(vectors)
    assert len(needles) > 4 * len(SIZES)
    assert _found(secure, needles) == []
    # the search can find them: plain node statistics are where the plain run
    # keeps them (its per-client node totals), and the secure run's
    # statistics are the pooled ones
    plain, plain_ledger = _run(False, **grid)
    node_stats = [
        np.asarray(decode(m.data).payload.node_stats)  # type: ignore[union-attr]
        for m in plain_ledger.captured
        if m.direction == "up" and m.kind == "fedforest.histogram"
    ]
    assert _found(plain, [s for s in node_stats if s.size >= 2])
    assert _found(secure, needles + node_stats) == []
    if "bin_edges" in grid:  # the same grid: the pooled statistics are the same
        assert np.array_equal(
            secure.state.growth.table.stats, plain.state.growth.table.stats
        )


def test_the_state_search_finds_a_planted_site_vector() -> None:
    with _site_vectors() as vectors:
        secure, _ = _run(True, bin_edges=EDGES)
    needles = _needles(vectors)
    secure.state.layouts[99] = {"x": [needles[0].copy()]}  # planted, nested
    assert len(_found(secure, needles)) == 1


# -- (d) a dropout after masking -----------------------------------------------------
def _dropout_fit(secure: bool, fault_round: int) -> tuple[FedForestClassifier, Ledger]:
    fed = Federation.from_groups(
        X_CLS, Y_CLS, SITE, faults=(Fault("c", "drop", round=fault_round),)
    )
    model = FedForestClassifier(
        **FOREST,
        secure_aggregation=secure,
        bin_edges=EDGES,
        on_dropout="continue",
    )
    with pytest.warns(ClientDropoutWarning), recording() as ledgers:
        model.fit_federation(fed)
    return model, ledgers[0]


@pytest.mark.parametrize("fault_round", [1, 3])
def test_a_dropout_after_masking_is_revealed_and_gives_the_plain_model(
    fault_round: int, secure_and_plain: Fitted
) -> None:
    secure, ledger = _dropout_fit(True, fault_round)
    plain, _ = _dropout_fit(False, fault_round)
    reveals = [m for m in ledger.captured if m.kind == "federation.reveal"]
    assert {m.round for m in reveals} == {fault_round}
    assert {m.client for m in reveals} == set(SIZES) - {"c"}
    assert {m.direction for m in reveals} == {"down", "up"}
    assert fault_round in ledger.masked_rounds
    frame = ledger.to_frame()
    assert not frame.loc[frame["kind"] == "federation.reveal", "masked"].any()
    assert "c" not in {m.client for m in ledger.captured if m.round > fault_round}
    _same_trees(secure, plain)
    assert np.array_equal(secure.predict_proba(X_CLS), plain.predict_proba(X_CLS))
    # and the dropout mattered: the forest is not the one without it
    whole, _, _ = secure_and_plain
    assert any(t1 != t2 for t1, t2 in zip(secure.trees_, whole.trees_, strict=True))


# -- (e) bad input, refused by name --------------------------------------------------
def _refused(faults: tuple[Fault, ...], **kw: Any) -> RemoteProtocolError:
    fed = Federation.from_groups(X_CLS, Y_CLS, SITE, faults=faults)
    model = FedForestClassifier(
        **FOREST, secure_aggregation=True, bin_edges=EDGES, **kw
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClientDropoutWarning)
        with pytest.raises(RemoteProtocolError, match=r"^Client '") as info:
            model.fit_federation(fed)
    return info.value


def _mutating(kind: type, change: Callable[[Any], Payload]) -> Callable[[Any], Any]:
    return lambda p: change(p) if isinstance(p, kind) else p


def test_a_masked_reply_of_the_wrong_length_is_refused_naming_the_client() -> None:
    short = _mutating(MaskedReply, lambda p: MaskedReply(p.masked[:-1]))
    error = _refused((Fault("b", "mutate", round=2, mutate=short),), on_dropout="fail")
    assert (error.client, error.round, error.field) == ("b", 2, "masked")


def test_a_masked_reply_of_the_wrong_dtype_is_refused_naming_the_client() -> None:
    wide = _mutating(MaskedReply, lambda p: MaskedReply(p.masked.astype(np.float64)))
    error = _refused((Fault("d", "mutate", round=1, mutate=wide),), on_dropout="fail")
    assert (error.client, error.field) == ("d", "masked")


def _schema_key(change: Callable[[np.ndarray], np.ndarray]) -> Callable[[Any], Any]:
    def mutate(p: Any) -> Any:
        if p.kind != "federation.schema_reply":
            return p
        return dataclasses.replace(p, public_key=change(p.public_key))

    return mutate


@pytest.mark.parametrize(
    "change",
    [
        lambda k: np.zeros(32, np.uint8),  # a low-order point
        lambda k: np.full(32, 255, np.uint8),  # not canonical
        lambda k: k[:31],  # too short
    ],
    ids=["zero", "non-canonical", "short"],
)
def test_an_invalid_public_key_is_refused_naming_the_client(
    change: Callable[[np.ndarray], np.ndarray],
) -> None:
    error = _refused((Fault("e", "mutate", round=0, mutate=_schema_key(change)),))
    assert (error.client, error.round, error.field) == ("e", 0, "public_key")


def test_a_public_key_shared_with_another_site_is_refused_naming_the_client() -> None:
    seen: dict[str, np.ndarray] = {}

    def keep(k: np.ndarray) -> np.ndarray:
        seen["a"] = k.copy()
        return k

    faults = (
        Fault("a", "mutate", round=0, mutate=_schema_key(keep)),
        Fault("d", "mutate", round=0, mutate=_schema_key(lambda k: seen["a"])),
    )
    error = _refused(faults)
    assert (error.client, error.round, error.field) == ("d", 0, "public_key")
    assert "'a'" in str(error)


def test_fewer_than_three_sites_are_refused() -> None:
    two = np.isin(SITE, ["a", "b"])
    model = FedForestClassifier(**FOREST, secure_aggregation=True, bin_edges=EDGES)
    with pytest.raises(ValidationError, match="at least 3"):
        model.fit(X_CLS[two], Y_CLS[two], groups=SITE[two])


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"candidates": "quantile"}, "candidates"),
        ({"split_on_client": True}, "split_on_client"),
    ],
)
def test_secure_aggregation_refuses_a_mode_that_needs_site_statistics(
    params: dict[str, Any], named: str
) -> None:
    model = FedForestClassifier(
        **FOREST, secure_aggregation=True, bin_edges=EDGES, **params
    )
    with pytest.raises(ValidationError, match=named):
        model.fit(X_CLS, Y_CLS, groups=SITE)


def test_secure_aggregation_without_a_declared_grid_is_refused() -> None:
    model = FedForestClassifier(**FOREST, secure_aggregation=True)
    with pytest.raises(ValidationError, match="bin_edges") as info:
        model.fit(X_CLS, Y_CLS, groups=SITE)
    assert "feature_ranges" in str(info.value)
