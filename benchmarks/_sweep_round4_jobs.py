"""Round four (issue 37): jobs and configs, and the turn-3 leftovers.

Jobs and configs: hostile ``bin_edges`` in a job's params, recursion bombs and
wrong types in the run config, awkward characters in a site id or data path
(read back with Flower's own ``--node-config`` parser), misspelt node config
keys. Leftovers: a local forest at a zero-weight client, labels that mix types
or overflow int64, huge client ids, the toy's ``initial``. Each case names what
a clear error must name; a message longer than :data:`LONGEST` characters is an
unclear crash however it reads.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _sweep_core import UNCLEAR, Verdict, accepted, blobs, case, check, make

F = "round4-jobs"
LONGEST = 1000
"""Characters an error message may take before it floods (a huge id or list)."""


def short(run: Callable[[], Verdict]) -> Verdict:
    """Run a case; a library error longer than :data:`LONGEST` is unclear."""
    from fedtrees.exceptions import FedTreesError

    try:
        return run()
    except FedTreesError as exc:
        if len(str(exc)) > LONGEST:
            return Verdict(UNCLEAR, f"an error of {len(str(exc))} characters")
        raise


def _federation() -> Any:
    from fedtrees.federation import Federation

    X, y, groups = blobs()
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    return Federation.from_groups(frame, y, groups)


def _job(job: str, params: dict[str, Any]) -> Verdict:
    from fedtrees.algorithms import run_job

    def run() -> Verdict:
        run_job(job, _federation(), params, timeout=60)
        return accepted(f"{job} ran with {str(params)[:80]}")

    return short(run)


# -- jobs: hostile bin_edges ---------------------------------------------------------
EDGES = {
    "non-numeric": ("fedforest", {"x0": ["a", "b"]}),
    "unsorted": ("fedgbdt", {"x0": [2.0, 1.0]}),
    "nan": ("icdta", {"x0": [float("nan"), 1.0]}),
    "nested": ("federated-id3", {"x0": [[0.0, 1.0]]}),
    "int-beyond-float": ("fedforest", {"x0": [10**400]}),
    "huge-list": ("icdta", {"x0": [float(v) for v in range(100_000)]}),
    "unknown-column": ("fedgbdt", {"nope": [0.0]}),
    "not-a-mapping": ("federated-id3", [0.0, 1.0]),
}
for _name, (_job_name, _edges) in EDGES.items():
    case(f"job-bin-edges-{_name}", F, ("bin_edges",))(
        lambda j=_job_name, e=_edges: _job(j, {"max_depth": 2, "bin_edges": e})
    )
case("job-feature-ranges-text-unused", F, ("feature_ranges",))(
    lambda: _job("fedforest", {"n_estimators": 1, "feature_ranges": "wide"})
)
case("job-verbose-object", F, ("verbose",))(
    lambda: _job("fedgbdt", {"n_estimators": 1, "verbose": {"a": 1}})
)
case("job-fedga-join-at-text", F, ("join_at",))(
    lambda: _job("fedga", {"population_size": 4, "n_generations": 1,
                           "join_at": {"a": "soon"}})
)  # fmt: skip
case("job-local-min-impurity-text", F, ("min_impurity_decrease",))(
    lambda: _job("local-ensemble", {"n_estimators": 1, "min_impurity_decrease": "x"})
)
case("job-unknown-param", F, ("params", "n_trees"))(
    lambda: _job("fedforest", {"n_trees": 3})
)


# -- run config ----------------------------------------------------------------------
RUN = {
    "job": "toy", "params": "{}", "output-path": "/tmp/fedtrees-sweep.json",
    "min-clients": 2, "round-timeout": 30.0, "registration-timeout": 60.0,
    "poll-interval": 0.02,
}  # fmt: skip


def _run_config(change: dict[str, Any]) -> Verdict:
    from fedtrees.federation.flower import ServerConfig

    def run() -> Verdict:
        config = ServerConfig.from_run_config({**RUN, **change})
        return accepted(f"run config {config}"[:200])

    return short(run)


for _key, _value in {
    "params-recursion-bomb": ("params", "[" * 200_000),
    "params-object-bomb": ("params", '{"a": ' * 100_000),
    "categories-recursion-bomb": ("categories", "[" * 200_000),
    "classes-recursion-bomb": ("classes", "[" * 200_000),
    "params-a-list": ("params", "[1, 2]"),
    "min-clients-bool": ("min-clients", True),
    "min-clients-float": ("min-clients", 2.5),
    "round-timeout-nan": ("round-timeout", float("nan")),
    "poll-interval-zero": ("poll-interval", 0.0),
    "max-message-bytes-bool": ("max-message-bytes", True),
    "output-path-empty": ("output-path", ""),
    "misspelt-key": ("round_timeout", 5.0),
}.items():
    case(f"run-config-{_key}", F, (f"'{_value[0]}'",))(
        lambda k=_value[0], v=_value[1]: _run_config({k: v})
    )


@case("server-app-output-path-a-folder", F, ("output-path", "folder"))
def output_folder() -> Verdict:
    from fedtrees.federation.flower._apps import check_output_path

    with tempfile.TemporaryDirectory() as folder:
        check_output_path(Path(folder))
    return accepted("a folder as the output path")


# -- node config ---------------------------------------------------------------------
AWKWARD = {
    "quote-in-site-id": ('Site "A"', "/srv/a.npz"),
    "quote-and-apostrophe-in-path": ("A", '/srv/it\'s "here".npz'),
    "newline-and-backslash-in-path": ("A", "/srv/two\nlines\\x.npz"),
    "equals-and-spaces-in-path": ("A", "/srv/a=b c=d.npz"),
}


def _read_back(client_id: str, path: str) -> Verdict:
    from flwr.common.config import parse_config_args  # noqa: TID251

    from fedtrees.federation.flower import supernode_command
    from fedtrees.federation.flower._worker import with_worker_socket

    command = supernode_command(
        superlink="h:1", client_id=client_id, data_path=path, insecure=True
    )
    command = with_worker_socket(command, f"{path}.sock")
    got = parse_config_args([command[command.index("--node-config") + 1]])
    expected = {
        "client-id": client_id,
        "data-path": path,
        "site-worker": f"{path}.sock",
    }
    return check(got == expected, "read back unchanged by Flower", f"read as {got}")


for _name, (_id, _path) in AWKWARD.items():
    case(f"node-config-{_name}", F, ("client_id|data-path",))(
        lambda i=_id, p=_path: _read_back(i, p)
    )
case("node-config-newline-in-site-id", F, ("client_id",))(
    lambda: _read_back("two\nlines", "/srv/a.npz")
)
case("node-config-nul-in-path", F, ("data-path",))(
    lambda: _read_back("A", "/srv/a\0b.npz")
)


def _site_answers(node_config: dict[str, Any]) -> Verdict:
    """A site's ClientApp answers a toy request; the server reads the reply."""
    from flwr.app import Context, Message, Metadata, RecordDict  # noqa: TID251

    from fedtrees.algorithms.toy import ToyCountsRequest
    from fedtrees.datasets import load_site_data, save_client_file
    from fedtrees.federation import Envelope, encode, receive
    from fedtrees.federation._transport import Delivery
    from fedtrees.federation.flower import make_client_app
    from fedtrees.federation.flower._wire import pack, unpack

    with tempfile.TemporaryDirectory() as folder:
        path = save_client_file(
            Path(folder) / "site.npz", pd.DataFrame({"age": [1.0, 2.0]}), ["n", "y"]
        )
        config = {"client-id": "site-a", "data-path": str(path), **node_config}
        request = ToyCountsRequest(np.array(["n", "y"]))
        data = encode(Envelope("request", 1, "site-a", request.kind, request))
        metadata = Metadata(
            run_id=1, message_id="m1", src_node_id=1, dst_node_id=2,
            reply_to_message_id="", group_id="1", created_at=time.time(), ttl=60.0,
            message_type="query.fedtrees",
        )  # fmt: skip
        context = Context(
            run_id=1, node_id=2, node_config=config, state=RecordDict(), run_config={}
        )
        reply = make_client_app(load_site_data)(
            Message(pack(data), metadata=metadata), context
        )
        delivery = Delivery("site-a", "ok", unpack(reply.content), 0.1)
        got = receive("site-a", 1, request, delivery)
    return accepted(f"the site answered {got!r}"[:200])


