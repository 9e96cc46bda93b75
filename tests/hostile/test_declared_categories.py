"""Declared categories stay at the clients (issue 12, item 9).

Without a declaration the opening agreement sends each client's category values
to the server (documented in :mod:`fedtrees.federation._schema`). With
``categories={column: names}`` the names travel *down* only (public by
declaration), each client re-codes its column to the declared order, and no
client sends a value of that column; the model is the same. Declared classes
(``classes=``) likewise replace the clients' label sets. Every check decodes the
captured messages itself and also runs the value audit
(:func:`fedtrees.audit.find_client_values`). On Flower the ClientApp
applies the run config's declaration to the data of every message.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fedtrees import (
    FedAvgClassifier,
    FederatedID3Classifier,
    FedForestClassifier,
    FedGAClassifier,
    ICDTAClassifier,
    SyntheticDataClassifier,
)
from fedtrees.audit import find_client_values, recording
from fedtrees.exceptions import (
    PrivacyAuditError,
    RemoteProtocolError,
    SchemaMismatchError,
    ValidationError,
)
from fedtrees.federation import (
    ClientData,
    ClientState,
    Envelope,
    Fault,
    Federation,
    Field,
    Ledger,
    Payload,
    ReplySpec,
    SchemaReply,
    SchemaRequest,
    decode,
    encode,
    handler,
    payload,
)
from fedtrees.federation._schema import report_schema
from tests.federation.helpers import NullStrategy

SITES = ("a", "b", "c")
PATIENTS = tuple(f"patient_{i:02d}" for i in range(90))
SCHEMA_REQUEST, SCHEMA_REPLY = "federation.schema", "federation.schema_reply"


def _patients(seed: int = 3) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """90 patient names (one label each) and a noisy numeric column, three sites.

    Each site holds its own third of the patients (as an object column its local
    categories differ from the other sites'), so the agreement sends them all.
    """
    rng = np.random.default_rng(seed)
    per_site = len(PATIENTS) // len(SITES)
    names = np.concatenate(
        [
            rng.permutation(np.repeat(PATIENTS[k * per_site : (k + 1) * per_site], 2))
            for k in range(len(SITES))
        ]
    )
    groups = np.repeat(SITES, 60)
    first_half = np.isin(names, PATIENTS[::2])
    X = pd.DataFrame({"name": names, "age": rng.normal(size=names.shape[0])})
    y = (first_half ^ (X["age"].to_numpy() > 1.5)).astype(int)
    return X, y, groups


def _forest() -> FedForestClassifier:
    # Fewer bins than a site's rows: its grid reply is a sketch of 'age', not
    # every value of it (which the value audit would report).
    return FedForestClassifier(n_estimators=2, max_depth=3, max_bins=16, random_state=0)


def _fit_keeping(
    estimator: Any, federation: Federation | None = None, *args: Any
) -> tuple[Any, Ledger]:
    """Fit ``estimator`` (``fit_federation`` or ``fit(*args)``) keeping messages."""
    with recording() as ledgers:
        if federation is not None:
            estimator.fit_federation(federation)
        else:
            estimator.fit(*args)
    (ledger,) = ledgers
    return estimator, ledger


def _replied_labels(ledger: Ledger) -> dict[str, list[str]]:
    """The label set each client sent at the agreement."""
    out = {}
    for message in ledger.captured:
        payload = decode(message.data).payload
        if message.direction == "up" and isinstance(payload, SchemaReply):
            out[message.client] = payload.labels.tolist()
    return out


def _strings(ledger: Ledger, direction: str) -> Iterator[tuple[str, str, set[str]]]:
    """(client, kind, strings) of every string array of every captured message."""
    for message in ledger.captured:
        if message.direction != direction:
            continue
        envelope = decode(message.data)
        assert envelope.payload is not None
        for value in vars(envelope.payload).values():
            if isinstance(value, np.ndarray) and value.dtype.kind == "U":
                yield message.client, envelope.payload.kind, set(value.tolist())


def _held(X: pd.DataFrame, groups: np.ndarray) -> dict[str, set[str]]:
    return {s: set(X["name"][groups == s].tolist()) for s in SITES}


def _trees(model: FedForestClassifier) -> list[dict[str, Any]]:
    """The trees as documents; feature names aside (``fit`` on a frame keeps them)."""
    documents = [json.loads(tree.to_json()) for tree in model.trees_]
    return [{k: v for k, v in d.items() if k != "feature_names"} for d in documents]


@pytest.fixture(scope="module")
def runs() -> dict[str, Any]:
    """Per-site clients (own categories): the pooled fit, and a declared run."""
    X, y, groups = _patients()
    clients = {
        s: (X[groups == s].reset_index(drop=True), y[groups == s]) for s in SITES
    }
    declared = Federation.from_clients(clients, categories={"name": PATIENTS})
    declared = declared.with_classes([0, 1])
    model, ledger = _fit_keeping(_forest(), declared)
    shared = X.assign(name=pd.Categorical(X["name"], categories=PATIENTS))
    undeclared = Federation.from_groups(shared, y, groups)
    plain, plain_ledger = _fit_keeping(_forest(), undeclared)
    return {
        "X": X,
        "y": y,
        "groups": groups,
        "declared": (declared, model, ledger),
        "undeclared": (undeclared, plain, plain_ledger),
    }


@pytest.mark.hostile("documented")
def test_without_a_declaration_the_agreement_sends_the_category_values(
    runs: dict[str, Any],
) -> None:
    federation, _, ledger = runs["undeclared"]
    held = _held(runs["X"], runs["groups"])
    sent = {c: set[str]() for c in SITES}
    for client, kind, strings in _strings(ledger, "up"):
        assert kind == SCHEMA_REPLY or not strings & set(PATIENTS), kind
        sent[client] |= strings & set(PATIENTS)
    for site in SITES:  # the dtype's categories: every patient, held or not
        assert held[site] < sent[site] == set(PATIENTS)
    report = find_client_values(ledger, federation)
    for site in SITES:
        assert f"category values in {SCHEMA_REPLY}" in report.category_values[site]


@pytest.mark.hostile("correct")
def test_declared_categories_never_leave_a_client(runs: dict[str, Any]) -> None:
    federation, _, ledger = runs["declared"]
    for client, kind, strings in _strings(ledger, "up"):
        assert not strings & set(PATIENTS), f"{kind} of client {client!r}"
    down = {
        kind for _, kind, strings in _strings(ledger, "down") if strings & set(PATIENTS)
    }
    assert down == {SCHEMA_REQUEST}  # the declaration itself, sent down
    report = find_client_values(
        ledger, federation, categories_allowed_in=(SCHEMA_REQUEST,)
    )
    assert all(
        kinds == {f"category values in {SCHEMA_REQUEST}"}
        for kinds in report.category_values.values()
    )
    with pytest.raises(PrivacyAuditError, match="holds category values of client"):
        find_client_values(ledger, federation, categories_allowed_in=())


@pytest.mark.hostile("correct")
def test_the_declaration_does_not_change_the_model(runs: dict[str, Any]) -> None:
    """Sites with different local categories, re-coded: the model of the pooled data."""
    _, model, _ = runs["declared"]
    _, plain, _ = runs["undeclared"]
    X = runs["X"].astype({"name": "category"})  # fit and predict: category dtype
    pooled = _forest().fit(X, runs["y"], runs["groups"])
    assert any(tree.n_nodes > 1 for tree in model.trees_)
    assert _trees(model) == _trees(plain) == _trees(pooled)
    assert model.categories_[0] == PATIENTS
    np.testing.assert_array_equal(model.predict(X), plain.predict(X))


@pytest.mark.hostile("correct")
def test_declared_order_is_the_code_order_at_every_client() -> None:
    """A reversed declaration: each client's codes follow it, whatever its own order."""
    X, y, groups = _patients()
    clients = {s: (X[groups == s], y[groups == s]) for s in SITES}
    order = PATIENTS[::-1]
    federation = Federation.from_clients(clients, categories={"name": order})
    model, _ = _fit_keeping(_forest(), federation)
    assert model.categories_[0] == order
    codes = federation.on_each_site(lambda d: d.matrix[:, 0])
    for site in SITES:
        names = X["name"][groups == site].to_numpy()
        expected = [order.index(v) for v in names]
        np.testing.assert_array_equal(codes[site], expected)


def _with_stranger(name: str) -> Federation:
    """Site b holds ``name`` in 3 rows, outside the declared patients."""
    X, y, groups = _patients()
    names = X["name"].to_numpy(dtype=object)
    names[np.flatnonzero(groups == "b")[:3]] = name
    X["name"] = names
    return Federation.from_groups(X, y, groups).with_categories({"name": PATIENTS})


@pytest.mark.hostile("clear_error")
def test_a_value_outside_the_declaration_is_refused_without_naming_it() -> None:
    federation = _with_stranger("Jane Roe")
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'b', round 0.*Client 'b': column 'name' holds a value outside "
        r"the declared categories \(neither the value nor its rows",
    ) as caught:
        _fit_keeping(_forest(), federation)
    assert "Jane Roe" not in str(caught.value)
    assert "3 row" not in str(caught.value)  # no row count travels either


