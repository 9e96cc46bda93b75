from __future__ import annotations

import dataclasses
import threading
import warnings
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from fedtrees._compile_time import compiling
from fedtrees.algorithms.toy import (
    HistogramRequest,
    ToyCountsRequest,
    ToyStrategy,
    run_toy,
)
from fedtrees.exceptions import (
    ClientDropoutWarning,
    NotEnoughClientsError,
    RemoteProtocolError,
)
from fedtrees.federation import (
    ClientData,
    Fault,
    Federation,
    FederationInfo,
    Field,
    Payload,
    ReplySpec,
    RoundEnv,
    RoundPlan,
    Schema,
    ServerStrategy,
    handler,
    payload,
    run,
)

ROWS = {"a": 37, "b": 41, "c": 43}  # primes: no legitimate array has these sizes


def _federation(
    workers: int = 1, faults: tuple[Fault, ...] = ()
) -> tuple[Federation, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    n = sum(ROWS.values())
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + rng.normal(size=n) > 0, "sick", "well")
    groups = np.repeat(list(ROWS), list(ROWS.values()))
    return Federation.from_groups(X, y, groups, workers=workers, faults=faults), X, y


def _strategy() -> ToyStrategy:
    return ToyStrategy(feature=0, n_bins=4, n_rounds=3, initial=[-1.0, 0.0, 1.0])


def test_strategy_is_testable_without_any_transport() -> None:
    strategy = _strategy()
    schema = Schema(
        ("x0",), ("numeric",), (None,), "classification", ("no", "yes"), "str"
    )
    strategy.start(FederationInfo(("a", "b"), schema))
    plan = strategy.plan_round(1)
    assert plan is not None
    assert isinstance(plan.requests["a"], ToyCountsRequest)
    from fedtrees.algorithms.toy import ToyCountsReply

    strategy.aggregate(
        1,
        {
            "a": ToyCountsReply(np.array([1.0, 2.0])),
            "b": ToyCountsReply(np.array([3.0, 0.0])),
        },
    )
    assert strategy.class_counts.tolist() == [4.0, 2.0]
    plan = strategy.plan_round(2)
    assert plan is not None
    assert isinstance(plan.requests["b"], HistogramRequest)


def test_toy_result_equals_the_pooled_computation() -> None:
    fed, X, y = _federation()
    result = run_toy(
        fed, feature=0, n_bins=4, n_rounds=3, initial=[-1.0, 0.0, 1.0]
    ).result
    assert result.classes == ("sick", "well")
    np.testing.assert_array_equal(
        result.class_counts, [np.sum(y == "sick"), np.sum(y == "well")]
    )
    for thresholds, counts in result.histograms:
        bins = np.searchsorted(thresholds, X[:, 0], side="left")
        expected = np.stack(
            [
                np.bincount(bins[y == c], minlength=len(thresholds) + 1)
                for c in ("sick", "well")
            ],
            1,
        )
        np.testing.assert_array_equal(counts, expected)
    assert len(result.histograms) == 3


def _set(
    name: str, value: Callable[[np.ndarray], np.ndarray]
) -> Callable[[Payload], Payload]:
    return lambda p: dataclasses.replace(p, **{name: value(getattr(p, name))})  # type: ignore[type-var]


FAULTS = [
    (
        Fault("b", "raise", round=3),
        "handler",
        # not fedtrees' own error: its type and line travel, its text stays
        r"failed on the client: RuntimeError in fedtrees\.federation\._transport, "
        r"line \d+ \(its message is withheld",
    ),
    (
        Fault("b", "mutate", round=3, mutate=_set("counts", lambda c: c * np.nan)),
        "counts",
        "holds NaN or inf",
    ),
    (
        Fault("b", "mutate", round=3, mutate=_set("counts", lambda c: c[:-1])),
        "counts",
        r"has shape \(3, 2\); \(4, 2\) expected",
    ),
    (
        Fault("b", "mutate", round=3, mutate=_set("counts", lambda c: -c - 1)),
        "counts",
        "negative values",
    ),
    (
        Fault(
            "b",
            "mutate",
            round=3,
            mutate=lambda p: HistogramRequest(0, np.zeros(1), np.zeros(1, str)),
        ),
        "kind",
        "'toy.histogram_reply' reply was expected",
    ),
    (Fault("b", "drop", round=3), "reply", "is missing: the client is unreachable"),
    (Fault("b", "late", round=3), "reply", "did not arrive in time"),
    (
        Fault("b", "garbage", round=3),
        "envelope",
        "is malformed: not a fedtrees message",
    ),
]


