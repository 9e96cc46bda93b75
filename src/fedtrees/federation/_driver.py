"""The only round loop, :func:`run` (STYLE habit 1).

A strategy is pure computation: it plans the requests of a round from its state
(:meth:`ServerStrategy.plan_round`) and folds the validated replies into its state
(:meth:`ServerStrategy.aggregate`). The loop moves the messages through a transport
— encoding, metering, receiving, validating — and never lets a malformed reply
reach the strategy. Round 0 is the opening agreement (docs/runtime.md).
"""

from __future__ import annotations

import abc
import math
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from fedtrees._validation import check_float, check_int, shown
from fedtrees.exceptions import (
    ClientDropoutWarning,
    CodecError,
    LocalProtocolError,
    NotEnoughClientsError,
    RemoteProtocolError,
    ValidationError,
)
from fedtrees.federation._agreement import coding_requests
from fedtrees.federation._checks import InvalidField, as_reply, check_reply
from fedtrees.federation._codec import MAX_MESSAGE_BYTES, decode, encode_broadcast
from fedtrees.federation._ledger import Ledger, MeteredTransport, join_recordings
from fedtrees.federation._payload import Payload
from fedtrees.federation._schema import Schema, SchemaReply, SchemaRequest, Task, agree
from fedtrees.federation._secure import (
    MIN_COHORT,
    PublicKeyError,
    RevealReply,
    check_public_keys,
)
from fedtrees.federation._secure_sum import MaskedRound
from fedtrees.federation._state import Resync
from fedtrees.federation._transport import (
    Delivery,
    InProcessTransport,
    Outgoing,
    Transport,
)

__all__ = [
    "MAX_ROUNDS",
    "MAX_TIMEOUT",
    "FederationInfo",
    "RoundCallback",
    "RoundEnv",
    "RoundPlan",
    "RunResult",
    "ServerStrategy",
    "check_timeout",
    "declared_weight",
    "run",
]

OnDropout = Literal["fail", "continue"]
MAX_ROUNDS: Final = 100_000
"""Most rounds of one run (after the agreement): the loop's default ``max_rounds``.
A setting that asks for more rounds (``n_rounds``, ``n_generations``) is refused
at ``fit``: the loop would stop the run there, short of what was asked."""
MAX_TIMEOUT: Final = 1e9
"""Longest ``timeout`` in seconds (about 31 years): the platform's waits take no
longer (Python's ``threading.TIMEOUT_MAX``, about 9.2e9 s on 64-bit Linux)."""


def check_timeout(value: object, owner: str) -> float:
    """Return ``timeout`` as a float in (0, :data:`MAX_TIMEOUT`] seconds.

    Examples
    --------
    >>> check_timeout(1e308, "f")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: The 'timeout' parameter of f must be ...
    """
    return check_float(
        value,
        "timeout",
        owner,
        min_value=0.0,
        min_inclusive=False,
        max_value=MAX_TIMEOUT,
    )


@dataclass(frozen=True)
class FederationInfo:
    """What the server knows when a strategy starts: client ids and the schema.

    ``row_bounds`` and ``weight_bounds`` are the bounds each client declared at the
    agreement (powers of two, :mod:`fedtrees.federation._schema`); the loop refuses
    a reply holding a count above them. Empty when unknown (no check).
    """

    clients: tuple[str, ...]
    schema: Schema
    row_bounds: Mapping[str, int] = field(default_factory=dict)
    weight_bounds: Mapping[str, float] = field(default_factory=dict)
    public_keys: Mapping[str, bytes] = field(default_factory=dict)
    """Each site's X25519 public key, when the run is secure (``secure=True``)."""

    def declared_weight(self, sites: Sequence[str]) -> float:
        """Return the weight ``sites`` declared at the agreement, together.

        The bound a masked sum of their weights must stay within (inf when a
        site declared none): :func:`declared_weight` over ``weight_bounds``.
        """
        return declared_weight(self.weight_bounds, sites)


def declared_weight(weight_bounds: Mapping[str, float], sites: Sequence[str]) -> float:
    """Return the sum of ``sites``' declared weight bounds (inf for an undeclared one).

    >>> declared_weight({"a": 4.0, "b": 8.0}, ["a", "b"])
    12.0
    >>> declared_weight({"a": 4.0}, ["a", "c"])
    inf
    """
    return float(sum(weight_bounds.get(s, math.inf) for s in sites))