@pytest.mark.hostile("clear_error")
def test_a_declared_column_that_is_numeric_at_a_client_is_refused() -> None:
    X, y, groups = _patients()
    clients = {s: (X[groups == s], y[groups == s]) for s in SITES}
    numeric = X[groups == "c"].assign(name=np.arange(60.0))
    clients["c"] = (numeric, y[groups == "c"])
    federation = Federation.from_clients(clients, categories={"name": PATIENTS})
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'c', round 0.*declared for column 'name', but it is numeric",
    ):
        _fit_keeping(_forest(), federation)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    "build",
    [
        lambda X, y, g: Federation.from_groups(X, y, g, categories={"nom": PATIENTS}),
        lambda X, y, g: Federation.from_clients(
            {"a": (X, y)}, categories={"nom": PATIENTS}
        ),
    ],
    ids=["from_groups", "from_clients"],
)
def test_an_unknown_declared_column_is_refused_before_any_message(
    build: Callable[..., Federation],
) -> None:
    X, y, groups = _patients()
    with pytest.raises(ValidationError, match=r"declared for column 'nom'"):
        build(X, y, groups)


@pytest.mark.hostile("clear_error")
def test_a_numeric_declared_column_is_refused_before_any_message() -> None:
    X, y, groups = _patients()
    with pytest.raises(
        ValidationError,
        match=r"Federation.from_groups: categories are declared for column 'age', "
        "which is numeric in X",
    ):
        Federation.from_groups(X, y, groups, categories={"age": ["1", "2"]})