case("node-config-misspelt-budget-key", F, ("site-a", "privacy-budjet"))(
    lambda: _site_answers({"privacy-budjet": 3.0})
)
case("node-config-cache-dir-an-int", F, ("site-a", "cache-dir"))(
    lambda: _site_answers({"cache-dir": 5})
)
case("node-config-forget-state-at-typo", F, ("site-a", "forget-state-at"))(
    lambda: _site_answers({"forget-state-at": "2;4"})
)


# -- turn-3 leftovers ----------------------------------------------------------------
@case("local-forest-zero-weight-client", F, ("sample_weight", "'b'"))
def zero_weight_local() -> Verdict:
    X, y, groups = blobs()
    weights = np.where(groups == "b", 0.0, 1.0)
    make("LocalEnsembleClassifier").fit(X, y, groups, sample_weight=weights)
    return accepted("a forest fitted at a client of zero weight")


@case("labels-list-mixing-int-and-text", F, (r"\by\b", "mix"))
def mixed_labels() -> Verdict:
    X, y, groups = blobs()
    labels = [1 if v else "a" for v in y]
    model = make("FedForestClassifier").fit(X, labels, groups)
    return accepted(f"classes {model.classes_!r}")


@case("labels-beyond-int64", F, (r"\by\b", "64-bit"))
def big_labels() -> Verdict:
    X, y, groups = blobs()
    make("FedGAClassifier").fit(X, [2**70 if v else 0 for v in y], groups)
    return accepted("labels beyond int64")