@dataclass(frozen=True)
class RoundPlan:
    """The requests of one round, one per addressed client.

    ``on_dropout="fail"`` (default) ends the run at the first client that fails;
    ``"continue"`` drops that client from the round with a
    :class:`ClientDropoutWarning` (the algorithm must document that it allows it).
    ``resync(client)`` returns the full form of a client's request, sent in the
    same round to a client that answered :class:`~fedtrees.federation.Resync`
    (its per-run state was missing or older than the request assumed).
    Clients given the same payload object get it encoded once.
    ``check(client, request, reply)``, if given, is called with every reply that
    passed its :class:`~fedtrees.federation.ReplySpec` and the request it answers
    (the full form after a resync), before the strategy sees it: for
    invariants across rounds (e.g. a client's node totals never change); it
    raises :class:`~fedtrees.federation.InvalidField`, which becomes that
    client's :class:`RemoteProtocolError` (``on_dropout`` decides).
    ``masked``: the round's secure aggregation (docs/security.md): the loop
    checks each masked reply's commitments (:meth:`MaskedRound.check_reply`);
    when a site of its cohort drops, it asks the survivors for their round keys
    with it (a ``federation.reveal`` exchange in the same round), each checked
    against the survivor's commitment, before the strategy reads the sum; a
    survivor failing then ends the run (its masked vector could not be removed
    without revealing it), and so does a dropout that leaves fewer than
    :data:`~fedtrees.federation.MIN_COHORT` sites (naming the dropped site; no
    survivor is asked).
    """

    requests: Mapping[str, Payload]
    on_dropout: OnDropout = "fail"
    resync: Callable[[str], Payload] | None = None
    check: Callable[[str, Payload, Payload], None] | None = None
    masked: MaskedRound | None = None

    @classmethod
    def broadcast(
        cls,
        payload: Payload,
        clients: Sequence[str],
        on_dropout: OnDropout = "fail",
        resync: Callable[[str], Payload] | None = None,
    ) -> RoundPlan:
        """Send the same request to every client."""
        return cls(dict.fromkeys(clients, payload), on_dropout, resync)


class ServerStrategy(abc.ABC):
    """The server side of an algorithm: plans requests, folds replies. No I/O.

    Every strategy derives from this base: the four abstract methods are the
    round loop's protocol; the three hooks below have defaults a strategy
    overrides when it has them (the loop calls them, never looks them up by
    name). :class:`fedtrees.algorithms._phased.PhasedStrategy` builds the four
    methods from a table of phases.
    """

    @abc.abstractmethod
    def start(self, info: FederationInfo) -> None:
        """Receive the agreed schema and client ids (after round 0)."""

    @abc.abstractmethod
    def plan_round(self, round: int) -> RoundPlan | None:
        """Return the requests of ``round`` (1, 2, ...), or None when done."""

    @abc.abstractmethod
    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        """Fold the validated replies of ``round`` (keyed by client) into the state."""

    @abc.abstractmethod
    def finish(self) -> Any:
        """Return the result of the run (e.g. the fitted trees)."""

    @property
    def secure_aggregation(self) -> bool:
        """Whether the run exchanges keys and masks its rounds (docs/security.md)."""
        return False

    def expected_rounds(self) -> int | None:
        """Upper bound of the rounds after the agreement, or None when unknown.

        Called after :meth:`start`; progress bars, job logs and the round
        limit's early refusal use it.
        """
        return None

    def round_metrics(self, round: int) -> Mapping[str, float]:
        """Numbers about the state after ``round`` (progress bars and logs)."""
        return {}


@dataclass(frozen=True)
class RoundEnv:
    """What a callback sees after each round (for progress bars and logs)."""

    round: int
    kind: str
    n_requests: int
    n_replies: int
    dropouts: tuple[RemoteProtocolError, ...]
    bytes_down: int
    bytes_up: int
    seconds: float
    metrics: Mapping[str, float] = field(default_factory=dict)
    expected_rounds: int | None = None


RoundCallback = Callable[[RoundEnv], None]


@dataclass(frozen=True, eq=False)
class RunResult:
    """The strategy's result, the ledger, and what happened on the way."""

    result: Any
    ledger: Ledger
    info: FederationInfo
    rounds: int
    dropouts: tuple[RemoteProtocolError, ...]


