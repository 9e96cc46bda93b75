"""A mutation fuzzer over valid messages of every kind of every method (issue 12).

Every method runs once on a tiny federation with ``Ledger(keep_messages=True)``;
the requests it sent, the replies it received and the state payloads a client
keeps (replayed through :func:`serve`) form the corpus. Mutations of them —
flipped, overwritten, truncated, extended and spliced bytes (a seeded numpy
loop), and structural edits of the JSON header (hypothesis) — must meet:

(a) :func:`decode` returns an envelope or raises :class:`CodecError`;
(b) for a reply, :func:`receive` returns a payload or raises a
    :class:`RemoteProtocolError` naming that client and round;
(c) for a request, :func:`serve` answers with bytes that decode to a reply or an
    error envelope, and never raises.

Only the library's own errors may escape; anything else fails the test with the
method, kind and mutation that caused it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import struct
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtrees.algorithms import (
    DPForestClassifier,
    FedAvgClassifier,
    FederatedID3Classifier,
    FedForestClassifier,
    FedForestRegressor,
    FedGAClassifier,
    FedGARegressor,
    FedGBDTClassifier,
    ICDTAClassifier,
    LocalEnsembleClassifier,
    LocalModelsClassifier,
    SyntheticDataClassifier,
    run_toy,
)
from fedtrees.algorithms.fedforest._strategy import FedForestStrategy
from fedtrees.audit import recording
from fedtrees.exceptions import CodecError, RemoteProtocolError
from fedtrees.federation import (
    ClientData,
    ClientState,
    Delivery,
    Envelope,
    Fault,
    Federation,
    Ledger,
    Payload,
    _secure,
    decode,
    encode,
    payload_class,
    receive,
    serve,
)
from fedtrees.federation._payload import _REGISTRY

PREFIX = struct.Struct("<4sHI")
BYTE_MUTATIONS = 12_000  # the seeded numpy loop; hypothesis adds the header edits
Direction = Literal["down", "up", "state"]


@dataclass(frozen=True, eq=False)
class Sample:
    """One valid message and what is needed to check its mutations."""

    method: str
    kind: str
    direction: Direction
    data: bytes
    client: str
    round: int
    site: ClientData
    request: Payload | None = None  # the decoded request, for a reply
    kept: dict[str, Payload] = field(default_factory=dict)  # state before a request


# -- the corpus: every kind of every method -------------------------------------------

RNG = np.random.default_rng(0)
N_ROWS = 60
X = RNG.normal(size=(N_ROWS, 3))
Y_CLASS = (X[:, 0] + 0.3 * RNG.normal(size=N_ROWS) > 0).astype(int)
Y_REG = X[:, 0] + 0.1 * RNG.normal(size=N_ROWS)
GROUPS = np.repeat(["a", "b", "c"], N_ROWS // 3)
RANGES = [(-4.0, 4.0)] * 3
GA: dict[str, Any] = {
    "population_size": 4,
    "n_generations": 2,
    "depth_range": (1, 2),
    "cv_folds": 2,
}


def _fit(
    estimator: Any,
    y: np.ndarray,
    faults: tuple[Fault, ...] = (),
    groups: np.ndarray = GROUPS,
    **kw: Any,
) -> Callable[[], tuple[Federation, Ledger]]:
    """Return a runner that fits ``estimator``, keeping every message."""

    def runner() -> tuple[Federation, Ledger]:
        fed = Federation.from_groups(X, y, groups, faults=faults)
        with recording() as ledgers:
            estimator.fit_federation(fed, **kw)
        (ledger,) = ledgers
        return fed, ledger

    return runner


def _holdout() -> tuple[Federation, Ledger]:
    """FedForest with held-out rows: the score round."""
    fed = Federation.from_groups(X, Y_CLASS, GROUPS)
    ledger = Ledger(keep_messages=True)
    config = FedForestClassifier(1, max_depth=2, random_state=0)._config()
    strategy = FedForestStrategy(dataclasses.replace(config, holdout=0.3))
    fed.run(strategy, task="classification", ledger=ledger)
    return fed, ledger


def _toy() -> tuple[Federation, Ledger]:
    fed = Federation.from_groups(X, Y_CLASS, GROUPS)
    ledger = Ledger(keep_messages=True)
    run_toy(fed, n_rounds=1, ledger=ledger)
    return fed, ledger


def _union() -> tuple[Federation, Ledger]:
    """Sites whose category lists differ: the agreement's union step.

    Site "c" declares an unused category "Z" in its dtype, so its list differs
    from the others' and it gets the union's positions (``federation.categories``).
    """
    ward = pd.Categorical(np.where(X[:, 1] > 0, "A", "B"))
    frame = pd.DataFrame({"x": X[:, 0], "ward": ward})
    clients = {}
    for site in ("a", "b", "c"):
        rows = np.equal(GROUPS, site)
        part = frame[rows].reset_index(drop=True)
        if site == "c":
            part["ward"] = part["ward"].cat.add_categories(["Z"])
        clients[site] = (part, Y_CLASS[rows])
    fed = Federation.from_clients(clients)
    with recording() as ledgers:
        FederatedID3Classifier(max_depth=2, random_state=0).fit_federation(fed)
    (ledger,) = ledgers
    return fed, ledger


def _forest(**kw: Any) -> FedForestClassifier:
    return FedForestClassifier(1, max_depth=2, random_state=0, **kw)


FORGET = (Fault("b", "forget", round=2),)  # a resync: the state's full forms
# Secure aggregation on four sites: the agreement sends keys, the grid (round 1)
# and every level are masked; "d" drops at level 1 (round 3), so the survivors
# reveal their round keys with it (``federation.reveal``) in that round.
SECURE_GROUPS = np.repeat(["a", "b", "c", "d"], N_ROWS // 4)
SECURE_DROP = (Fault("d", "drop", round=3),)
METHODS: dict[str, Callable[[], tuple[Federation, Ledger]]] = {
    "fedforest-quantile": _fit(_forest(candidates="quantile"), Y_CLASS, FORGET),
    "fedforest-exact": _fit(_forest(candidates="exact"), Y_CLASS),
    "fedforest-weighted": _fit(  # the class-count round and the out-of-bag round
        _forest(class_weight="balanced", oob_score=True), Y_CLASS
    ),
    "fedforest-hist": _fit(_forest(candidates="hist"), Y_CLASS, FORGET),
    "fedforest-uniform": _fit(_forest(candidates="uniform"), Y_CLASS),
    "fedforest-alone": _fit(  # one client: sketch and evaluate folded, a resync
        _forest(candidates="quantile"),
        Y_CLASS,
        (Fault("a", "forget", round=2),),
        np.full(N_ROWS, "a"),
    ),
    "fedforest-secure": _fit(
        _forest(secure_aggregation=True, feature_ranges=RANGES, on_dropout="continue"),
        Y_CLASS,
        SECURE_DROP,
        SECURE_GROUPS,
    ),
    "fedforest-avgimp": _fit(
        _forest(candidates="quantile", gain="avgimp", top_k=2), Y_CLASS
    ),
    "fedforest-holdout": _holdout,
    "fedforest-regressor": _fit(
        FedForestRegressor(1, max_depth=2, random_state=0), Y_REG
    ),
    "dpforest": _fit(DPForestClassifier(1.0, 2, RANGES, random_state=0), Y_CLASS),
    "icdta": _fit(ICDTAClassifier(max_depth=2, random_state=0), Y_CLASS),
    "fedid3": _fit(FederatedID3Classifier(max_depth=2, random_state=0), Y_CLASS),
    "synthetic": _fit(
        SyntheticDataClassifier(
            client_max_depth=2,
            samples_per_path=5,
            feature_ranges=RANGES,
            random_state=0,
        ),
        Y_CLASS,
    ),
    "fedavg": _fit(
        FedAvgClassifier(n_rounds=1, local_steps=2, random_state=0), Y_CLASS
    ),
    "local-ensemble": _fit(
        LocalEnsembleClassifier(2, max_depth=2, random_state=0), Y_CLASS
    ),
    "local-models": _fit(
        LocalModelsClassifier(2, max_depth=2, random_state=0), Y_CLASS
    ),
    "fedga": _fit(FedGAClassifier(random_state=0, **GA), Y_CLASS, join_at={"c": 2}),
    "fedga-regressor": _fit(FedGARegressor(random_state=0, **GA), Y_REG),
    "fedgbdt": _fit(
        FedGBDTClassifier(n_estimators=2, max_depth=2, random_state=0), Y_CLASS, FORGET
    ),
    "fedgbdt-bagging": _fit(
        FedGBDTClassifier(
            n_estimators=2, max_depth=2, protocol="bagging", random_state=0
        ),
        Y_CLASS,
        FORGET,
    ),
    "toy": _toy,
    "agreement-union": _union,
}
PER_KIND = 2  # samples kept per (method, kind, direction)

# Requests fuzzed for (a) only, not served: none left. Handlers check every
# field that sizes an allocation (``n_categories``, ``arity``, ``bin_ptr``, ``q``,
# ``depth``...) against their own data before allocating
# (:mod:`fedtrees.algorithms._requests`; tests/hostile/test_request_sizes.py).
UNBOUNDED_REQUESTS: frozenset[str] = frozenset()


def _samples(method: str, fed: Federation, ledger: Ledger) -> Iterator[Sample]:
    """Pair replies with requests, replay each client's state, keep a few each."""
    sites = fed.on_each_site(lambda data: data)
    states = {c: ClientState() for c in sites}
    last: dict[str, tuple[Any, Payload, dict[str, Payload]]] = {}
    for message in ledger.captured:
        envelope = decode(message.data)
        assert envelope.payload is not None or envelope.type == "error"
        site = sites[message.client]
        if message.direction == "down":
            assert envelope.payload is not None
            state = states[message.client]
            kept = dict(state.kept)
            serve(message.data, site, state=state)  # replay: the state grows
            last[message.client] = (message, envelope.payload, kept)
            yield Sample(
                method,
                envelope.kind,
                "down",
                message.data,
                message.client,
                message.round,
                site,
                kept=kept,
            )
        else:
            _, request, _ = last[message.client]
            yield Sample(
                method,
                envelope.kind,
                "up",
                message.data,
                message.client,
                message.round,
                site,
                request=request,
            )
    for client, state in states.items():
        for value in state.kept.values():
            data = encode(Envelope("reply", 0, client, value.kind, value))
            yield Sample(method, value.kind, "state", data, client, 0, sites[client])