@case("site-labels-mixing-types", F, ("'a'", r"\by\b", "mix"))
def site_mixed_labels() -> Verdict:
    from fedtrees.federation import Federation

    X, y, _ = blobs()
    labels = [1 if v else "a" for v in y]
    sites = {"a": (X[:50], labels[:50]), "b": (X[50:], labels[50:])}
    make("FedForestClassifier").fit_federation(Federation.from_clients(sites))
    return accepted("a site's labels mixing int and text")


def _huge_group(key: object) -> Verdict:
    X, y, groups = blobs()
    keys = np.array(groups, dtype=object)
    keys[keys == "c"] = key

    def run() -> Verdict:
        make("LocalEnsembleClassifier").fit(X, y, keys)
        return accepted("a huge client id")

    return short(run)


case("groups-10MB-client-id", F, ("groups",))(lambda: _huge_group("x" * 10_000_000))
case("groups-int-of-5000-digits", F, ("groups",))(lambda: _huge_group(10**5000))


@case("predict-client-10MB-id", F, ("'client'",))
def predict_huge_client() -> Verdict:
    X, y, groups = blobs()
    model = make("LocalModelsClassifier").fit(X, y, groups)

    def run() -> Verdict:
        model.predict(X[:2], client="x" * 10_000_000)
        return accepted("predict for an unknown, huge client")

    return short(run)


def _toy(initial: object) -> Verdict:
    from fedtrees.algorithms import run_toy

    run_toy(_federation(), initial=initial)  # type: ignore[arg-type]
    return accepted(f"initial {str(initial)[:60]}")


case("toy-initial-text", F, ("initial",))(lambda: _toy("abc"))
case("toy-initial-unsorted", F, ("initial",))(lambda: _toy([2.0, 1.0]))
case("toy-initial-object", F, ("initial",))(lambda: _toy({"a": 1}))
