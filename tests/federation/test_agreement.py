"""Sites whose category lists differ agree on their union, as ``fit`` in process.

Three CSV sites, each read by the site rules (``load_client_file``): a rare
``workclass`` at one site only and a rare ``colour`` at another. In process from
the same files (``Federation.from_clients``) the model equals ``fit`` on the
pooled rows, with no declaration; the sites learn positions, never the other
sites' names; with ``require_declared_categories`` nothing is sent and the
undeclared column is refused by name. The same path through Flower's ClientApp
is ``tests/federation/flower/test_csv_agreement.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedtrees import FederatedID3Classifier, FedGBDTClassifier
from fedtrees.audit import find_client_values
from fedtrees.datasets import load_client_file
from fedtrees.exceptions import RemoteProtocolError, SchemaMismatchError
from fedtrees.federation import (
    ClientData,
    ClientState,
    Fault,
    Federation,
    InProcessTransport,
    Ledger,
    SchemaRequest,
    agree,
)
from fedtrees.federation._agreement import CategoriesRequest, coding_requests
from fedtrees.federation._codec import decode
from fedtrees.federation._schema import report_schema
from tests.federation.helpers import NullStrategy

RARE_WORKCLASS = "Never-worked"  # at site "a" only
RARE_COLOUR = "teal"  # at site "c" only


def write_sites(folder: Path, n: int = 60) -> dict[str, Path]:
    """Three CSV sites; a rare value in two columns, each at one site only."""
    rng = np.random.default_rng(3)
    files = {}
    for k, site in enumerate("abc"):
        age = rng.integers(18, 80, size=n)
        work = rng.choice(["Private", "Self-emp", "State-gov"], size=n).astype(object)
        colour = rng.choice(["red", "blue"], size=n).astype(object)
        if site == "a":
            work[:3] = RARE_WORKCLASS
        if site == "c":
            colour[:4] = RARE_COLOUR
        if site == "b":
            work[work == "State-gov"] = "Private"  # b lacks a common value too
        score = (age > 45) + (work == "Self-emp") + (colour == "red") + k % 2
        label = np.where(score + rng.normal(0, 0.5, n) > 1.5, "high", "low")
        frame = pd.DataFrame(
            {"age": age, "workclass": work, "colour": colour, "label": label}
        )
        path = folder / f"{site}.csv"
        frame.to_csv(path, index=False)
        files[site] = path
    return files


@pytest.fixture
def site_files(tmp_path: Path) -> dict[str, Path]:
    return write_sites(tmp_path)


def sites_of(files: dict[str, Path]) -> dict[str, tuple[pd.DataFrame, pd.Series]]:
    return {site: load_client_file(path) for site, path in files.items()}


def pooled(
    sites: dict[str, tuple[pd.DataFrame, pd.Series]],
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The sites' rows in one table, as a user of ``fit`` builds it from the files."""
    X = pd.concat([X for X, _ in sites.values()], ignore_index=True)
    for column in ("workclass", "colour"):
        X[column] = X[column].astype(str).astype("category")  # sorted by text
    y = np.concatenate([y.to_numpy() for _, y in sites.values()])
    groups = np.concatenate([[site] * len(y) for site, (_, y) in sites.items()])
    return X, y, groups


def test_sites_whose_lists_differ_agree_on_the_sorted_union(
    site_files: dict[str, Path],
) -> None:
    sites = sites_of(site_files)
    assert sites["a"][0]["workclass"].cat.categories.tolist() != (
        sites["b"][0]["workclass"].cat.categories.tolist()
    )
    ledger = Ledger(keep_messages=True)
    federation = Federation.from_clients(sites)
    info = federation.run(NullStrategy(), task="classification", ledger=ledger).info
    schema = info.schema
    assert schema.agreed_columns == ("workclass", "colour")
    work = schema.categories[schema.feature_names.index("workclass")]
    assert work == ("Never-worked", "Private", "Self-emp", "State-gov")
    colour = schema.categories[schema.feature_names.index("colour")]
    assert colour == ("blue", "red", "teal")
    # The second step of round 0 reaches every site whose lists differ: all three.
    kinds = [(e.round, e.client, e.kind) for e in ledger.entries]
    assert kinds.count((0, "a", "federation.categories")) == 1
    assert {c for r, c, k in kinds if k == "federation.categories"} == set("abc")
    assert ledger.rounds == 1  # both steps are the agreement, round 0


def test_the_sites_code_by_the_union_and_learn_no_other_name(
    site_files: dict[str, Path],
) -> None:
    sites = sites_of(site_files)
    federation = Federation.from_clients(sites)
    ledger = Ledger(keep_messages=True)
    federation.run(NullStrategy(), task="classification", ledger=ledger)
    codes = federation.on_each_site(lambda data: data.matrix[:, 1].tolist())
    X, _, _ = pooled(sites)
    union = X["workclass"].cat.categories.tolist()
    for site, (frame, _) in sites.items():
        assert frame.columns[1] == "workclass"
        expected = [union.index(v) for v in frame["workclass"].astype(str)]
        assert codes[site] == expected
    # b holds no rare value: its request names no category, only positions.
    request = next(
        decode(m.data).payload
        for m in ledger.captured
        if m.client == "b"
        and m.kind == CategoriesRequest.kind
        and m.direction == "down"
    )
    assert isinstance(request, CategoriesRequest)
    assert request.columns.tolist() == ["workclass", "colour"]
    assert request.sizes.tolist() == [4, 3]
    assert request.positions.tolist() == [1, 2, 0, 1]  # Private, Self-emp; blue, red
    report = find_client_values(ledger, federation)  # raises on any finding
    assert report.category_values["a"] == frozenset(
        {"category values in federation.schema_reply"}
    )