@contextmanager
def _replayable_keys() -> Iterator[None]:
    """Draw the sites' X25519 keys from a fixed sequence, restarted on each entry.

    :func:`_samples` replays each site's requests on a fresh state, so the
    agreement draws the site's key again; with the operating system's keys the
    replayed masked requests (which name the run's keys) would all be refused
    (field ``cohort_keys``) and their mutations would never reach the masking.
    The run and its replay draw the same keys in the same order (the agreement
    serves the sites one after another), so the replayed masked requests are
    answered as in the run. Test only: a site's key is never seeded otherwise.
    """
    draws = itertools.count()

    def new_key() -> X25519PrivateKey:
        seed = hashlib.sha256(b"fuzz key %d" % next(draws)).digest()
        return X25519PrivateKey.from_private_bytes(seed)

    with mock.patch.object(_secure, "new_key", new_key):
        yield


@pytest.fixture(scope="module")
def corpus() -> list[Sample]:
    """A few valid messages of every kind of every method (about 5 s)."""
    out: list[Sample] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method, runner in METHODS.items():
            with _replayable_keys():
                fed, ledger = runner()
            with _replayable_keys():
                samples = list(_samples(method, fed, ledger))
            seen: dict[tuple[str, str], int] = {}
            for sample in samples:
                key = (sample.kind, sample.direction)
                if seen.get(key, 0) < PER_KIND:
                    seen[key] = seen.get(key, 0) + 1
                    out.append(sample)
    return out