@pytest.mark.hostile("clear_error")
def test_an_unknown_declared_column_is_refused_by_every_client() -> None:
    """A federation whose columns the server cannot see: the clients refuse it."""
    X, y, groups = _patients()
    federation = Federation.from_groups(X, y, groups).with_categories({"nom": PATIENTS})
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a', round 0.*column 'nom', which this client does not have",
    ):
        _fit_keeping(_forest(), federation)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("categories", "message"),
    [
        ({"name": []}, r"categories\['name'\] is empty"),
        ({"name": ["x", "y", "x"]}, r"categories\['name'\] repeats \['x'\]"),
        ({"name": "xy"}, r"categories\['name'\] must be a sequence"),
        ({"name": [["x"]]}, r"categories\['name'\] holds a list"),
        (["name"], r"categories must map column names"),
    ],
    ids=["empty", "repeated", "string", "nested", "not-a-mapping"],
)
def test_a_malformed_declaration_names_the_column(
    categories: Any, message: str
) -> None:
    X, y, groups = _patients()
    with pytest.raises(ValidationError, match=message):
        Federation.from_groups(X, y, groups, categories=categories)


ESTIMATORS: dict[str, Callable[[], Any]] = {
    "fedforest": _forest,
    "icdta": lambda: ICDTAClassifier(max_depth=3),
    "fedid3": lambda: FederatedID3Classifier(max_depth=3),
    "synthetic": lambda: SyntheticDataClassifier(random_state=0),
    "fedavg": lambda: FedAvgClassifier(random_state=0),
    "fedga": lambda: FedGAClassifier(random_state=0),
}