def run(
    strategy: ServerStrategy,
    transport: Transport,
    *,
    task: Task,
    timeout: float = 60.0,
    min_clients: int = 1,
    callbacks: Sequence[RoundCallback] = (),
    ledger: Ledger | None = None,
    max_rounds: int = MAX_ROUNDS,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    categories: Mapping[str, Sequence[str]] | None = None,
    classes: Sequence[object] | None = None,
    secure: bool = False,
    require_declared_categories: bool = False,
) -> RunResult:
    """Run ``strategy`` over ``transport``: the opening agreement, then its rounds.

    Parameters
    ----------
    task : {"classification", "regression"}
        What the clients agree on in round 0 (labels for classification).
    timeout : float
        Seconds each round may take, resyncs included; a client that does not
        answer by then is a dropout. In process, where the clients are served
        in turn, each client's handler has this long from its own start (its
        resync too), so the number of clients does not eat into it, and the
        time it spends compiling kernels does not count (a compile is work
        under way, minutes on a loaded machine, never a hang).
    min_clients : int
        Clients that must be available, and answer validly in every round.
    callbacks : sequence of callables
        Called with a :class:`RoundEnv` after every round, round 0 included.
    ledger : Ledger, optional
        Where communication is recorded (a new one by default).
    max_message_bytes : int
        The longest reply accepted, in bytes (default 128 MiB), checked before
        it is decoded: a longer one is that client's failure, like a malformed
        one. Clients check requests against their own limit
        (:func:`~fedtrees.federation.serve`).
    categories : mapping of str to sequence of str, optional
        Declared categories (column -> names, public metadata): round 0 sends them
        down, every client re-codes those columns to that order and sends none of
        its own values (:mod:`fedtrees.federation._schema` says what the
        agreement reveals with and without a declaration).
    classes : sequence, optional
        Declared class labels (classification; public metadata): clients check
        their labels against them and send no label set.
    secure : bool
        Secure aggregation (docs/security.md): every client also sends a fresh
        X25519 public key in round 0 (:attr:`FederationInfo.public_keys`); an
        invalid key, or two clients with the same key, is refused naming the
        client. A strategy whose ``secure_aggregation`` attribute is true
        turns it on.
    require_declared_categories : bool
        Every categorical column must be declared in ``categories``: no client
        sends a category name, and one holding an undeclared categorical column
        fails the agreement, naming itself and the column (never a value).
        Without it, clients whose category lists of a column differ agree on
        their union (:mod:`fedtrees.federation._agreement`).

    Raises
    ------
    RemoteProtocolError
        A client failed, timed out or replied malformed data and the round does not
        allow dropouts; it names the client, round, kind and field.
    NotEnoughClientsError
        Fewer than ``min_clients`` clients are available or answered.
    SchemaMismatchError
        The clients disagree on the schema (round 0).
    MaskedSumError
        Under secure aggregation, a round's sum that no honest sites can give
        (the strategy's check), or two sites' commitments that disagree; it
        names the round and the sites that took part.
    ValidationError
        Another run is using ``transport`` (:func:`_one_run_at_a_time`: a
        federation runs one fit at a time).
    """
    timeout = check_timeout(timeout, "run")
    min_clients = check_int(min_clients, "min_clients", "run", min_value=1)
    max_message_bytes = check_int(
        max_message_bytes, "max_message_bytes", "run", min_value=1
    )
    with _one_run_at_a_time(transport):
        return _run(
            strategy, transport, task, timeout, min_clients, tuple(callbacks), ledger,
            max_rounds, max_message_bytes, categories, classes, secure,
            bool(require_declared_categories),
        )  # fmt: skip