def test_the_corpus_holds_every_message_kind(corpus: list[Sample]) -> None:
    kinds = {s.kind for s in corpus}
    assert kinds == set(_REGISTRY) - _test_only_kinds()
    for s in corpus:  # and every sample is valid as collected
        _check(s, s.data)


def _test_only_kinds() -> set[str]:
    """Kinds registered by other test modules or by doctests (not the library's).

    The registry is process-wide, and the tests that ran before in this process
    depend on the order and the worker. A doctest's class names the module of its
    docstring (``fedtrees....``) but is not one of that module's names.
    """
    return {k for k, cls in _REGISTRY.items() if not _in_the_library(cls)}


def _in_the_library(cls: type) -> bool:
    """Whether ``cls`` is a name of the fedtrees module it says it comes from."""
    if not cls.__module__.startswith("fedtrees"):
        return False
    found: object = sys.modules.get(cls.__module__)
    for name in cls.__qualname__.split("."):
        found = getattr(found, name, None)
    return found is cls


# -- the properties -------------------------------------------------------------------


def _check(sample: Sample, mutated: bytes) -> None:
    """Properties (a), (b), (c) for one mutated message (module docstring)."""
    error: CodecError | RemoteProtocolError | None = None
    try:
        decode(mutated)
    except CodecError as exc:
        error = exc
    if isinstance(error, CodecError) and not error.field:
        raise AssertionError(f"a CodecError that names no field: {error}")
    if sample.direction == "up":
        assert sample.request is not None
        delivery = Delivery(sample.client, "ok", mutated, 0.0)
        try:
            receive(sample.client, sample.round, sample.request, delivery)
        except RemoteProtocolError as exc:
            error = exc
        if isinstance(error, RemoteProtocolError) and (error.client, error.round) != (
            sample.client,
            sample.round,
        ):
            raise AssertionError(f"the error names another client or round: {error}")
    elif sample.direction == "down" and sample.kind not in UNBOUNDED_REQUESTS:
        state = ClientState()
        state.kept.update(sample.kept)
        answer = decode(serve(mutated, sample.site, state=state))
        assert answer.type in ("reply", "error"), answer
        assert answer.client == sample.client