def _shared_patients(seed: int = 4) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Every site sees patients of the whole list (rule-merging methods need it)."""
    rng = np.random.default_rng(seed)
    names = rng.choice(PATIENTS, 180)
    age = rng.normal(size=180)
    y = (np.isin(names, PATIENTS[::2]) ^ (age > 1.5)).astype(int)
    return pd.DataFrame({"name": names, "age": age}), y, np.repeat(SITES, 60)


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("method", sorted(ESTIMATORS))
def test_an_in_process_fit_sends_no_category_value(method: str) -> None:
    X, y, groups = _shared_patients()
    X = X.astype({"name": "category"})
    model, ledger = _fit_keeping(ESTIMATORS[method](), None, X, y, groups)
    leaked = [
        (client, kind)
        for client, kind, strings in _strings(ledger, "up")
        if strings & set(PATIENTS)
    ]
    assert leaked == []
    assert _replied_labels(ledger) == {s: [] for s in SITES}  # classes declared too
    assert set(model.categories_[0]) == set(X["name"])
    np.testing.assert_array_equal(model.classes_, [0, 1])
    federation = Federation.from_groups(X, y, groups)  # same clients, same values
    assert "category values" not in _audit_findings(ledger, federation)


def _audit_findings(ledger: Ledger, federation: Federation) -> str:
    """The value audit's findings (only category findings are these tests' own)."""
    try:
        find_client_values(ledger, federation, categories_allowed_in=(SCHEMA_REQUEST,))
    except PrivacyAuditError as error:
        return str(error)
    return ""


@pytest.mark.hostile("correct")
def test_a_later_run_without_a_declaration_forgets_it() -> None:
    """The declaration belongs to the run: the next run of the same clients agrees anew."""
    X, y, groups = _patients()
    shared = X.assign(name=pd.Categorical(X["name"], categories=PATIENTS))
    federation = Federation.from_groups(shared, y, groups)
    order = PATIENTS[::-1]
    declared, _ = _fit_keeping(_forest(), federation.with_categories({"name": order}))
    plain, _ = _fit_keeping(_forest(), federation)
    assert declared.categories_[0] == order
    assert plain.categories_[0] == PATIENTS
    codes = federation.on_each_site(lambda d: d.matrix[:, 0])
    np.testing.assert_array_equal(
        codes["a"], [PATIENTS.index(v) for v in X["name"][groups == "a"]]
    )


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", r"Run config 'categories' is not JSON"),
        ('{"name": []}', r"Run config 'categories': categories\['name'\] is empty"),
        (json.dumps(["name"]), r"Run config 'categories': categories must map"),
    ],
    ids=["not-json", "empty", "not-an-object"],
)
def test_the_flower_run_config_declaration_is_checked(text: str, message: str) -> None:
    apps = pytest.importorskip("fedtrees.federation.flower._apps")
    assert apps.declared_categories({}) == {}
    parsed = apps.declared_categories({"categories": json.dumps({"name": ["x", "y"]})})
    assert parsed == {"name": ("x", "y")}
    with pytest.raises(ValidationError, match=message):
        apps.declared_categories({"categories": text})


@pytest.mark.hostile("correct")
def test_declared_classes_replace_the_label_sets() -> None:
    X, y, groups = _shared_patients()
    federation = Federation.from_groups(X, y, groups).with_classes([2, 0, 1])
    model, ledger = _fit_keeping(_forest(), federation)
    assert _replied_labels(ledger) == {s: [] for s in SITES}
    np.testing.assert_array_equal(model.classes_, [0, 1, 2])  # sorted by value
    plain, plain_ledger = _fit_keeping(_forest(), federation.with_classes(None))
    replied = _replied_labels(plain_ledger)
    assert {s: sorted(labels) for s, labels in replied.items()} == {
        s: ["0", "1"] for s in SITES
    }
    np.testing.assert_array_equal(plain.classes_, [0, 1])


@pytest.mark.hostile("clear_error")
def test_a_label_outside_the_declared_classes_is_refused_without_naming_it() -> None:
    X, y, groups = _shared_patients()
    labels = np.where(y == 1, "sick", "well").astype(object)
    labels[np.flatnonzero(groups == "c")[:4]] = "Jane Roe's rare disease"
    federation = Federation.from_groups(X, labels, groups).with_classes(
        ["sick", "well"]
    )
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'c', round 0.*y holds a label outside the declared classes "
        r"\(the label and its rows are not named or counted",
    ) as caught:
        _fit_keeping(_forest(), federation)
    assert "Jane Roe" not in str(caught.value)
    assert "4 row" not in str(caught.value)  # no row count travels either


@pytest.mark.hostile("clear_error")
def test_declared_classes_not_of_the_label_type_are_refused() -> None:
    X, y, groups = _shared_patients()
    federation = Federation.from_groups(X, y, groups).with_classes([0, 1, "x"])
    with pytest.raises(
        SchemaMismatchError, match=r"declared classes \['0', '1', 'x'\] are not all int"
    ):
        _fit_keeping(_forest(), federation)


@pytest.mark.hostile("clear_error")
def test_declared_classes_need_a_classification_task() -> None:
    X, y, groups = _shared_patients()
    federation = Federation.from_groups(X, y, groups).with_classes([0, 1])
    with pytest.raises(
        ValidationError, match="run: classes are declared for a regression task"
    ):
        federation.run(NullStrategy(), task="regression")


@payload("test.declared_codes")
class CodesRequest(Payload):
    """Ask a client for the codes it computes on (a test probe, not a protocol)."""

    column: int

    def expected_reply(self) -> ReplySpec:
        return ReplySpec(CodesReply, {"codes": Field.array("f", (None,))})


@payload("test.declared_codes_reply")
class CodesReply(Payload):
    codes: np.ndarray


@handler("test.declared_codes")
def _codes(request: CodesRequest, data: ClientData) -> CodesReply:
    return CodesReply(data.matrix[:, request.column].copy())


@pytest.mark.hostile("correct")
def test_a_flower_client_applies_the_run_config_declaration_to_every_message() -> None:
    """A new ClientApp process per message: the run config's declaration, every time."""
    pytest.importorskip("flwr")
    # The ClientApp itself is under test here, so its Flower types are needed.
    from flwr.app import Context, Message, Metadata, RecordDict  # noqa: TID251

    from fedtrees.federation.flower import make_client_app
    from fedtrees.federation.flower._wire import pack, unpack

    names = ["patient_05", "patient_01", "patient_05", "patient_03"]
    app = make_client_app(
        lambda path, target, **_: (pd.DataFrame({"name": names}), [0] * 4)
    )
    order = ["patient_05", "patient_04", "patient_03", "patient_02", "patient_01"]
    context = Context(
        run_id=1,
        node_id=2,
        node_config={"client-id": "a", "data-path": "unused"},
        state=RecordDict(),
        run_config={"categories": json.dumps({"name": order})},
    )
    request = CodesRequest(0)
    data = encode(Envelope("request", 3, "a", request.kind, request))
    metadata = Metadata(
        run_id=1,
        message_id="m1",
        src_node_id=1,
        dst_node_id=2,
        reply_to_message_id="",
        group_id="1",
        created_at=0.0,
        ttl=60.0,
        message_type="query.fedtrees",
    )
    message = Message(pack(data), metadata=metadata)  # type: ignore[call-overload]
    reply = decode(unpack(app(message, context).content))
    assert isinstance(reply.payload, CodesReply), reply.error
    np.testing.assert_array_equal(reply.payload.codes, [order.index(v) for v in names])