def _run(
    strategy: ServerStrategy,
    transport: Transport,
    task: Task,
    timeout: float,
    min_clients: int,
    callbacks: tuple[RoundCallback, ...],
    ledger: Ledger | None,
    max_rounds: int,
    max_message_bytes: int,
    categories: Mapping[str, Sequence[str]] | None,
    classes: Sequence[object] | None,
    secure: bool,
    require_declared: bool = False,
) -> RunResult:
    """Run the body of :func:`run`: its arguments checked, its transport held."""
    ledger = join_recordings(ledger if ledger is not None else Ledger())
    workers = transport.workers if isinstance(transport, InProcessTransport) else 1
    loop = _Loop(MeteredTransport(transport, ledger), timeout, min_clients, workers)
    loop.per_message = isinstance(transport, InProcessTransport)
    loop.max_message_bytes = max_message_bytes
    clients = transport.client_ids()
    if len(clients) < min_clients:
        raise NotEnoughClientsError(
            f"{len(clients)} clients are available; min_clients={min_clients}."
        )
    report = _Reporter(callbacks, strategy, ledger)
    secure = secure or strategy.secure_aggregation
    request = SchemaRequest.declaring(
        task, categories, classes, secure=secure, require_declared=require_declared
    )
    agreement = loop.round(0, RoundPlan.broadcast(request, clients))
    schema_replies = {
        c: r for c, r in agreement.replies.items() if isinstance(r, SchemaReply)
    }
    schema = agree(
        schema_replies,
        task,
        request.declared(),
        request.declared_class_labels(),
        site_files=bool(getattr(transport, "site_files", False)),
    )
    info = FederationInfo(
        tuple(sorted(schema_replies)),
        schema,
        {c: r.row_bound for c, r in sorted(schema_replies.items())},
        {c: r.weight_bound for c, r in sorted(schema_replies.items())},
        _public_keys(schema_replies) if secure else {},
    )
    coding = coding_requests(schema_replies, schema)
    # Still round 0: sites whose lists differ learn where theirs sit in the union.
    recoded = loop.round(0, RoundPlan(coding)) if coding else None
    loop.bounds = (dict(info.row_bounds), dict(info.weight_bounds))
    strategy.start(info)
    _check_round_limit(strategy, max_rounds)
    report(agreement)
    if recoded is not None:
        report(recoded)
    round_ = 0
    while (plan := strategy.plan_round(round_ + 1)) is not None:
        if round_ == max_rounds:  # never a run cut short without a word
            raise LocalProtocolError(
                f"The run reached max_rounds={max_rounds} before its strategy "
                "finished; lower the settings that count rounds."
            )
        round_ += 1
        outcome = loop.round(round_, plan)
        strategy.aggregate(round_, outcome.replies)
        report(outcome)
    return RunResult(strategy.finish(), ledger, info, round_, tuple(loop.dropouts))


_RUNNING: set[int] = set()
"""The transports (by ``id``) a run is using now: one run at a time on each."""
_RUNNING_LOCK = threading.Lock()


@contextmanager
def _one_run_at_a_time(transport: Transport) -> Iterator[None]:
    """Hold ``transport`` for one run; refuse a second run on it meanwhile.

    **Decision**: a federation runs one fit at a time. Its sites keep one
    per-run state each (in process the transport holds it; on Flower the
    SuperNode's ``context.state`` of the Flower run), secure aggregation's
    private keys among it: a second fit at the same time would replace the
    first's keys, and each fit's requests would keep finding the other's
    model. Refused by name instead of failing half-way, blaming a site.

    Raises
    ------
    ValidationError
        Another run is using ``transport``.
    """
    key = id(transport)
    with _RUNNING_LOCK:
        if key in _RUNNING:
            raise ValidationError(
                f"Federation: this federation ({type(transport).__name__} of "
                f"{len(transport.client_ids())} sites) is already running a fit; "
                "a federation runs one fit at a time, since its sites keep one "
                "per-run state each (secure aggregation's keys among it), which a "
                "concurrent fit would overwrite. Wait for the first fit to end, "
                "or build a second Federation for the second."
            )
        _RUNNING.add(key)
    try:
        yield
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(key)


def _public_keys(replies: Mapping[str, SchemaReply]) -> dict[str, bytes]:
    """Check the clients' public keys (round 0); a bad one fails naming its client."""
    try:
        return check_public_keys({c: r.public_key for c, r in replies.items()})
    except PublicKeyError as exc:
        raise RemoteProtocolError(
            exc.client, 0, SchemaRequest.kind, exc.field, exc.reason
        ) from exc


def _check_round_limit(strategy: ServerStrategy, max_rounds: int) -> None:
    """Refuse, before any round, a run whose strategy expects more than the limit."""
    expected = strategy.expected_rounds()
    if expected is not None and expected > max_rounds:
        raise ValidationError(
            f"This run needs up to {expected} rounds, more than the round loop's "
            f"limit of {max_rounds}: lower the settings that count rounds "
            "(n_estimators x max_depth, n_rounds, n_generations)."
        )