@pytest.mark.parametrize(("fault", "field", "reason"), FAULTS)
def test_a_bad_reply_names_client_round_and_field_and_leaves_state_unchanged(
    fault: Fault, field: str, reason: str
) -> None:
    fed, _, _ = _federation(faults=(fault,))
    strategy = _strategy()
    with pytest.raises(RemoteProtocolError, match=reason) as info:
        run(strategy, fed.transport, task="classification")
    error = info.value
    assert (error.client, error.round, error.kind, error.field) == (
        "b",
        3,
        "toy.histogram",
        field,
    )
    # Round 3 failed: the state is exactly what round 2 left.
    assert len(strategy.histograms) == 1
    clean = _strategy()
    run_toy_rounds(clean, rounds=2)
    np.testing.assert_array_equal(strategy.thresholds, clean.thresholds)
    np.testing.assert_array_equal(strategy.histograms[0][1], clean.histograms[0][1])


def run_toy_rounds(strategy: ToyStrategy, rounds: int) -> None:
    strategy.n_rounds = rounds - 1
    fed, _, _ = _federation()
    run(strategy, fed.transport, task="classification")


def test_an_unagreed_label_is_refused_by_the_client() -> None:
    # Client b hides its 'rare' label at the agreement; round 1 then fails there.
    fed_data = {
        "a": (np.zeros((5, 1)), ["x"] * 5),
        "b": (np.zeros((5, 1)), ["x"] * 4 + ["rare"]),
    }

    def hide_rare(p: Payload) -> Payload:
        return dataclasses.replace(p, labels=np.array(["x"]))  # type: ignore[type-var]

    fed = Federation.from_clients(
        fed_data, faults=(Fault("b", "mutate", round=0, mutate=hide_rare),)
    )
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'b', round 1.*a label that is not among the \d+ agreed classes",
    ) as caught:
        run_toy(fed, feature=0, n_bins=2, n_rounds=1)
    assert "rare" not in str(caught.value)  # the error travels: no label in it


class Tolerant(ToyStrategy):
    def plan_round(self, round: int) -> RoundPlan | None:
        plan = super().plan_round(round)
        return None if plan is None else RoundPlan(plan.requests, on_dropout="continue")


def test_dropouts_can_be_tolerated_where_the_algorithm_allows() -> None:
    fed, _, _ = _federation(faults=(Fault("c", "drop", round=1),))
    strategy = Tolerant(0, 4, 1, [-1.0, 0.0, 1.0])
    with pytest.warns(ClientDropoutWarning, match="Dropped from round 1: Client 'c'"):
        result = run(strategy, fed.transport, task="classification")
    assert [(d.client, d.round) for d in result.dropouts] == [("c", 1)]
    assert result.result.class_counts.sum() == ROWS["a"] + ROWS["b"]


def test_min_clients_is_enforced() -> None:
    fed, _, _ = _federation(
        faults=(Fault("b", "drop", round=1), Fault("c", "drop", round=1))
    )
    with pytest.raises(
        NotEnoughClientsError, match="3 clients are available; min_clients=4"
    ):
        run(_strategy(), fed.transport, task="classification", min_clients=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClientDropoutWarning)
        with pytest.raises(
            NotEnoughClientsError, match="Round 1: 1 valid replies; min_clients=2"
        ):
            run(
                Tolerant(0, 4, 1, [0.0]),
                fed.transport,
                task="classification",
                min_clients=2,
            )


