"""What leaves a client beyond the threat model, and what no longer does (issue 24).

- ``candidates="uniform"`` sent each client's exact per-feature min and max (a
  one-row client's whole row), and spaced the model's thresholds over the
  global extremes; it now takes the pooled grid of ``"hist"`` (nothing at all
  with declared ``bin_edges``).
- A client's errors travel to the server: they name no row count (FedGA's
  small site said "Got 3 rows"), no label (a label outside the agreed classes
  was named), and a third-party exception's text (scikit-learn's and numpy's
  messages state sample counts and values) stays in the client's log.
- The value audit searches error texts too, and notes what an error reveals
  by existing.
"""

from __future__ import annotations

import dataclasses
import logging
import re

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from fedtrees import FedForestClassifier, FedGAClassifier
from fedtrees.algorithms.toy import ToyCountsRequest, run_toy
from fedtrees.audit import find_client_values, recording
from fedtrees.exceptions import (
    ClientDropoutWarning,
    PrivacyAuditError,
    RemoteProtocolError,
    ValidationError,
)
from fedtrees.federation import (
    ClientData,
    Envelope,
    Fault,
    Federation,
    InvalidField,
    Ledger,
    Payload,
    decode,
    encode,
)
from fedtrees.federation._client import serve
from fedtrees.learners import fit_id3
from fedtrees.tree import NodeKind

SECRET = "Jane Roe's diagnosis"


def _sites(rows: int = 300, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3 * rows, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    return X, y, np.repeat(["a", "b", "c"], rows)


def _fit(model: FedForestClassifier, federation: Federation) -> Ledger:
    with recording() as ledgers:
        model.fit_federation(federation)
    (ledger,) = ledgers
    return ledger


def _uniform(**params: object) -> FedForestClassifier:
    return FedForestClassifier(
        n_estimators=3, max_depth=3, candidates="uniform", random_state=0,
        max_features=None, **params,
    )  # fmt: skip


# -- candidates="uniform" ----------------------------------------------------------
@pytest.mark.hostile("correct")
def test_uniform_sends_no_ranges_round_only_the_pooled_grid() -> None:
    X, y, groups = _sites()
    ledger = _fit(_uniform(), Federation.from_groups(X, y, groups))
    up = {m.kind for m in ledger.captured if m.direction == "up"}
    assert up == {"federation.schema", "fedforest.grid", "fedforest.evaluate"}


@pytest.mark.hostile("correct")
def test_uniform_thresholds_do_not_span_one_clients_extreme_value() -> None:
    # Site c holds one row at 1000 (its max): spaced over [min, max], the old
    # thresholds reached 969 and let every model holder read the 1000 back.
    X, y, groups = _sites()
    X[np.flatnonzero(groups == "c")[0], 0] = 1000.0
    model = _uniform()
    model.fit(X, y, groups=groups)
    on_x0 = np.concatenate(
        [
            t.threshold[(t.kind == NodeKind.NUMERIC) & (t.feature == 0)]
            for t in model.trees_
        ]
    )
    assert on_x0.size
    assert np.abs(on_x0).max() < 5.0  # the pooled grid's extent
    assert model.score(X, y) > 0.9


@pytest.mark.hostile("correct")
def test_uniform_with_declared_edges_sends_no_client_value() -> None:
    X, y, groups = _sites(rows=40)
    edges = {j: list(np.linspace(-3.0, 3.0, 17)) for j in range(3)}
    federation = Federation.from_groups(X, y, groups)
    ledger = _fit(_uniform(bin_edges=edges), federation)
    assert ledger.rounds == 1 + 3  # the agreement, then one round per level
    for m in ledger.captured:
        if m.direction != "up":
            continue
        envelope = decode(m.data)
        assert envelope.payload is not None
        values = X[groups == m.client].ravel()
        for field in dataclasses.fields(envelope.payload):  # type: ignore[arg-type]
            sent = getattr(envelope.payload, field.name)
            if isinstance(sent, np.ndarray) and sent.dtype.kind == "f":
                assert not np.isin(values, sent).any(), (m.kind, field.name)


# -- client errors name no row count and no value ----------------------------------
@pytest.mark.hostile("clear_error")
def test_a_small_fedga_site_is_dropped_without_stating_its_rows() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(83, 3))
    y = (X[:, 0] > 0).astype(int)
    groups = np.repeat(["a", "b", "tiny"], [40, 40, 3])
    model = FedGAClassifier(
        n_generations=1, population_size=4, depth_range=(2, 3), random_state=0
    )
    with pytest.warns(ClientDropoutWarning) as caught:
        model.fit(X, y, groups=groups)
    (dropped,) = [str(w.message) for w in caught if "'tiny', round 1" in str(w.message)]
    assert "needs at least folds=5 rows" in dropped
    assert "this client has fewer" in dropped
    assert not re.search(r"\b3 rows|Got 3", dropped)


@pytest.mark.hostile("clear_error")
def test_a_label_outside_the_agreed_classes_is_not_named() -> None:
    # Site b hides its label at the agreement; round 1 then fails there.
    fed_data = {
        "a": (np.zeros((5, 1)), ["x"] * 5),
        "b": (np.zeros((5, 1)), ["x"] * 4 + [SECRET]),
    }

    def hide(p: Payload) -> Payload:
        return dataclasses.replace(p, labels=np.array(["x"]))  # type: ignore[type-var]

    federation = Federation.from_clients(
        fed_data, faults=(Fault("b", "mutate", round=0, mutate=hide),)
    )
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'b', round 1.*not among the \d+ agreed classes",
    ) as caught:
        run_toy(federation, feature=0, n_bins=2, n_rounds=1)
    assert "Jane Roe" not in str(caught.value)