def _ignore_declaration(reply: Payload) -> Payload:
    """A client that reports its own categories and echoes no declaration."""
    assert isinstance(reply, SchemaReply)
    names = np.asarray(["patient_00"])
    return dataclasses.replace(
        reply,
        categories=names,
        n_categories=np.asarray([1, 0]),
        declared_columns=np.zeros(0, dtype="<U1"),
    )


def _values_despite_declaration(reply: Payload) -> Payload:
    """A client that echoes the declaration but still sends a category value."""
    assert isinstance(reply, SchemaReply)
    return dataclasses.replace(
        reply, categories=np.asarray(["patient_00"]), n_categories=np.asarray([1, 0])
    )


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_ignore_declaration, r"field 'declared_columns'.*\['name'\] expected"),
        (
            _values_despite_declaration,
            r"field 'n_categories'.*list categories of the declared column 'name'",
        ),
    ],
    ids=["no-echo", "values-sent"],
)
def test_a_reply_that_ignores_the_declaration_is_refused(
    mutate: Callable[[Payload], Payload], message: str
) -> None:
    X, y, groups = _shared_patients()
    fault = Fault("b", "mutate", round=0, mutate=mutate)
    federation = Federation.from_groups(
        X, y, groups, faults=[fault], categories={"name": PATIENTS}
    )
    with pytest.raises(RemoteProtocolError, match=r"Client 'b', round 0.*" + message):
        federation.run(NullStrategy(), task="classification")


@pytest.mark.hostile("clear_error")
def test_a_malformed_declaration_from_the_server_is_refused_by_the_client() -> None:
    X, y, _ = _shared_patients()
    request = SchemaRequest(
        "classification", np.asarray(["name"]), np.asarray(["x"]), np.asarray([2])
    )
    with pytest.raises(ValidationError, match="n_declared must give one count"):
        report_schema(request, ClientData.build("a", X, y), ClientState())
