"""Issue 42, sites whose categories differ: the union, its opt-outs, the new step.

    python benchmarks/hostile_sweep.py --only category-union/

- ``union-*``: sites with a rare value at one site only (the federation must
  agree on the union and give ``fit``'s model on the pooled rows); a column
  numeric at one site and categorical at another (refused, naming both).
- ``opt-out-*``: ``require_declared_categories`` with no declaration, with a
  declaration that misses a site's value, and a site that reports no names
  (each refused naming the site and the column, never the value, which is a
  secret of the case).
- ``step-*``: a site's reply to the new ``federation.categories`` step that
  names other columns, and a schema reply that lists categories though the run
  requires declared ones (refused, naming the site and the field).

On main's code the union cases fail with "declare the same categories
everywhere" (the sweep then says what main did).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from _sweep_core import Verdict, accepted, case, check, secret

F = "category-union"
RARE = "Never-worked"


def _sites() -> dict[str, tuple[pd.DataFrame, list[int]]]:
    rng = np.random.default_rng(5)
    out = {}
    for k, site in enumerate("abc"):
        work = rng.choice(["Private", "Self-emp"], size=40).astype(object)
        if site == "a":
            work[:2] = RARE
        age = rng.integers(18, 80, size=40).astype(float)
        y = ((age > 45) ^ (work == "Self-emp") ^ (k == 1)).astype(int).tolist()
        out[site] = (pd.DataFrame({"age": age, "work": pd.Categorical(work)}), y)
    return out


def _run(**federation: Any) -> Any:
    from fedtrees.federation import Federation

    fed = Federation.from_clients(_sites(), **federation)
    return fed.run(_null(), task="classification").info


@case("union-rare-value-equals-pooled-fit", F)
def union_equals_pooled() -> Verdict:
    from fedtrees import FedGBDTClassifier
    from fedtrees.federation import Federation

    sites = _sites()
    X = pd.concat([x for x, _ in sites.values()], ignore_index=True)
    X["work"] = X["work"].astype(str).astype("category")
    y = [label for _, v in sites.values() for label in v]
    groups = [s for s, (_, v) in sites.items() for _ in v]
    params = {"n_estimators": 2, "max_depth": 2, "random_state": 0}
    pooled = FedGBDTClassifier(**params).fit(X, y, groups=groups)
    federated = FedGBDTClassifier(**params).fit_federation(
        Federation.from_clients(sites)
    )
    same = np.array_equal(federated.predict_proba(X), pooled.predict_proba(X))
    return check(same, "the union's model is fit's", "the models differ")


@case("union-kind-mismatch", F, ("'work'", "client 'b'", "category"))
def kind_mismatch() -> Verdict:
    from fedtrees.federation import Federation

    sites = _sites()
    X, y = sites["b"]
    sites["b"] = (X.assign(work=np.arange(len(X), dtype=float)), y)
    Federation.from_clients(sites).run(_null(), task="classification")
    return accepted("a column numeric at one site and categorical at another")


def _null() -> Any:
    from fedtrees.federation import FederationInfo

    class Null:
        def start(self, info: FederationInfo) -> None:
            pass

        def plan_round(self, round: int) -> None:
            return None

        def aggregate(self, round: int, replies: Any) -> None:
            raise AssertionError

        def finish(self) -> None:
            return None

    return Null()


@case("opt-out-undeclared", F, ("client 'a'", "column 'work'", "declare"))
def opt_out_undeclared() -> Verdict:
    secret(RARE, "Private", "Self-emp")
    _run(require_declared_categories=True)
    return accepted("an undeclared categorical column under the opt-out")


@case("opt-out-value-outside", F, ("client 'a'", "column 'work'"))
def opt_out_value_outside() -> Verdict:
    secret(RARE)
    _run(require_declared_categories=True, categories={"work": ["Private", "Self-emp"]})
    return accepted("a value outside the declaration")


@case("opt-out-quiet-site", F, ("client 'q'", "column 'work'"))
def quiet_site() -> Verdict:
    from fedtrees.federation import ClientData, Federation, InProcessTransport

    secret(RARE, "Private")
    X, y = _sites()["a"]
    data = {"q": ClientData.build("q", X, y, reports_categories=False)}
    Federation(InProcessTransport(data)).run(_null(), task="classification")
    return accepted("a site that reports no names, with no declaration")


def _mutating(kind: type, change: Any) -> Any:
    def mutate(reply: Any) -> Any:
        return change(reply) if isinstance(reply, kind) else reply

    return mutate


@case("step-reply-other-columns", F, ("client 'b'", "columns"))
def step_other_columns() -> Verdict:
    from fedtrees.federation import Fault
    from fedtrees.federation._agreement import CategoriesReply

    sites = _sites()
    X, y = sites["b"]
    sites["b"] = (X.assign(work=pd.Categorical(X["work"].astype(str))), y)
    change = _mutating(CategoriesReply, lambda r: CategoriesReply(np.asarray(["x"])))
    _run(faults=[Fault("b", "mutate", 0, change)])
    return accepted("a categories reply naming other columns")


@case("step-schema-lists-under-opt-out", F, ("client 'b'", "categories"))
def schema_lists_under_opt_out() -> Verdict:
    import dataclasses

    from fedtrees.federation import Fault, SchemaReply

    def listing(reply: SchemaReply) -> SchemaReply:
        return dataclasses.replace(
            reply, categories=np.asarray(["Private"]), n_categories=np.asarray([0, 1])
        )

    _run(
        require_declared_categories=True,
        categories={"work": [RARE, "Private", "Self-emp"]},
        faults=[Fault("b", "mutate", 0, _mutating(SchemaReply, listing))],
    )
    return accepted("a schema reply listing categories under the opt-out")