def _checked(sample: Sample, mutated: bytes, how: str) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _check(sample, mutated)
    except Exception as exc:
        raise AssertionError(
            f"{sample.method} {sample.kind} ({sample.direction}, round "
            f"{sample.round}, client {sample.client!r}), mutation {how}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


# -- byte mutations: a seeded numpy loop ----------------------------------------------


def _body_start(data: bytes) -> int:
    size: int = PREFIX.unpack(data[: PREFIX.size])[2]
    return PREFIX.size + size


def _mutate_bytes(
    rng: np.random.Generator, data: bytes, other: bytes
) -> tuple[bytes, str]:
    """One random byte-level mutation; half of the positions fall in the body."""
    raw = bytearray(data)
    body = _body_start(data)
    op = int(rng.integers(7))
    in_body = body < len(raw) and rng.random() < 0.5
    low = body if in_body else 0
    pos = int(rng.integers(low, len(raw))) if len(raw) > low else 0
    if op == 0 and raw:
        raw[pos] ^= 1 << int(rng.integers(8))
        return bytes(raw), f"flip a bit at {pos}"
    if op == 1 and raw:
        run = rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8).tobytes()
        raw[pos : pos + len(run)] = run
        return bytes(raw), f"overwrite {len(run)} bytes at {pos}"
    if op == 2:
        return bytes(raw[:pos]), f"truncate to {pos}"
    if op == 3:
        extra = rng.integers(0, 256, int(rng.integers(1, 64)), dtype=np.uint8)
        return bytes(raw) + extra.tobytes(), f"extend by {extra.size}"
    if op == 4:
        cut = int(rng.integers(len(other) + 1))
        return bytes(raw[:pos]) + other[cut:], f"splice at {pos}/{cut}"
    if op == 5 and body < len(raw):
        word = rng.choice(_EXTREME_WORDS)
        at = int(rng.integers(body, len(raw)))
        raw[at : at + 8] = word
        return bytes(raw), f"extreme word {word.hex()} at {at}"
    end = min(len(raw), pos + int(rng.integers(1, 16)))
    return bytes(raw[:pos] + raw[pos:end] + raw[pos:]), f"duplicate {pos}:{end}"


_EXTREME_WORDS = [
    struct.pack("<d", v)
    for v in (np.nan, np.inf, -np.inf, 1e308, -1e308, 5e-324, -0.0, 2.0**63)
] + [struct.pack("<q", v) for v in (-1, 2**63 - 1, -(2**63), 2**31)]


@pytest.mark.hostile("clear_error")
def test_byte_mutations_raise_only_the_librarys_errors(corpus: list[Sample]) -> None:
    rng = np.random.default_rng(20261123)
    for i in range(BYTE_MUTATIONS):
        sample = corpus[i % len(corpus)]
        other = corpus[int(rng.integers(len(corpus)))].data
        mutated, how = _mutate_bytes(rng, sample.data, other)
        _checked(sample, mutated, how)


# -- structural header mutations: hypothesis ------------------------------------------