@dataclass(frozen=True)
class _Outcome:
    """What one round produced, for the strategy and the callbacks."""

    round: int
    plan: RoundPlan
    replies: dict[str, Payload]
    failed: tuple[RemoteProtocolError, ...]
    first_entry: int
    seconds: float


class _Loop:
    """One round at a time: encode, exchange, receive, validate, apply the policy."""

    def __init__(
        self,
        transport: MeteredTransport,
        timeout: float,
        min_clients: int,
        workers: int = 1,
    ) -> None:
        self.transport, self.timeout, self.min_clients = transport, timeout, min_clients
        self.workers = workers  # threads that decode and check the replies
        self.dropouts: list[RemoteProtocolError] = []
        # Each client's declared (row, weight) bounds, learnt after round 0.
        self.bounds: tuple[dict[str, int], dict[str, float]] = ({}, {})
        self.max_message_bytes: int = MAX_MESSAGE_BYTES
        # In process every handler has its own deadline (the transport serves the
        # clients in turn), so a resync gets a whole timeout, not the rest of one.
        self.per_message = False

    def round(self, round_: int, plan: RoundPlan) -> _Outcome:
        start = time.perf_counter()
        first_entry = len(self.transport.ledger.entries)
        requests = dict(sorted(plan.requests.items()))
        check = _round_check(round_, plan)
        replies, failed, resync = self._exchange(round_, requests, self.timeout, check)
        if resync:  # in the same round: the resync gets what is left of its time
            again = {c: self._full_request(round_, plan, c) for c in resync}
            spent = 0.0 if self.per_message else time.perf_counter() - start
            left = max(self.timeout - spent, 1e-3)
            more, more_failed, still = self._exchange(round_, again, left, check)
            replies.update(more)
            failed.extend(more_failed)
            failed.extend(
                RemoteProtocolError(
                    c, round_, again[c].kind, "reply", "asked for a resync twice"
                )
                for c in still
            )
        replies = dict(sorted(replies.items()))
        failed.sort(key=lambda e: e.client)
        self._apply_policy(round_, plan, replies, failed)
        if plan.masked is not None:
            self.transport.ledger.masked_rounds.add(round_)
            self._recover(round_, plan.masked, replies, failed)
        seconds = time.perf_counter() - start
        return _Outcome(round_, plan, replies, tuple(failed), first_entry, seconds)

    def _recover(
        self,
        round_: int,
        masked: MaskedRound,
        replies: Mapping[str, Payload],
        failed: Sequence[RemoteProtocolError],
    ) -> None:
        """Ask the survivors of a masked round for their round keys with the dropped.

        Every survivor must answer (module docstring of ``RoundPlan``), with
        keys that match its commitments (:meth:`MaskedRound.check_reveal`): a
        run that cannot remove a survivor's masks without revealing its vector
        ends. So does a round that fewer than :data:`MIN_COHORT` sites survive:
        no survivor is asked, and the error names the dropped site.
        """
        dropped = masked.dropped(list(replies))
        if not dropped:
            return
        survivors = [c for c in masked.cohort if c in replies]
        if len(survivors) < MIN_COHORT:
            raise _too_few_survivors(round_, masked, dropped, survivors, failed)
        request = masked.reveal_request(dropped)

        def check(client: str, _: Payload, reply: Payload) -> None:
            masked.check_reveal(client, dropped, reply, replies[client])

        asked = dict.fromkeys(survivors, request)
        got, failures, resync = self._exchange(round_, asked, self.timeout, check)
        if failures:
            raise failures[0]
        if resync:
            raise RemoteProtocolError(
                resync[0], round_, request.kind, "reply", "asked for a resync"
            )
        masked.keep_reveals(
            dropped, {c: as_reply(r, RevealReply) for c, r in got.items()}
        )

    def _exchange(
        self,
        round_: int,
        requests: Mapping[str, Payload],
        timeout: float,
        check: Callable[[str, Payload, Payload], None] | None = None,
    ) -> tuple[dict[str, Payload], list[RemoteProtocolError], list[str]]:
        """One exchange: replies, failures, and the clients that want a resync."""
        deliveries = self.transport.exchange(
            round_, _encode_requests(round_, requests), timeout
        )
        received = self._receive_all(round_, requests, deliveries)
        replies: dict[str, Payload] = {}
        failed: list[RemoteProtocolError] = []
        resync: list[str] = []
        for client, request in requests.items():
            reply = received[client]
            try:
                if isinstance(reply, RemoteProtocolError):
                    raise reply
                if check is not None and not isinstance(reply, Resync):
                    _cross_check(check, client, round_, request, reply)
            except RemoteProtocolError as exc:
                failed.append(exc)
                continue
            if isinstance(reply, Resync):
                resync.append(client)
            else:
                replies[client] = reply
        return replies, failed, resync

    def _receive_all(
        self,
        round_: int,
        requests: Mapping[str, Payload],
        deliveries: Mapping[str, Delivery],
    ) -> dict[str, Payload | RemoteProtocolError]:
        """Decode and check every reply (on ``workers`` threads): reply or error.

        Each reply is checked on its own (:func:`receive`, a pure function), so
        threads change nothing but the time; the checks against the strategy's
        state (``plan.check``) stay on the calling thread, in client order.
        """
        rows, weight = self.bounds

        def one(client: str) -> Payload | RemoteProtocolError:
            try:
                return receive(
                    client,
                    round_,
                    requests[client],
                    deliveries.get(client),
                    row_bound=rows.get(client),
                    weight_bound=weight.get(client),
                    max_message_bytes=self.max_message_bytes,
                )
            except RemoteProtocolError as exc:
                return exc

        clients = list(requests)
        threads = min(self.workers, len(clients))
        if threads <= 1:
            return {client: one(client) for client in clients}
        with ThreadPoolExecutor(threads, thread_name_prefix="fedtrees-receive") as pool:
            return dict(zip(clients, pool.map(one, clients), strict=True))

    @staticmethod
    def _full_request(round_: int, plan: RoundPlan, client: str) -> Payload:
        if plan.resync is None:
            raise RemoteProtocolError(
                client,
                round_,
                plan.requests[client].kind,
                "reply",
                "asked for a resync, which this round's request cannot give",
            )
        return plan.resync(client)

    def _apply_policy(
        self,
        round_: int,
        plan: RoundPlan,
        replies: Mapping[str, Payload],
        failed: list[RemoteProtocolError],
    ) -> None:
        if failed and plan.on_dropout == "fail":
            raise failed[0]
        for exc in failed:
            warnings.warn(
                f"Dropped from round {round_}: {exc}",
                ClientDropoutWarning,
                stacklevel=5,
            )
        self.dropouts.extend(failed)
        if len(replies) < self.min_clients:
            raise NotEnoughClientsError(
                f"Round {round_}: {len(replies)} valid replies; min_clients="
                f"{self.min_clients}. Failures: {[str(e) for e in failed]}"
            )