def _raising(message: str) -> object:
    def handle(request: Payload, data: ClientData, state: object) -> Payload:
        raise ValueError(message)

    return handle


@pytest.mark.hostile("clear_error")
def test_a_third_party_error_text_stays_in_the_clients_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # scikit-learn, numpy and pandas state counts and values in their messages.
    text = f"could not convert string to float: {SECRET!r}; n_samples=3"
    request = ToyCountsRequest(np.array(["0", "1"]))
    data = ClientData.build("a", np.zeros((3, 1)), [0, 1, 0])
    wire = encode(Envelope("request", 1, "a", request.kind, request))
    with caplog.at_level(logging.WARNING, logger="fedtrees.client"):
        reply = decode(serve(wire, data, _raising(text)))  # type: ignore[arg-type]
    assert reply.type == "error"
    assert reply.error.startswith("ValueError in fedtrees.federation._client, line ")
    assert "its message is withheld" in reply.error
    assert "Jane Roe" not in reply.error
    assert "n_samples" not in reply.error
    assert SECRET in caplog.text  # the site's operator still sees it


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    "error",
    [
        InvalidParameterError("The 'max_depth' parameter of X must be >= 1. Got -1."),
        InvalidField("trees", "a tree of the request is malformed"),
    ],
    ids=["scikit-learn's parameter refusal", "a request's invalid field"],
)
def test_errors_about_the_request_travel_whole(error: Exception) -> None:
    # They name what the request set, never the client's data.
    request = ToyCountsRequest(np.array(["0", "1"]))
    data = ClientData.build("a", np.zeros((3, 1)), [0, 1, 0])
    wire = encode(Envelope("request", 1, "a", request.kind, request))

    def handle(request: Payload, data: ClientData, state: object) -> Payload:
        raise error

    reply = decode(serve(wire, data, handle))  # type: ignore[arg-type]
    assert reply.error == f"{type(error).__name__}: {error}"


@pytest.mark.hostile("clear_error")
def test_repeated_agreed_classes_are_refused_by_the_client() -> None:
    data = ClientData.build("a", np.zeros((3, 1)), ["x", "y", "x"])
    with pytest.raises(ValidationError, match="classes must be one list of distinct"):
        data.label_codes(["x", "y", "x"])


@pytest.mark.hostile("clear_error")
def test_a_site_whose_data_cannot_load_names_no_value() -> None:
    pytest.importorskip("flwr")
    from fedtrees.federation.flower._site import serve_site
    from fedtrees.federation.flower._wire import SiteMessage

    def load(path: str, target: object, **_: object) -> tuple[np.ndarray, list[int]]:
        raise ValueError(f"could not convert string to float: {SECRET!r}")

    def unequal(path: str, target: object, **_: object) -> tuple[np.ndarray, list[int]]:
        return np.zeros((57, 2)), [0] * 56

    request = ToyCountsRequest(np.array(["0", "1"]))
    wire = encode(Envelope("request", 2, "Hungary", request.kind, request))
    config = {"client-id": "Hungary", "data-path": "site.csv"}
    for loader, kept_out in ((load, "Jane Roe"), (unequal, "57")):
        message = SiteMessage(wire, config, {}, 1)
        answer = serve_site(message, loader, lambda job: None)  # type: ignore[arg-type]
        error = decode(answer.reply).error
        assert error.startswith("cannot load local data:")
        assert kept_out not in error
        assert "56" not in error


@pytest.mark.hostile("clear_error")
def test_a_learners_refusal_of_labels_names_none() -> None:
    X = np.zeros((4, 1))
    with pytest.raises(
        ValidationError, match=r"one class code in \[0, 2\) per row"
    ) as caught:
        fit_id3(X, np.array([0, 1, 7, 1]), 2, arity=np.array([1]), max_depth=1)
    assert "7" not in str(caught.value)


# -- the audit reads error texts ------------------------------------------------
@pytest.mark.hostile("documented")
def test_the_value_audit_finds_a_named_label_and_notes_what_errors_reveal() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] > 0, "sick", "well").astype(object)
    federation = Federation.from_groups(X, y, np.repeat(["a", "b"], [30, 10]))
    model = FedGAClassifier(n_generations=1, population_size=4, depth_range=(2, 3),
                            cv_folds=12, random_state=0)  # fmt: skip
    with (
        recording() as ledgers,
        pytest.warns(ClientDropoutWarning, match="'b', round 1"),
    ):
        model.fit_federation(federation)  # site b is below 12 rows
    (ledger,) = ledgers
    report = find_client_values(ledger, federation)
    assert any("by design, a site with fewer rows than" in n for n in report.notes)
    # An error that named a label or the row count would be a finding:
    forged = [
        dataclasses.replace(m, data=encode(Envelope(
            "error", m.round, m.client, m.kind, None,
            "ValueError: label 'sick' at one of 10 rows",
        ))) if m.direction == "up" and m.kind == "fedga.init" else m
        for m in ledger.captured
    ]  # fmt: skip
    ledger.captured[:] = forged
    with pytest.raises(
        PrivacyAuditError, match=r"names the client's value 'sick'.*row count 10"
    ):
        find_client_values(ledger, federation)