EXTREMES: list[Any] = [
    0,
    -1,
    1,
    2**31,
    2**53 + 1,
    2**62,
    2**63 - 1,
    -(2**63),
    2**63,
    2**70,
    10**30,
    1.5,
    -0.0,
    1e308,
    None,
    True,
    False,
    "",
    "x" * 5000,
    [],
    [1],
    [[1]],
    [None],
    {},
    {"t": "a"},
    "nan",
    "7ff8000000000000",
    "7ff0000000000000",
    "fff0000000000000",
    "0000000000000001",
    "ffefffffffffffff",
    "0x1p99999",
    "<f8",
    ">f8",
    "|b1",
    "<i8",
    "<U1",
    "|S1",
    "|O",
    "|V8",
    "<M8",
    ">U99999999999",
    "=f8",
    [2**70],
    [-1],
    [0],
    [1, 1],
    [2**40, 0],
]
SPEC_KEYS = ["t", "d", "s", "n", "v", "x"]
TOP_KEYS = ["envelope", "round", "client", "kind", "error", "fields", "extra"]
KINDS = sorted(
    k for k in _REGISTRY if payload_class(k).__module__.startswith("fedtrees")
)


def _split(data: bytes) -> tuple[dict[str, Any], bytes]:
    size = PREFIX.unpack(data[: PREFIX.size])[2]
    return json.loads(data[PREFIX.size : PREFIX.size + size]), data[
        PREFIX.size + size :
    ]


def _frame(text: str, body: bytes) -> bytes:
    raw = text.encode()
    return PREFIX.pack(b"FTMS", 1, len(raw)) + raw + body


@st.composite
def header_edits(draw: st.DrawFn, corpus: list[Sample]) -> tuple[Sample, bytes, str]:
    """A sample and a structurally edited copy of it (re-framed, body kept)."""
    sample = draw(st.sampled_from(corpus))
    header, body = _split(sample.data)
    fields: list[Any] = header["fields"]
    op = draw(
        st.sampled_from(
            [
                "top",
                "drop",
                "spec",
                "spec_drop",
                "entry",
                "kind",
                "shape",
                "swap",
                "repeat",
                "nest",
                "value_int",
            ]
        )
    )
    value = draw(st.sampled_from(EXTREMES) | st.integers() | st.text(max_size=20))
    index = draw(st.integers(0, max(len(fields) - 1, 0)))
    if op == "top":
        header[draw(st.sampled_from(TOP_KEYS))] = value
    elif op == "drop":
        header.pop(draw(st.sampled_from(TOP_KEYS)), None)
    elif op == "kind":
        header["kind"] = draw(st.sampled_from(KINDS))
    elif fields and op == "spec":
        fields[index][1][draw(st.sampled_from(SPEC_KEYS))] = value
    elif fields and op == "spec_drop":
        fields[index][1].pop(draw(st.sampled_from(SPEC_KEYS)), None)
    elif fields and op == "entry":
        fields[index] = draw(
            st.sampled_from(
                [
                    value,
                    [fields[index][0]],
                    [*fields[index], value],
                    [value, fields[index][1]],
                ]
            )
        )
    elif fields and op == "shape" and "s" in fields[index][1]:
        shape = fields[index][1]["s"] or [1]
        shape[draw(st.integers(0, len(shape) - 1))] = value
        fields[index][1]["s"] = shape
    elif len(fields) > 1 and op == "swap":
        fields[0], fields[-1] = fields[-1], fields[0]
    elif fields and op == "value_int" and fields[index][1].get("t") == "i":
        # Decodable but extreme: what checks and handlers then do with it.
        fields[index][1]["v"] = draw(
            st.sampled_from([0, -1, 1, 2**31, 2**62, 2**63 - 1, -(2**63)])
        )
    text = json.dumps(header, separators=(",", ":"))
    if op == "repeat":
        text = '{"round":' + json.dumps(value) + "," + text[1:]
    elif op == "nest":
        depth = draw(st.sampled_from([10, 900, 5_000]))
        text = text[:-1] + ',"deep":' + "[" * depth + "]" * depth + "}"
    return sample, _frame(text, body), f"{op} -> {str(value)[:40]}"


@pytest.mark.hostile("clear_error")
@settings(max_examples=1_000)
@given(data=st.data())
def test_header_edits_raise_only_the_librarys_errors(
    corpus: list[Sample], data: st.DataObject
) -> None:
    sample, mutated, how = data.draw(header_edits(corpus))
    _checked(sample, mutated, how)