class _Reporter:
    """Builds a :class:`RoundEnv` after each round and calls the callbacks."""

    def __init__(
        self,
        callbacks: tuple[RoundCallback, ...],
        strategy: ServerStrategy,
        ledger: Ledger,
    ) -> None:
        self.callbacks, self.strategy, self.ledger = callbacks, strategy, ledger

    def __call__(self, outcome: _Outcome) -> None:
        if not self.callbacks:
            return
        entries = self.ledger.entries[outcome.first_entry :]
        env = RoundEnv(
            round=outcome.round,
            kind=",".join(sorted({p.kind for p in outcome.plan.requests.values()})),
            n_requests=len(outcome.plan.requests),
            n_replies=len(outcome.replies),
            dropouts=outcome.failed,
            bytes_down=sum(e.bytes_down for e in entries),
            bytes_up=sum(e.bytes_up for e in entries),
            seconds=outcome.seconds,
            metrics=dict(self.strategy.round_metrics(outcome.round))
            if outcome.round
            else {},
            expected_rounds=self.strategy.expected_rounds(),
        )
        for callback in self.callbacks:
            callback(env)


def _round_check(
    round_: int, plan: RoundPlan
) -> Callable[[str, Payload, Payload], None] | None:
    """Return the round's check of each reply: the mask's commitments, the plan's.

    Also names the round of a masked round (its errors say which).
    """
    masked, checks = plan.masked, plan.check
    if masked is None:
        return checks
    kinds = sorted({p.kind for p in plan.requests.values()})
    masked.opened(round_, ",".join(kinds))

    def check(client: str, request: Payload, reply: Payload) -> None:
        masked.check_reply(client, reply)
        if checks is not None:
            checks(client, request, reply)

    return check


