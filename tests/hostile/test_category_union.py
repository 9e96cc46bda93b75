"""Hostile inputs to the union of categories and its opt-outs (issue 42, item 1).

Each new error names what it must (the client, the column, the key or field) and
never a category value; a malformed request or reply of the new step is refused
before it touches a site's coding or the server's state.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedtrees.exceptions import RemoteProtocolError, ValidationError
from fedtrees.federation import (
    ClientData,
    ClientState,
    Fault,
    Federation,
    InProcessTransport,
    SchemaReply,
)
from fedtrees.federation._agreement import (
    CategoriesReply,
    CategoriesRequest,
    apply_agreed_categories,
)
from tests.federation.helpers import NullStrategy

RARE = "Never-worked"


def _sites() -> dict[str, tuple[pd.DataFrame, list[int]]]:
    common = ["Private", "Self-emp"]
    return {
        "a": (pd.DataFrame({"work": pd.Categorical([*common, RARE])}), [0, 1, 1]),
        "b": (pd.DataFrame({"work": pd.Categorical(common)}), [1, 0]),
    }


@pytest.mark.hostile("clear_error")
def test_the_run_opt_out_names_client_and_column_never_the_value() -> None:
    federation = Federation.from_clients(_sites(), require_declared_categories=True)
    with pytest.raises(RemoteProtocolError, match=r"Client 'a'.*column 'work'") as e:
        federation.run(NullStrategy(), task="classification")
    assert RARE not in str(e.value)
    assert "Private" not in str(e.value)


@pytest.mark.hostile("clear_error")
def test_a_declared_run_refuses_a_value_outside_it_without_naming_it() -> None:
    federation = Federation.from_clients(
        _sites(),
        categories={"work": ["Private", "Self-emp"]},
        require_declared_categories=True,
    )
    with pytest.raises(RemoteProtocolError, match=r"Client 'a'.*column 'work'") as e:
        federation.run(NullStrategy(), task="classification")
    assert RARE not in str(e.value)


@pytest.mark.hostile("clear_error")
def test_a_quiet_site_refuses_an_undeclared_column_by_name() -> None:
    X = pd.DataFrame({"work": pd.Categorical(["Private", RARE])})
    data = {"q": ClientData.build("q", X, [0, 1], reports_categories=False)}
    with pytest.raises(
        RemoteProtocolError, match=r"Client 'q'.*column 'work'.*reports no category"
    ) as e:
        Federation(InProcessTransport(data)).run(NullStrategy(), task="classification")
    assert RARE not in str(e.value)


def _leaks_categories(reply: object) -> object:
    assert isinstance(reply, SchemaReply)
    return SchemaReply(
        **{
            **{f: getattr(reply, f) for f in reply.__dataclass_fields__},
            "categories": np.asarray(["Private"]),
            "n_categories": np.asarray([1]),
        }
    )


@pytest.mark.hostile("clear_error")
def test_a_reply_listing_categories_under_the_opt_out_is_refused() -> None:
    X = pd.DataFrame({"work": pd.Categorical(["Private"])})
    federation = Federation.from_clients(
        {"a": (X, [0]), "b": (X, [1])},
        categories={"work": ["Private"]},
        require_declared_categories=True,
        faults=[Fault("b", "mutate", 0, _leaks_categories)],  # type: ignore[arg-type]
    )
    with pytest.raises(RemoteProtocolError, match=r"Client 'b'.*round 0.*categories"):
        federation.run(NullStrategy(), task="classification")


@pytest.mark.hostile("clear_error")
def test_a_categories_reply_that_does_not_echo_the_columns_is_refused() -> None:
    def other_columns(reply: object) -> object:
        if isinstance(reply, CategoriesReply):
            return CategoriesReply(np.asarray(["elsewhere"]))
        return reply

    federation = Federation.from_clients(
        _sites(),
        faults=[Fault("b", "mutate", 0, other_columns)],  # type: ignore[arg-type]
    )
    with pytest.raises(RemoteProtocolError, match=r"Client 'b'.*round 0.*columns"):
        federation.run(NullStrategy(), task="classification")


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("sizes", "n_own", "positions", "match"),
    [
        ([3], [2], [0, 0], "distinct position"),
        ([2], [2], [0, 2], "distinct position"),
        ([3], [1], [0], "distinct position"),
        ([3], [3], [0, 1], "n_own adding up"),
    ],
    ids=["repeated", "out-of-range", "too-few", "counts"],
)
def test_a_malformed_categories_request_is_refused_naming_the_client(
    sizes: list[int], n_own: list[int], positions: list[int], match: str
) -> None:
    data = ClientData.build(
        "a", pd.DataFrame({"c": pd.Categorical(["x", "y"])}), [0, 1]
    )
    bad = CategoriesRequest(
        np.asarray(["c"]),
        np.asarray(sizes, dtype=np.int64),
        np.asarray(n_own, dtype=np.int64),
        np.asarray(positions, dtype=np.int64),
    )
    with pytest.raises(ValidationError, match=match):
        apply_agreed_categories(bad, data, ClientState())
    assert data.matrix[:, 0].tolist() == [0.0, 1.0]  # its coding is untouched


@pytest.mark.hostile("clear_error")
def test_a_categories_request_for_a_numeric_or_declared_column_is_refused() -> None:
    X = pd.DataFrame({"c": pd.Categorical(["x"]), "n": [1.0]})
    data = ClientData.build("a", X, [0])
    for column, match in (("n", "not categorical"), ("zz", "not categorical")):
        request = CategoriesRequest(
            np.asarray([column]),
            np.asarray([1], dtype=np.int64),
            np.asarray([0], dtype=np.int64),
            np.zeros(0, dtype=np.int64),
        )
        with pytest.raises(ValidationError, match=rf"Client 'a'.*{column!r}.*{match}"):
            apply_agreed_categories(request, data, ClientState())
    data.declare_categories({"c": ["x"]})
    declared = CategoriesRequest(
        np.asarray(["c"]),
        np.asarray([2], dtype=np.int64),
        np.asarray([1], dtype=np.int64),
        np.asarray([1], dtype=np.int64),
    )
    with pytest.raises(ValidationError, match="a declared column"):
        apply_agreed_categories(declared, data, ClientState())


@pytest.mark.hostile("clear_error")
def test_the_opt_out_parameter_must_be_a_bool() -> None:
    with pytest.raises(
        ValidationError,
        match="The 'require_declared_categories' parameter of Federation must be",
    ):
        Federation.from_clients(_sites(), require_declared_categories="yes")  # type: ignore[arg-type]


@pytest.mark.hostile("clear_error")
def test_flower_config_flags_must_be_booleans() -> None:
    pytest.importorskip("flwr")
    from fedtrees.federation.flower._config import (
        check_node_config,
        require_declared_categories,
    )

    with pytest.raises(ValidationError, match="'require-declared-categories' must be"):
        require_declared_categories({"require-declared-categories": "yes"})
    site = {"client-id": "a", "data-path": "/d/a.csv", "report-categories": "no"}
    with pytest.raises(ValidationError, match="'report-categories' must be true or"):
        check_node_config(site)