def test_a_run_whose_lists_agree_has_no_second_step() -> None:
    X = pd.DataFrame({"c": pd.Categorical(["x", "y"])})
    ledger = Ledger()
    Federation.from_clients([(X, [0, 1]), (X, [1, 0])]).run(
        NullStrategy(), task="classification", ledger=ledger
    )
    assert {e.kind for e in ledger.entries} == {"federation.schema"}


def test_a_common_list_keeps_its_order_and_only_the_differing_site_is_told() -> None:
    ordered = pd.CategoricalDtype(["low", "mid", "high"])
    a = pd.DataFrame({"c": pd.Series(["low", "high"], dtype=ordered)})
    b = pd.DataFrame({"c": pd.Categorical(["mid", "low"])})  # its own: [low, mid]
    replies = {
        site: report_schema(
            SchemaRequest("classification"),
            ClientData.build(site, X, [0, 1]),
            ClientState(),
        )
        for site, X in (("a", a), ("b", b))
    }
    same = agree({"a": replies["a"], "b": replies["a"]}, "classification")
    assert same.categories == (("low", "mid", "high"),)
    assert not same.agreed_columns
    schema = agree(replies, "classification")
    assert schema.categories == (("high", "low", "mid"),)  # differing: sorted union
    requests = coding_requests(replies, schema)
    assert requests["a"].positions.tolist() == [1, 2, 0]  # low, mid, high
    assert requests["b"].positions.tolist() == [1, 2]


@pytest.mark.parametrize(
    ("estimator", "params"),
    [
        (FedGBDTClassifier, {"n_estimators": 3, "max_depth": 3, "max_bins": 16}),
        (FederatedID3Classifier, {"max_depth": 3}),
    ],
)
def test_fit_federation_from_the_files_equals_fit_on_the_pooled_rows(
    site_files: dict[str, Path], estimator: type, params: dict[str, object]
) -> None:
    sites = sites_of(site_files)
    X, y, groups = pooled(sites)
    expected = estimator(random_state=0, **params).fit(X, y, groups=groups)
    faults = [Fault("b", "forget", 2), Fault("c", "forget")]  # state is a cache
    federation = Federation.from_clients(sites, faults=faults)
    model = estimator(random_state=0, **params).fit_federation(federation)
    held_out = X.iloc[::7].copy()
    held_out.loc[held_out.index[0], "workclass"] = RARE_WORKCLASS
    np.testing.assert_array_equal(
        model.predict_proba(held_out), expected.predict_proba(held_out)
    )
    assert model.communication_.rounds == expected.communication_.rounds


def test_require_declared_categories_refuses_by_name_and_sends_no_name(
    site_files: dict[str, Path],
) -> None:
    sites = sites_of(site_files)
    federation = Federation.from_clients(sites, require_declared_categories=True)
    ledger = Ledger(keep_messages=True)
    with pytest.raises(RemoteProtocolError, match="column 'workclass'") as caught:
        federation.run(NullStrategy(), task="classification", ledger=ledger)
    text = str(caught.value)
    assert "Client 'a'" in text
    assert "require_declared_categories" in text
    assert "categories={'workclass'" in text  # the advice for frames
    assert RARE_WORKCLASS not in text
    assert "Private" not in text
    replies = [decode(m.data).payload for m in ledger.captured if m.direction == "up"]
    assert not any(getattr(r, "categories", np.zeros(0)).size for r in replies)

    X, _, _ = pooled(sites)
    declared = {c: X[c].cat.categories.tolist() for c in ("workclass", "colour")}
    info = federation.with_categories(declared).run(
        NullStrategy(), task="classification"
    )
    assert info.info.schema.declared_columns == ("workclass", "colour")

    short = dict(declared, workclass=["Private", "Self-emp", "State-gov"])
    with pytest.raises(RemoteProtocolError, match="column 'workclass'") as outside:
        federation.with_categories(short).run(NullStrategy(), task="classification")
    assert "Client 'a'" in str(outside.value)
    assert RARE_WORKCLASS not in str(outside.value)


def test_a_site_that_reports_no_names_refuses_undeclared_columns() -> None:
    X = pd.DataFrame({"c": pd.Categorical(["x", "y"]), "n": [1.0, 2.0]})
    data = {
        "a": ClientData.build("a", X, [0, 1]),
        "b": ClientData.build("b", X, [1, 0], reports_categories=False),
    }
    federation = Federation(InProcessTransport(data))
    with pytest.raises(
        RemoteProtocolError, match=r"Client 'b'.*column 'c'.*reports_categories=False"
    ):
        federation.run(NullStrategy(), task="classification")
    declared = federation.with_categories({"c": ["x", "y"]})
    assert declared.run(NullStrategy(), task="classification").rounds == 0


def test_a_kind_mismatch_advises_for_frames_or_for_site_files() -> None:
    number = report_schema(
        SchemaRequest("classification"),
        ClientData.build("a", pd.DataFrame({"age": [1.0]}), [0]),
        ClientState(),
    )
    text = report_schema(
        SchemaRequest("classification"),
        ClientData.build("b", pd.DataFrame({"age": pd.Categorical(["old"])}), [1]),
        ClientState(),
    )
    replies = {"a": number, "b": text}
    with pytest.raises(SchemaMismatchError, match=r"astype\(\"category\"\)"):
        agree(replies, "classification")
    with pytest.raises(
        SchemaMismatchError, match=r'categorical="age".*--categorical age.*na-values'
    ):
        agree(replies, "classification", site_files=True)
