"""The federation, the agreement, lying clients, bad requests and absurd ε.

- ``federation``: building one from groups or clients (colliding ids, empty or
  mismatched clients, declarations) and the opening agreement.
- ``replies``: client ``b`` lies in one reply (``Fault("mutate")``) with values
  outside what any honest client can send (NaN, inf, negative, inconsistent,
  beyond a bound). The fit must fail naming client ``b`` and the field; a fit
  that goes on with another model is a silent wrong result.
- ``requests``: a request captured from a real run, one field damaged, served
  by the client's runtime. The answer must be an error envelope naming the
  field, and carry none of the client's rows or row count.
- ``privacy``: absurd ε at the estimators and the mechanisms.
"""

from __future__ import annotations

import dataclasses
import math
import re
import warnings
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
from _sweep_core import (
    RANGES,
    SIZES,
    Verdict,
    accepted,
    blobs,
    case,
    check,
    correct,
    data_for,
    documented,
    fit,
    make,
    predict,
    same,
    secret,
    secret_rows,
    secret_values,
    wrong,
)

# -- federation -----------------------------------------------------------------------


def _fed_fit(name: str, federation: Any) -> Any:
    return make(name).fit_federation(federation)


@case("from_clients-ids-1-and-str-1", "federation", ("'1'|client",))
def colliding_client_ids() -> Verdict:
    from fedtrees.federation import Federation

    X, y, _ = blobs()
    fed = Federation.from_clients({1: (X[:50], y[:50]), "1": (X[50:], y[50:])})
    rows = sum(fed.row_counts().values())
    return check(rows == X.shape[0], "every row kept", f"{rows} of {X.shape[0]} rows")