def test_result_and_bytes_do_not_depend_on_threads() -> None:
    sequential = run_toy(_federation(workers=1)[0], n_bins=5, n_rounds=2)
    threaded = run_toy(_federation(workers=3)[0], n_bins=5, n_rounds=2)
    assert sequential.result.to_dict() == threaded.result.to_dict()
    a, b = sequential.ledger.to_frame(), threaded.ledger.to_frame()
    assert a.drop(columns="seconds").equals(b.drop(columns="seconds"))


def test_callbacks_see_every_round_with_its_bytes() -> None:
    seen: list[RoundEnv] = []
    result = run_toy(_federation()[0], n_bins=4, n_rounds=2, callbacks=[seen.append])
    assert [e.round for e in seen] == [0, 1, 2, 3]
    assert [e.kind for e in seen] == [
        "federation.schema",
        "toy.counts",
        "toy.histogram",
        "toy.histogram",
    ]
    by_round = result.ledger.by_round()
    assert [e.bytes_up for e in seen] == by_round["bytes_up"].tolist()
    assert seen[1].metrics == {"rows": float(sum(ROWS.values()))}
    assert all(e.expected_rounds == 3 for e in seen)
    assert all(e.n_replies == e.n_requests == 3 for e in seen)


@payload("test.nap_reply")
class NapReply(Payload):
    ok: bool


@payload("test.nap")
class Nap(Payload):
    """Client b blocks until the test releases ``gate``; with ``compiling``, as a
    thread compiling kernels (``seconds`` of it), then answers."""

    gate: str
    seconds: float
    compiling: bool

    def expected_reply(self) -> ReplySpec:
        return ReplySpec(NapReply, {"ok": Field.scalar()})


GATES: dict[str, tuple[threading.Event, threading.Event]] = {}  # release, finished


@handler("test.nap")
def nap(request: Nap, data: ClientData) -> NapReply:
    if data.client_id != "b":
        return NapReply(True)
    release, finished = GATES[request.gate]
    if request.compiling:  # compiling kernels: work that always ends
        with compiling():
            release.wait(timeout=request.seconds)
    else:
        release.wait(timeout=600.0)  # released by the test, never slept on
    finished.set()
    return NapReply(True)


class Napper(ServerStrategy):
    def __init__(self, request: Nap) -> None:
        self.request = request

    def start(self, info: FederationInfo) -> None:
        self.clients = info.clients

    def plan_round(self, round: int) -> RoundPlan | None:
        return RoundPlan.broadcast(self.request, self.clients) if round == 1 else None

    def aggregate(self, round: int, replies: object) -> None:
        self.replies = replies

    def finish(self) -> object:
        return self.replies


@pytest.fixture
def gate(request: pytest.FixtureRequest) -> Iterator[tuple[str, threading.Event]]:
    release, finished = threading.Event(), threading.Event()
    GATES[request.node.name] = (release, finished)
    yield request.node.name, finished
    release.set()  # never leave a handler blocked
    del GATES[request.node.name]


def test_a_hanging_client_times_out_instead_of_hanging_the_server(
    gate: tuple[str, threading.Event],
) -> None:
    fed, _, _ = _federation(workers=3)
    name, finished = gate
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'b', round 1, 'test.nap': field 'reply' did not arrive in time",
    ):
        run(
            Napper(Nap(name, 0.0, False)),
            fed.transport,
            task="classification",
            timeout=0.5,
        )
    assert not finished.is_set()  # the run ended while b's handler still waited


@pytest.mark.parametrize("workers", [1, 3])
def test_a_handler_compiling_kernels_past_the_timeout_is_not_timed_out(
    gate: tuple[str, threading.Event], workers: int
) -> None:
    # Where the installed kernels cannot serve, a handler's first call of a
    # kernel compiles it: minutes on a loaded machine, work that always ends.
    # Its deadline counts the handler's own work only (fedtrees._compile_time).
    fed, _, _ = _federation(workers=workers)
    name, finished = gate
    timeout = 1.0
    nap = Nap(name, 3 * timeout, True)  # compiles for 3 timeouts, then answers
    result = run(Napper(nap), fed.transport, task="classification", timeout=timeout)
    assert finished.is_set()
    assert sorted(result.result) == ["a", "b", "c"]
    assert result.dropouts == ()