def _too_few_survivors(
    round_: int,
    masked: MaskedRound,
    dropped: Sequence[str],
    survivors: Sequence[str],
    failed: Sequence[RemoteProtocolError],
) -> RemoteProtocolError:
    """Return the error of a masked round that too few sites survive.

    It names the (first) dropped site, with why it dropped: no survivor is at
    fault, and none is asked to reveal a key.
    """
    site = dropped[0]
    cause = next((e for e in failed if e.client == site), None)
    why = cause.reason if cause is not None else "did not answer"
    return RemoteProtocolError(
        site,
        round_,
        masked.kind or "masked round",
        cause.field if cause is not None else "reply",
        f"{why.rstrip('.')}; without {list(dropped)} only {len(survivors)} sites "
        f"remain in the masked sum ({list(survivors)}), fewer than the "
        f"{MIN_COHORT} secure aggregation needs: their masks with the dropped "
        "sites cannot be removed without showing each survivor's statistics to "
        "the other, so the run ends (no survivor is asked to reveal a key)",
    )


def _encode_requests(round_: int, requests: Mapping[str, Payload]) -> list[Outgoing]:
    """Encode each distinct payload once, with one envelope header per client."""
    by_payload: dict[int, list[str]] = {}
    for client, request in requests.items():
        by_payload.setdefault(id(request), []).append(client)
    encoded: dict[str, bytes] = {}
    for clients in by_payload.values():
        payload_ = requests[clients[0]]
        encoded.update(encode_broadcast("request", round_, clients, payload_))
    return [Outgoing(c, p.kind, encoded[c]) for c, p in requests.items()]


def _cross_check(
    check: Callable[[str, Payload, Payload], None],
    client: str,
    round_: int,
    request: Payload,
    reply: Payload,
) -> None:
    """Run a round's cross-round check; its InvalidField names the client."""
    try:
        check(client, request, reply)
    except InvalidField as exc:
        raise RemoteProtocolError(
            client, round_, request.kind, exc.field, exc.reason
        ) from exc


def receive(
    client: str,
    round_: int,
    request: Payload,
    delivery: Delivery | None,
    *,
    row_bound: int | None = None,
    weight_bound: float | None = None,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> Payload:
    """Turn a delivery into a validated reply payload, or raise RemoteProtocolError.

    ``row_bound``/``weight_bound``: what ``client`` declared at the agreement;
    a count above them is refused (see :func:`check_reply`). A reply longer than
    ``max_message_bytes`` is refused before it is decoded.
    """
    kind = request.kind

    def fail(field_: str, reason: str) -> RemoteProtocolError:
        return RemoteProtocolError(client, round_, kind, field_, reason)

    if delivery is None or delivery.status == "unreachable":
        detail = delivery.detail if delivery is not None else "no delivery"
        raise fail("reply", f"is missing: the client is unreachable ({detail})")
    if delivery.status == "malformed":
        raise fail("reply", f"is malformed: {delivery.detail}")
    if delivery.status == "timeout" or delivery.data is None:
        raise fail("reply", f"did not arrive in time ({delivery.detail})")
    size = len(delivery.data)
    if size > max_message_bytes:
        raise fail(
            "reply",
            f"is {size} bytes, over the limit of {max_message_bytes} bytes "
            "(max_message_bytes)",
        )
    try:
        envelope = decode(delivery.data)
    except CodecError as exc:
        raise fail(exc.field, f"is malformed: {exc.reason}") from exc
    if envelope.type == "error":
        raise fail("handler", f"failed on the client: {envelope.error}")
    if envelope.type != "reply" or envelope.payload is None:
        raise fail("envelope", f"is a {envelope.type!r}, not a reply")
    if envelope.round != round_ or envelope.client != client:
        raise fail(
            "envelope",
            f"answers round {envelope.round} of client {shown(envelope.client)}",
        )
    if isinstance(envelope.payload, Resync):
        return envelope.payload
    try:
        check_reply(
            request.expected_reply(),
            envelope.payload,
            row_bound=row_bound,
            weight_bound=weight_bound,
        )
    except InvalidField as exc:
        raise fail(exc.field, exc.reason) from exc
    return envelope.payload