@case("from_groups-ids-1-and-1.0", "federation", ("1.0|groups",))
def groups_int_and_float() -> Verdict:
    from fedtrees.federation import Federation

    X, y, _ = blobs()
    groups = np.array([1, 1.0] * (X.shape[0] // 2) + [1], dtype=object)
    fed = Federation.from_groups(X, y, groups)
    rows = sum(fed.row_counts().values())
    return check(rows == X.shape[0], f"clients {fed.clients}", f"{rows} rows")


@case("from_clients-empty-client", "federation", ("'b'",))
def empty_client() -> Verdict:
    from fedtrees.federation import Federation

    X, y, _ = blobs()
    Federation.from_clients({"a": (X, y), "b": (X[:0], y[:0])})
    return accepted("a client without rows")


def _two_clients(second: pd.DataFrame, y2: Any = None) -> Any:
    from fedtrees.federation import Federation

    X, y, _ = blobs()
    first = pd.DataFrame(X, columns=["u", "v", "w"])
    return Federation.from_clients(
        {"a": (first, y), "b": (second, y if y2 is None else y2)}
    )


@case("from_clients-mismatched-columns", "federation", ("'b'", "u|z"))
def mismatched_columns() -> Verdict:
    X, _, _ = blobs()
    fed = _two_clients(pd.DataFrame(X, columns=["u", "v", "z"]))
    _fed_fit("FedForestClassifier", fed)
    return accepted("clients with different columns")


@case("from_clients-numeric-vs-categorical", "federation", ("'b'|'a'", "w"))
def kind_mismatch() -> Verdict:
    X, _, _ = blobs()
    second = pd.DataFrame(X, columns=["u", "v", "w"])
    second["w"] = pd.Categorical(np.where(X[:, 2] > 0, "hi", "lo"))
    _fed_fit("FedGBDTClassifier", _two_clients(second))
    return accepted("a column numeric at a and categorical at b")


@case("from_clients-label-types-int-and-str", "federation", ("'b'|'a'", "label"))
def label_type_mismatch() -> Verdict:
    X, y, _ = blobs()
    fed = _two_clients(pd.DataFrame(X, columns=["u", "v", "w"]), y.astype(str))
    _fed_fit("ICDTAClassifier", fed)
    return accepted("int labels at a, str labels at b")


@case("from_clients-repeated-column-names", "federation", ("'u'",))
def repeated_columns() -> Verdict:
    X, _, _ = blobs()
    fed = _two_clients(pd.DataFrame(X, columns=["u", "u", "w"]))
    _fed_fit("LocalEnsembleClassifier", fed)
    return accepted("a repeated column name")


@case("from_groups-empty-string-client-id", "federation", ("groups|client",))
def empty_client_id() -> Verdict:
    X, y, groups = blobs()
    groups = np.where(groups == "a", "", groups)
    a = make("FedForestClassifier").fit(X, y, groups).predict(X)
    b = make("FedForestClassifier").fit(X, y, blobs()[2]).predict(X)
    return check(same(a, b), "'' is a client id", "client '' changed the model")


@case("with_classes-repeated", "federation", ("classes", "0"))
def repeated_classes() -> Verdict:
    from fedtrees.federation import Federation

    X, y, groups = blobs()
    Federation.from_groups(X, y, groups).with_classes([0, 0, 1])
    return accepted("classes [0, 0, 1]")


@case("categories-int-at-a-str-at-b", "federation", ("ward",))
def categories_by_type() -> Verdict:
    """Client a holds categories 1, 2; client b '1', '2': one column or refused."""
    from fedtrees.federation import Federation

    X, y, _ = blobs()
    ward = np.where(X[:, 0] > 0.123456, 1, 2)
    a = pd.DataFrame({"u": X[:50, 1], "ward": pd.Categorical(ward[:50])})
    b = pd.DataFrame({"u": X[50:, 1], "ward": pd.Categorical(ward[50:].astype(str))})
    fed = Federation.from_clients({"a": (a, y[:50]), "b": (b, y[50:])})
    model = _fed_fit("FedForestClassifier", fed)
    return documented(f"agreed categories {model.categories_[1]}")


def _leaky_fit(name: str, params: dict[str, Any], sizes: tuple[int, ...]) -> Verdict:
    X, y, groups = data_for(name, sizes=sizes)
    secret_rows(sizes)
    secret_values(X)
    model = make(name, **params).fit(X, y, groups)
    score = float(np.mean(predict(model, X, groups) == y))
    return documented(f"fits with a tiny client (accuracy {score:.2f})")


case("FedGAClassifier-one-row-client", "federation", ("'b'", "fold"))(
    lambda: _leaky_fit("FedGAClassifier", {}, (23, 1, 41))
)
case("FedGBDTClassifier-client-too-small-to-hold-out", "federation", ("'b'|client",))(
    lambda: _leaky_fit(
        "FedGBDTClassifier",
        {"early_stopping_rounds": 2, "validation_fraction": 0.1},
        (23, 3, 41),
    )
)
case("ICDTAClassifier-two-row-client", "federation", ("'b'|client",))(
    lambda: _leaky_fit("ICDTAClassifier", {"base": "cart"}, (23, 2, 41))
)


# -- the agreement and lying replies --------------------------------------------------
def _only(kind: type, change: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def mutate(reply: Any) -> Any:
        return change(reply) if isinstance(reply, kind) else reply

    return mutate


def _lie(
    name: str, kind: type, change: Callable[[Any], Any], round_: int | None = None
) -> Verdict:
    """Fit with client b's replies of ``kind`` changed; compare with the honest fit."""
    from fedtrees.federation import Fault, Federation

    X, y, groups = data = data_for(name)
    secret_rows(SIZES)
    fault = Fault("b", "mutate", round=round_, mutate=_only(kind, change))
    federation = Federation.from_groups(X, y, groups, faults=(fault,))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lied = make(name).fit_federation(federation)
    dropped = [str(w.message) for w in caught if "Client 'b'" in str(w.message)]
    if dropped:  # the method continues without a client whose reply is refused
        return documented(f"b dropped with a warning: {dropped[0][:160]}")
    honest = fit(name, data)
    got, expected = predict(lied, X, groups), predict(honest, X, groups)
    if same(got, expected):
        return correct("the lie was accepted but changed nothing")
    return wrong(
        f"the lie was accepted: {np.mean(np.asarray(got) != expected):.0%} of "
        f"predictions changed (finite: {bool(np.all(np.isfinite(got)))})"
    )


def _replace(**changes: Any) -> Callable[[Any], Any]:
    def change(reply: Any) -> Any:
        values = {
            k: v(getattr(reply, k)) if callable(v) else v for k, v in changes.items()
        }
        return dataclasses.replace(reply, **values)

    return change


def _nan_first(values: np.ndarray) -> np.ndarray:
    out = np.array(values, dtype=np.float64, copy=True)
    out.flat[0] = np.nan
    return out


def _schema() -> type:
    from fedtrees.federation import SchemaReply

    return SchemaReply


def _types() -> dict[str, Any]:
    from fedtrees.algorithms.dpforest._payloads import DPTreeReply
    from fedtrees.algorithms.fedavg._payloads import TrainReply
    from fedtrees.algorithms.fedforest._hist_payloads import GridReply
    from fedtrees.algorithms.fedga._payloads import FitnessReply, InitReply
    from fedtrees.algorithms.fedgbdt._payloads import LevelReply, StartReply
    from fedtrees.algorithms.icdta._payloads import ScoresReply
    from fedtrees.algorithms.icdta._payloads import TreeReply as ICDTATree
    from fedtrees.algorithms.local._payloads import ForestReply
    from fedtrees.algorithms.synthetic._payloads import TreeReply as SynthTree

    return {
        "dp": DPTreeReply, "fedavg": TrainReply, "grid": GridReply,
        "ga-init": InitReply, "ga-fitness": FitnessReply, "gbdt": LevelReply,
        "gbdt-start": StartReply, "icdta-scores": ScoresReply,
        "icdta-tree": ICDTATree, "local": ForestReply, "synth": SynthTree,
    }  # fmt: skip


def _g_times(factor: float) -> Callable[[Any], Any]:
    """Scale Σg of every node and bin alike (consistent within the reply)."""

    def change(r: Any) -> Any:
        gh = np.array(r.node_gh, dtype=np.float64)
        stats = np.array(r.bin_stats, dtype=np.float64)
        gh[:, 0] *= factor
        stats[:, 0] *= factor
        return dataclasses.replace(r, node_gh=gh, bin_stats=stats)

    return change


def _unsorted_points(r: Any) -> Any:
    points = np.array(r.points, dtype=np.float64)
    points[:, :2] = points[:, 1::-1].copy()
    return dataclasses.replace(r, points=points)


def _shifted_feature(r: Any) -> Any:
    feature = np.array(r.feature, copy=True)
    feature[feature >= 0] = 99
    return dataclasses.replace(r, feature=feature)


LIES: list[tuple[str, str, str, Callable[[], Callable[[Any], Any]], tuple[str, ...]]]
LIES = [
    ("schema-columns-reversed", "FedForestClassifier", "schema",
     lambda: _replace(feature_names=lambda f: f[::-1].copy()), ("'b'", "x0|x2")),
    ("schema-label-type-float", "FedGBDTClassifier", "schema",
     lambda: _replace(label_type="float"), ("'b'", "label")),
    ("schema-row-bound-0", "ICDTAClassifier", "schema",
     lambda: _replace(row_bound=0), ("'b'", "row_bound")),
    ("schema-weight-bound-nan", "LocalEnsembleClassifier", "schema",
     lambda: _replace(weight_bound=math.nan), ("'b'", "weight_bound")),
    ("schema-kind-unknown", "FederatedID3Classifier", "schema",
     lambda: _replace(feature_kinds=lambda k: np.full_like(k, "blob")),
     ("'b'", "feature_kinds|kind")),
    ("fedgbdt-gradients-x1e300", "FedGBDTClassifier", "gbdt",
     lambda: _g_times(1e300), ("'b'", "node_gh|bin_stats")),
    ("fedgbdt-gradients-x1e6", "FedGBDTClassifier", "gbdt",
     lambda: _g_times(1e6), ("'b'", "node_gh|bin_stats")),
    ("fedgbdt-loss-nan", "FedGBDTRegressor", "gbdt",
     lambda: _replace(loss=_nan_first), ("'b'", "loss")),
    ("fedgbdt-prior-x1e6", "FedGBDTClassifier", "gbdt-start",
     lambda: _replace(prior=lambda p: np.asarray(p, float) * 1e6), ("'b'", "prior")),
    ("dpforest-epsilon-spent-0", "DPForestClassifier", "dp",
     lambda: _replace(epsilon_spent=0.0), ("'b'", "epsilon_spent")),
    ("dpforest-leaf-value-nan", "DPForestClassifier", "dp",
     lambda: _replace(value=_nan_first), ("'b'", "value")),
    ("fedga-noisy-size-nan", "FedGAClassifier", "ga-init",
     lambda: _replace(noisy_size=math.nan), ("'b'", "noisy_size")),
    ("fedga-fitness-2", "FedGAClassifier", "ga-fitness",
     lambda: _replace(fitness=lambda f: np.full_like(f, 2.0)), ("'b'", "fitness")),
    ("icdta-scores-nan", "ICDTAClassifier", "icdta-scores",
     lambda: _replace(scores=_nan_first), ("'b'", "scores")),
    ("icdta-tree-feature-99", "ICDTAClassifier", "icdta-tree",
     lambda: _shifted_feature, ("'b'", "feature")),
    ("synthetic-threshold-inf", "SyntheticDataClassifier", "synth",
     lambda: _replace(threshold=lambda t: np.where(np.isnan(t), t, np.inf)),
     ("'b'", "threshold")),
    ("local-forest-value-nan", "LocalEnsembleRegressor", "local",
     lambda: _replace(value=_nan_first), ("'b'", "value")),
    ("fedavg-theta-nan", "FedAvgClassifier", "fedavg",
     lambda: _replace(theta=_nan_first), ("'b'", "theta")),
    ("fedforest-grid-points-unsorted", "FedForestClassifier", "grid",
     lambda: _unsorted_points, ("'b'", "points")),
]  # fmt: skip


def _register_lie(
    label: str,
    name: str,
    kind: str,
    change: Callable[[], Callable[[Any], Any]],
    names: tuple[str, ...],
) -> None:
    family = "federation" if kind == "schema" else "replies"

    @case(f"{name}-{label}", family, names)
    def run() -> Verdict:
        reply_type = _schema() if kind == "schema" else _types()[kind]
        return _lie(name, reply_type, change())


for _row in LIES:
    _register_lie(*_row)


@case("FedGAClassifier-fedga-noisy-size-minus-1e300", "replies", ("'b'",))
def noisy_size_negative() -> Verdict:
    """Documented: a size beyond the noise's reach drops the site (FedGA continues)."""
    from fedtrees.algorithms.fedga._payloads import InitReply

    return _lie("FedGAClassifier", InitReply, _replace(noisy_size=-1e300))


# -- secure aggregation: a site lies in a masked round or at the key exchange --------
SECURE: dict[str, Any] = {"secure_aggregation": True, "feature_ranges": RANGES}


def _secure_fit(name: str, fault_kind: str, change: Callable[[Any], Any]) -> Verdict:
    """Fit ``name`` with secure aggregation, site b's ``fault_kind`` replies changed.

    A masked reply can only be checked for its form (docs/security.md): the fit
    must fail naming b (the names are checked by the sweep).
    """
    from fedtrees.federation import Fault, Federation, MaskedReply

    kind = MaskedReply if fault_kind == "masked" else _schema()
    X, y, groups = data_for(name)
    fault = Fault("b", "mutate", mutate=_only(kind, change))
    make(name, **SECURE).fit_federation(
        Federation.from_groups(X, y, groups, faults=(fault,))
    )
    return accepted("a malformed masked reply or key")


SECURE_LIES = [
    ("masked-one-word-short", "FedForestClassifier", "masked",
     _replace(masked=lambda m: m[:-1].copy())),
    ("masked-as-float", "FedGBDTClassifier", "masked",
     _replace(masked=lambda m: m.astype(np.float64))),
    ("masked-as-int32", "FedGBDTRegressor", "masked",
     _replace(masked=lambda m: m.view(np.int64).astype(np.int32))),
    ("public-key-zero", "FedForestRegressor", "schema",
     _replace(public_key=lambda k: np.zeros_like(k))),
    ("public-key-31-bytes", "FedGBDTClassifier", "schema",
     _replace(public_key=lambda k: k[:31].copy())),
]  # fmt: skip
for _label, _name, _kind, _change in SECURE_LIES:
    case(f"{_name}-secure-{_label}", "replies", ("'b'", "masked|public_key"))(
        lambda n=_name, k=_kind, c=_change: _secure_fit(n, k, c)
    )


@case("FedForestClassifier-secure-two-sites", "federation", ("at least 3",))
def secure_two_sites() -> Verdict:
    X, y, groups = data_for("FedForestClassifier", sizes=SIZES[:2])
    make("FedForestClassifier", **SECURE).fit(X, y, groups)
    return accepted("secure aggregation over two sites")


@case("FedGBDTClassifier-secure-no-grid", "federation", ("bin_edges", "feature_ranges"))
def secure_without_grid() -> Verdict:
    X, y, groups = data_for("FedGBDTClassifier")
    make("FedGBDTClassifier", secure_aggregation=True).fit(X, y, groups)
    return accepted("secure aggregation without declared edges or ranges")


@case(
    "FedGBDTRegressor-secure-target-1e30", "federation", ("'a'|'b'|'c'", "fixed-point")
)
def secure_huge_target() -> Verdict:
    X, y, groups = data_for("FedGBDTRegressor")
    make("FedGBDTRegressor", **SECURE).fit(X, y * 1e30, groups)
    return accepted("a target beyond the fixed-point range")


# -- bad requests served by a client --------------------------------------------------
RUNS: dict[str, Callable[[], Any]] = {
    "dpforest": lambda: make("DPForestClassifier"),
    "fedga": lambda: make("FedGAClassifier"),
    "icdta": lambda: make("ICDTAClassifier"),
    "fedgbdt": lambda: make("FedGBDTClassifier"),
    "fedforest": lambda: make("FedForestClassifier"),
    "local": lambda: make("LocalEnsembleClassifier"),
    "synthetic": lambda: make("SyntheticDataClassifier"),
    "fedavg": lambda: make("FedAvgClassifier"),
    "fedid3": lambda: make("FederatedID3Classifier", epsilon=1.0, bin_edges=EDGES),
    "dpforest-words": lambda: make("DPForestClassifier"),
}
EDGES = {"x0": [-10.0, 0.0, 10.0], "x1": [-10.0, 0.0, 10.0], "x2": [0.0]}


@cache
def _captured(run: str) -> dict[str, tuple[Any, Any, dict[str, Any]]]:
    """The first request of each kind of a small fit: (envelope, site, kept state)."""
    from fedtrees.audit import recording
    from fedtrees.federation import ClientState, Federation, decode, serve

    X, y, groups = blobs()
    if run.endswith("-words"):
        y = np.array(["healthy", "sick"])[y]
    fed = Federation.from_groups(X, y, groups)
    estimator = RUNS[run]()
    with recording() as ledgers, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit_federation(fed)
    (ledger,) = ledgers
    sites = fed.on_each_site(lambda data: data)
    states = {c: ClientState() for c in sites}
    out: dict[str, tuple[Any, Any, dict[str, Any]]] = {}
    for message in ledger.captured:
        if message.direction != "down":
            continue
        envelope = decode(message.data)
        kept = dict(states[message.client].kept)
        serve(message.data, sites[message.client], state=states[message.client])
        out.setdefault(envelope.kind, (envelope, sites[message.client], kept))
    return out


def _serve_damaged(run: str, kind: str, field: str, value: Any) -> Verdict:
    from fedtrees.exceptions import RemoteProtocolError
    from fedtrees.federation import ClientState, Envelope, decode, encode, serve

    envelope, site, kept = _captured(run)[kind]
    secret_rows([site.n_rows])
    secret_values(site.X.to_numpy(dtype=float))
    secret(*(re.escape(repr(str(v))) for v in site.y.unique()))
    old = getattr(envelope.payload, field)
    new = value(old) if callable(value) else value
    bad = dataclasses.replace(envelope.payload, **{field: new})
    data = encode(Envelope("request", envelope.round, envelope.client, kind, bad))
    state = ClientState()
    state.kept.update(kept)
    answer = decode(serve(data, site, state=state))
    if answer.type == "error":  # judged as the server would see it
        raise RemoteProtocolError(site.client_id, envelope.round, kind, "handler",
                                  f"failed on the client: {answer.error}")  # fmt: skip
    arrays = dataclasses.asdict(answer.payload) if answer.payload is not None else {}
    broken = [
        k
        for k, v in arrays.items()
        if isinstance(v, np.ndarray | float)
        and np.asarray(v).dtype.kind == "f"
        and not np.all(np.isfinite(v))
    ]
    return wrong(
        f"the client answered a request with {field}={_short(new)}"
        + (f" (reply fields {broken} hold NaN/inf)" if broken else "")
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _repeat_first(classes: np.ndarray) -> np.ndarray:
    return np.asarray([classes[0], *classes])


REQUESTS: list[tuple[str, str, str, str, Any, tuple[str, ...]]] = [
    ("dpforest", "dpforest.tree", "epsilon", "nan", math.nan, ("epsilon",)),
    ("dpforest", "dpforest.tree", "epsilon", "1e-320", 1e-320, ("epsilon",)),
    ("dpforest", "dpforest.tree", "epsilon", "-1", -1.0, ("epsilon",)),
    ("dpforest", "dpforest.tree", "classes", "repeated", _repeat_first, ("classes",)),
    ("dpforest", "dpforest.tree", "ranges", "inverted", lambda r: r[:, ::-1].copy(),
     ("ranges",)),
    ("dpforest", "dpforest.tree", "max_depth", "1e6", 10**6, ("max_depth",)),
    ("dpforest-words", "dpforest.tree", "classes", "one-label-left-out",
     lambda c: c[:1].copy(), ("classes|label",)),
    ("fedga", "fedga.init", "epsilon", "1e-320", 1e-320, ("epsilon",)),
    ("fedga", "fedga.init", "classes", "repeated", _repeat_first, ("classes",)),
    ("fedga", "fedga.init", "folds", "0", 0, ("folds",)),
    ("icdta", "icdta.fit", "classes", "repeated", _repeat_first, ("classes",)),
    ("fedgbdt", "fedgbdt.start", "classes", "repeated", _repeat_first, ("classes",)),
    ("fedgbdt", "fedgbdt.level", "holdout", "nan", math.nan, ("holdout",)),
    ("fedgbdt", "fedgbdt.level", "subsample", "2", 2.0, ("subsample",)),
    ("fedforest", "fedforest.histogram", "pair_feature", "feature-99",
     lambda p: np.where(p >= 0, 99, p), ("pair_feature",)),
    ("local", "local.forest", "params", "max_depth-negative", '{"max_depth": -5}',
     ("max_depth",)),
    ("local", "local.forest", "params", "not-json", "not json", ("params",)),
    ("local", "local.forest", "params", "n_jobs", '{"n_jobs": -1}', ("n_jobs",)),
    ("synthetic", "synthetic.tree", "classes", "repeated", _repeat_first,
     ("classes",)),
    ("fedavg", "fedavg.train", "learning_rate", "nan", math.nan, ("learning_rate",)),
    ("fedavg", "fedavg.train", "scale", "zeros", lambda s: np.zeros_like(s),
     ("scale",)),
    ("fedid3", "fedid3.level", "epsilon", "-1", -1.0, ("epsilon",)),
    ("fedid3", "fedid3.level", "classes", "repeated", _repeat_first, ("classes",)),
]  # fmt: skip


def _register_request(
    run: str, kind: str, field: str, label: str, value: Any, names: tuple[str, ...]
) -> None:
    @case(f"{kind}-{field}-{label}", "requests", names)
    def serve_it() -> Verdict:
        return _serve_damaged(run, kind, field, value)


for _row in REQUESTS:
    _register_request(*_row)


@case("federation.schema-task-bogus", "requests", ("task",))
def schema_task() -> Verdict:
    from fedtrees.federation import ClientData, Envelope, SchemaRequest, decode, serve
    from fedtrees.federation import encode as enc

    X, y, _ = blobs()
    site = ClientData.build("a", X, y)
    data = enc(Envelope("request", 0, "a", "federation.schema", SchemaRequest("bogus")))
    answer = decode(serve(data, site))
    if answer.type == "error":
        from fedtrees.exceptions import RemoteProtocolError

        raise RemoteProtocolError("a", 0, "federation.schema", "handler", answer.error)
    return wrong("the client answered task='bogus'")


# -- privacy: absurd ε ----------------------------------------------------------------
@case("DPForestClassifier-epsilon-1e308", "privacy", ("epsilon",))
def dp_huge_epsilon() -> Verdict:
    """ε = 1e308: finite noise, the whole ε spent, and the sites reproduce it.

    Not compared with another ε: a request of another ε draws independent noise
    (each site's own, bound to the request: docs/security.md), and even a draw of
    1e-300 breaks exact ties between candidate splits.
    """
    X = blobs()[0]
    a = fit("DPForestClassifier", epsilon=1e308)  # the sites' secret: the sweep's
    b = fit("DPForestClassifier", epsilon=1e308)
    counts = np.concatenate([t.count for t in a.trees_])
    spent = set(a.epsilon_spent_.values())
    ok = (
        same(a.predict(X), b.predict(X))
        and bool(np.all(np.isfinite(counts)))
        and spent <= {1e308, math.nextafter(1e308, 0)}
    )
    return check(
        ok,
        f"finite counts, ε spent {spent}, reproduced with the sites' secret",
        f"counts finite {np.all(np.isfinite(counts))}, ε spent {spent}",
    )


@case("DPForestClassifier-epsilon-inf-opendp", "privacy", ("epsilon|sampler",))
def dp_inf_opendp() -> Verdict:
    from fedtrees.federation import Federation

    X, y, groups = blobs()
    opendp = Federation.from_groups(X, y, groups, noise_sampler="opendp")  # the sites'
    a = make("DPForestClassifier", epsilon=math.inf).fit_federation(opendp)
    b = make("DPForestClassifier", epsilon=math.inf).fit(X, y, groups)
    return check(
        same(a.predict(X), b.predict(X)),
        "ε = inf: no noise with either sampler",
        "ε = inf differs between samplers",
    )


def _tiny_epsilon(name: str) -> Verdict:
    edges = {"bin_edges": EDGES} if name == "FederatedID3Classifier" else {}
    fit(name, epsilon=1e-320, **edges)
    return accepted("epsilon=1e-320 (noise scale beyond float64)")


for _name in ("FederatedID3Classifier", "FedGAClassifier"):
    case(f"{_name}-epsilon-1e-320", "privacy", ("epsilon",))(
        lambda _n=_name: _tiny_epsilon(_n)
    )


@case("FederatedID3Classifier-epsilon-inf", "privacy", ("epsilon",))
def fedid3_inf() -> Verdict:
    X, y, groups = blobs()
    a = make("FederatedID3Classifier", epsilon=math.inf, bin_edges=EDGES)
    b = make("FederatedID3Classifier", epsilon=None, bin_edges=EDGES)
    a, b = a.fit(X, y, groups), b.fit(X, y, groups)
    return check(
        same(a.predict(X), b.predict(X)),
        "ε = inf is exact counts",
        "ε = inf differs from exact counts",
    )


@case("PrivacyAccountant-epsilon-nan", "privacy", ("epsilon",))
def accountant_nan() -> Verdict:
    from fedtrees.privacy import PrivacyAccountant

    PrivacyAccountant(math.nan)
    return accepted("PrivacyAccountant(nan)")


@case("ClippedLaplace-epsilon-1e-320", "privacy", ("epsilon",))
def laplace_tiny() -> Verdict:
    from fedtrees.privacy import ClippedLaplace, PrivacyAccountant

    accountant = PrivacyAccountant(1.0)
    noisy = accountant.release(
        ClippedLaplace(epsilon=1e-320), np.array([3.0]), np.random.default_rng(0)
    )
    return check(
        bool(np.all(np.isfinite(noisy))), f"finite {noisy}", f"released {noisy}"
    )
