"""Jobs and configs (issue 37, round four): every key refused by name when bad.

Every parameter of every job, every run config key and every node config key is
listed here with at least one bad value, and each is refused with a
:class:`~fedtrees.exceptions.FedTreesError` naming the key: the lists are read
from the code (:func:`fedtrees.algorithms.job_params`, ``RUN_CONFIG``,
``NODE_CONFIG`` and the app's pyproject), so a key added without a bad value
here fails these tests. Before the fix, hostile ``bin_edges``, a recursion bomb
in the run config's JSON and a ``"`` in a site id or data path gave raw Python
or Flower-generic errors (or were accepted).
"""

from __future__ import annotations

import re
import time
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flwr")

from flwr.app import Context, Message, Metadata, RecordDict  # noqa: TID251
from flwr.common.config import parse_config_args  # noqa: TID251

from fedtrees.algorithms import JOBS, check_job, job_params, run_job
from fedtrees.algorithms.toy import ToyCountsRequest
from fedtrees.datasets import load_site_data, save_client_file
from fedtrees.exceptions import FedTreesError, RemoteProtocolError, ValidationError
from fedtrees.federation import Envelope, Federation, decode, encode
from fedtrees.federation.flower import (
    NODE_CONFIG,
    RUN_CONFIG,
    ServerConfig,
    app_dir,
    check_node_config,
    make_client_app,
    make_server_app,
    node_config_text,
    supernode_command,
)
from fedtrees.federation.flower._apps import check_output_path
from fedtrees.federation.flower._transport import _hello_client_id
from fedtrees.federation.flower._wire import pack, unpack
from fedtrees.federation.flower._worker import with_worker_socket

RANGES = [[-4.0, 4.0], [-4.0, 4.0]]
SMALL: dict[str, dict[str, Any]] = {
    "toy": {"n_bins": 3, "n_rounds": 1},
    "fedforest": {"n_estimators": 1, "max_depth": 2},
    "local-ensemble": {"n_estimators": 1, "max_depth": 2},
    "dpforest": {"feature_ranges": RANGES, "max_depth": 2},
    "icdta": {"max_depth": 2},
    "federated-id3": {"max_depth": 2},
    "synthetic": {
        "feature_ranges": RANGES, "samples_per_path": 5, "client_max_depth": 2
    },
    "fedga": {
        "population_size": 4, "n_generations": 1, "depth_range": [1, 2],
        "cv_folds": 2,
    },
    "fedgbdt": {"n_estimators": 1, "max_depth": 2},
}  # fmt: skip
"""Every job, small and fast: a bad parameter is the only thing wrong."""

BAD_PARAM: dict[str, object] = {
    name: {"bogus": [name]}  # an object where a number, flag or name is expected
    for name in (
        "alpha", "base", "base_score", "binary", "bootstrap", "budget", "candidates",
        "class_weight", "client_fraction", "client_max_depth", "colsample_bytree",
        "criterion", "cv_folds", "depth_range", "early_stopping_rounds", "epsilon",
        "f1_average", "feature", "fill", "filter", "flip_rate", "flip_schedule", "gain", "gamma",
        "global_max_depth", "honest_clients", "learning_rate", "max_bins", "max_depth",
        "max_features", "max_rules", "merge", "metric", "min_child_weight",
        "min_impurity_decrease", "min_samples_leaf", "min_samples_split",
        "mu_star", "n_bins", "n_estimators", "n_generations", "n_jobs", "n_quantiles",
        "n_rounds", "nil_rate", "noise", "on_dropout", "oob_score", "p_max", "phi_star",
        "population_size", "protocol", "random_state", "reg_lambda", "rule_gain",
        "samples_per_path", "secure_aggregation", "significance", "split_on_client",
        "split_score", "subsample",
        "swap_rate", "task", "theta_star", "timeout", "top_k", "tournament_size",
        "train_ratio", "trees_per_round", "validation_fraction", "verbose",
        "weighting", "workers",
    )
} | {
    "bin_edges": {"x0": ["low", "high"]},
    "feature_ranges": {"x0": "wide"},
    "initial": [2.0, 1.0],
    "join_at": {"a": "soon"},
    "eval_metric": {"bogus": ["eval_metric"]},
    "objective": {"bogus": ["objective"]},
    "scale_pos_weight": {"bogus": ["scale_pos_weight"]},
}  # fmt: skip
"""A bad value for every job parameter (a new parameter needs one here)."""


def _federation() -> Federation:
    rng = np.random.default_rng(37)
    X = pd.DataFrame(rng.normal(size=(90, 2)), columns=["x0", "x1"])
    y = (X["x0"] > 0).astype(np.int64).to_numpy()
    return Federation.from_groups(X, y, np.repeat(["a", "b", "c"], 30))


def _job_param_cases() -> list[tuple[str, str]]:
    return [(job, name) for job in JOBS for name in sorted(job_params(job))]


def _names(message: str, key: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", message) is not None


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("job", "param"),
    _job_param_cases(),
    ids=[f"{j}:{p}" for j, p in _job_param_cases()],
)
def test_every_job_parameter_refuses_a_bad_value_by_name(job: str, param: str) -> None:
    assert param in BAD_PARAM, f"give job parameter {param!r} a bad value in BAD_PARAM"
    params = {**SMALL[job], param: BAD_PARAM[param]}
    with pytest.raises(FedTreesError, match=re.escape(param)) as caught:
        run_job(job, _federation(), params, timeout=60)
    assert _names(str(caught.value), param), str(caught.value)


HOSTILE_EDGES = {
    "not a mapping": [0.0, 1.0],
    "text": "0.5",
    "non-numeric": {"x0": ["a", "b"]},
    "a mapping of edges": {"x0": {"low": 0.0}},
    "unsorted": {"x0": [1.0, 0.0]},
    "nan": {"x0": [float("nan"), 1.0]},
    "inf": {"x0": [0.0, float("inf")]},
    "nested": {"x0": [[0.0, 1.0]]},
    "booleans": {"x0": [False, True]},
    "numbers as text": {"x0": ["0.5", "1.5"]},
    "an int beyond a float": {"x0": [10**400]},
    "huge list": {"x0": [float(v) for v in range(100_000)]},
    "unknown column": {"nope": [0.0]},
    "empty": {"x0": []},
}


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("edges", HOSTILE_EDGES.values(), ids=HOSTILE_EDGES)
@pytest.mark.parametrize("job", ["fedforest", "fedgbdt", "icdta", "federated-id3"])
def test_hostile_bin_edges_in_a_jobs_params_are_named(job: str, edges: object) -> None:
    params = {**SMALL[job], "bin_edges": edges}
    start = time.perf_counter()
    with pytest.raises(ValidationError, match="bin_edges") as caught:
        run_job(job, _federation(), params, timeout=60)
    assert len(str(caught.value)) < 1000  # a huge list is quoted cut short
    assert time.perf_counter() - start < 30  # refused before any work


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("form", [tuple, np.array, pd.Series], ids=lambda f: f.__name__)
def test_edges_as_any_flat_array_like_give_the_model_of_a_list(form: Any) -> None:
    edges = {"x0": [-1.0, 0.0, 1.0], "x1": [0.0]}
    as_list, _ = run_job("icdta", _federation(), {**SMALL["icdta"], "bin_edges": edges})
    other = {column: form(values) for column, values in edges.items()}
    as_form, _ = run_job("icdta", _federation(), {**SMALL["icdta"], "bin_edges": other})
    assert as_form["tree"] == as_list["tree"]
    assert as_form["bins"] == as_list["bins"] == [edges["x0"], edges["x1"]]


@pytest.mark.hostile("clear_error")
def test_check_job_refuses_unknown_jobs_and_parameters_before_any_round() -> None:
    with pytest.raises(ValidationError, match=r"'job' parameter of run_job"):
        check_job("fedforrest", {})
    with pytest.raises(ValidationError, match=r"'params' parameter of job 'toy'"):
        check_job("toy", [1, 2])
    with pytest.raises(ValidationError, match=r"unknown key 'n_trees'"):
        check_job("fedforest", {"n_trees": 3})


# -- run config --------------------------------------------------------------------
RUN_CONFIG_OK: dict[str, Any] = {
    "job": "toy",
    "params": '{"n_bins": 4}',
    "output-path": "/tmp/fedtrees-result.json",
    "min-clients": 2,
    "round-timeout": 30.0,
    "registration-timeout": 60.0,
    "poll-interval": 0.02,
    "max-message-bytes": 2**20,
    "categories": '{"ward": ["a", "b"]}',
    "classes": '["no", "yes"]',
    "require-declared-categories": False,
}
BAD_RUN_CONFIG: dict[str, list[object]] = {
    "job": ["", 5],
    "params": ["[" * 100_000, '{"a": ' * 50_000, "[1, 2]", "{n_bins: 4}", 5],
    "output-path": ["", "a\0b", 5],
    "min-clients": [True, 2.5, 0, "2"],
    "round-timeout": [float("nan"), float("inf"), 0.0, -1.0, True, "30"],
    "registration-timeout": [float("nan"), 0.0, -5.0],
    "poll-interval": [float("nan"), 0.0, float("inf"), 3600.0],
    "max-message-bytes": [True, 0, 2.5, "1"],
    "categories": ["[" * 100_000, "[1]", '{"ward": "a"}', 5],
    "classes": ["[" * 100_000, "{}", "[[1]]", 5],
    "require-declared-categories": ["true", 1, 0.0],
}
"""Bad values for every run config key (a new key needs some here)."""


def test_the_checked_run_config_keys_are_the_apps_keys() -> None:
    config = tomllib.loads((app_dir() / "pyproject.toml").read_text())
    assert set(config["tool"]["flwr"]["app"]["config"]) == set(RUN_CONFIG)
    assert set(BAD_RUN_CONFIG) == set(RUN_CONFIG) == set(RUN_CONFIG_OK)
    ServerConfig.from_run_config(RUN_CONFIG_OK)  # the good values pass


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("key", "value"),
    [(k, v) for k, values in BAD_RUN_CONFIG.items() for v in values],
    ids=[f"{k}-{i}" for k, vs in BAD_RUN_CONFIG.items() for i in range(len(vs))],
)
def test_every_run_config_key_refuses_a_bad_value_by_name(
    key: str, value: object
) -> None:
    start = time.perf_counter()
    with pytest.raises(ValidationError, match=f"Run config '{key}'") as caught:
        ServerConfig.from_run_config({**RUN_CONFIG_OK, key: value})
    assert len(str(caught.value)) < 1000
    assert time.perf_counter() - start < 10  # a recursion bomb is measured, not run


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("key", [k for k, s in RUN_CONFIG.items() if s.required])
def test_a_missing_required_run_config_key_is_named(key: str) -> None:
    config = {k: v for k, v in RUN_CONFIG_OK.items() if k != key}
    with pytest.raises(ValidationError, match=f"Run config '{key}' is missing"):
        ServerConfig.from_run_config(config)


@pytest.mark.hostile("clear_error")
def test_an_unknown_run_config_key_is_named() -> None:
    with pytest.raises(ValidationError, match="the key 'round_timeout'"):
        ServerConfig.from_run_config({**RUN_CONFIG_OK, "round_timeout": 5.0})


@pytest.mark.hostile("clear_error")
def test_an_output_path_that_cannot_be_written_is_refused_before_the_run(
    tmp_path: Path,
) -> None:
    check_output_path(tmp_path / "new" / "result.json")  # a folder to be made
    with pytest.raises(ValidationError, match=r"'output-path'.*is a folder"):
        check_output_path(tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(ValidationError, match=r"'output-path'.*cannot be written"):
        check_output_path(tmp_path / "file" / "result.json")


class _NoNodes:
    """A Grid that fails the test if the ServerApp waits for SuperNodes."""

    def get_node_ids(self) -> list[int]:
        raise AssertionError("the ServerApp waited for SuperNodes first")


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"job": "fedforrest"}, "'job'"),
        ({"params": '{"n_trees": 3}'}, "'n_trees'"),
        ({"output-path": "/"}, "'output-path'"),
        ({"params": "[" * 100_000}, "'params'"),
    ],
)
def test_the_server_app_refuses_a_bad_run_before_waiting_for_supernodes(
    change: dict[str, object], named: str
) -> None:
    app = make_server_app(run_job, check_job)
    context = Context(
        run_id=1,
        node_id=0,
        node_config={},
        state=RecordDict(),
        run_config={**RUN_CONFIG_OK, **change},
    )  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=named):
        app(_NoNodes(), context)  # type: ignore[arg-type]


# -- node config -------------------------------------------------------------------
BAD_NODE_CONFIG: dict[str, object] = {
    "client-id": "two\nlines",
    "data-path": "",
    "target": 5,
    "cache-dir": 5,
    "privacy-budget": "lots",
    "privacy-ledger": "relative/ledger.json",
    "site-worker": 5,
    "forget-state-at": "2;4",
    "partition-id": "zero",
    "num-partitions": 1.5,
    "noise-seed": "1234",
    "noise-sampler": "gaussian",
    "na-values": 5,
    "categorical": "a,,b",
    "report-categories": "no",
}
"""A bad value for every node config key (a new key needs one here)."""


@pytest.fixture
def site_file(tmp_path: Path) -> Path:
    X = pd.DataFrame({"age": [40.0, 50.0, 60.0]})
    return save_client_file(tmp_path / "site.npz", X, ["no", "yes", "yes"])


def _served(node_config: dict[str, object]) -> str:
    """The error a site's ClientApp answers a request with, under ``node_config``."""
    request = ToyCountsRequest(np.array(["no", "yes"]))
    data = encode(Envelope("request", 1, "Cleveland", request.kind, request))
    metadata = Metadata(
        run_id=1, message_id="m1", src_node_id=1, dst_node_id=2,
        reply_to_message_id="", group_id="1", created_at=time.time(), ttl=60.0,
        message_type="query.fedtrees",
    )  # fmt: skip
    context = Context(
        run_id=1, node_id=2, node_config=node_config, state=RecordDict(), run_config={}
    )  # type: ignore[arg-type]
    reply = make_client_app(load_site_data)(
        Message(pack(data), metadata=metadata), context
    )
    envelope = decode(unpack(reply.content))
    assert envelope.type == "error", envelope
    return str(envelope.error)


def test_every_node_config_key_has_a_bad_value_here() -> None:
    assert set(BAD_NODE_CONFIG) == set(NODE_CONFIG)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("key", sorted(NODE_CONFIG))
def test_every_node_config_key_refuses_a_bad_value_by_name(
    site_file: Path, key: str
) -> None:
    config: dict[str, object] = {"client-id": "Cleveland", "data-path": str(site_file)}
    if key.startswith("privacy-"):  # the pair is declared together
        config.update({"privacy-budget": 3.0, "privacy-ledger": "/srv/ledger.json"})
    config[key] = BAD_NODE_CONFIG[key]
    error = _served(config)
    assert _names(error, key), error


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("key", ["client-id", "data-path"])
def test_a_missing_node_config_key_says_how_to_start_the_supernode(
    site_file: Path, key: str
) -> None:
    config = {"client-id": "Cleveland", "data-path": str(site_file)}
    del config[key]
    error = _served(config)  # type: ignore[arg-type]
    assert f"'{key}' is missing" in error
    assert "--node-config 'client-id=" in error


@pytest.mark.hostile("clear_error")
def test_a_misspelt_node_config_key_is_refused_not_ignored(site_file: Path) -> None:
    # privacy-budjet ignored would leave the site without the budget it meant
    config = {
        "client-id": "Cleveland",
        "data-path": str(site_file),
        "privacy-budjet": 3.0,
    }
    assert "the key 'privacy-budjet'" in _served(config)


# -- quoting the node config ---------------------------------------------------------
AWKWARD = [
    'Site "A"', "it's", "both \"and' quotes", "back\\slash", "ends with \\",
    "a=b c=d", "# hash", " spaced ", "Zürich €", "emoji 😀", "[1, 2]", "true",
    "5", "\\u0022", "tab\there", "\u2028",
]  # fmt: skip


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("text", AWKWARD)
def test_awkward_site_ids_and_paths_reach_the_site_unchanged(text: str) -> None:
    client_id = text.replace("\t", " ")  # a client id takes no control character
    command = supernode_command(
        superlink="127.0.0.1:9095",
        client_id=client_id,
        data_path=f"/srv/{text}.npz",
        target=text,
        node_config={"cache-dir": text},
        insecure=True,
    )
    command = with_worker_socket(command, f"/tmp/{text}/site.sock")
    arg = command[command.index("--node-config") + 1]
    # Flower's own parser of --node-config, as flower-supernode runs it
    assert parse_config_args([arg]) == {
        "client-id": client_id,
        "data-path": f"/srv/{text}.npz",
        "target": text,
        "cache-dir": text,
        "site-worker": f"/tmp/{text}/site.sock",
    }


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"client_id": "two\nlines"}, "'client_id'"),
        ({"client_id": "x" * 300}, "'client_id'"),
        ({"client_id": ""}, "'client_id'"),
        ({"data_path": "/srv/a\0b.npz"}, "'data-path'"),
        ({"data_path": "/srv/\udcff.npz"}, "'data-path'"),
        ({"node_config": {"cache_dir": "/c"}}, "'cache_dir'"),
    ],
)
def test_text_a_node_config_cannot_carry_is_refused_by_name(
    kwargs: dict[str, Any], named: str
) -> None:
    args: dict[str, Any] = {
        "superlink": "h:1", "client_id": "a", "data_path": "/d.npz", "insecure": True,
        **kwargs,
    }  # fmt: skip
    with pytest.raises(ValidationError, match=named) as caught:
        supernode_command(**args)
    assert len(str(caught.value)) < 1000


def test_node_config_text_checks_every_entry() -> None:
    text = node_config_text({"client-id": "a", "data-path": "/d.npz"})
    assert text == 'client-id="a" data-path="/d.npz"'
    check_node_config(parse_config_args([text]))
    with pytest.raises(ValidationError, match="'forget-state-at'"):
        node_config_text({"forget-state-at": "soon"})


@pytest.mark.hostile("clear_error")
def test_a_hello_with_a_huge_client_id_is_refused_naming_the_node() -> None:
    from flwr.app import ConfigRecord  # noqa: TID251

    metadata = Metadata(
        run_id=1, message_id="m2", src_node_id=7, dst_node_id=1,
        reply_to_message_id="m1", group_id="", created_at=time.time(), ttl=60.0,
        message_type="query.fedtrees_hello",
    )  # fmt: skip
    content = RecordDict({"hello": ConfigRecord({"client-id": "x" * 10_000_000})})
    with pytest.raises(RemoteProtocolError, match=r"node 7.*'client-id'") as caught:
        _hello_client_id(7, Message(content, metadata=metadata))
    assert len(str(caught.value)) < 1000


def test_the_flower_docs_list_every_key() -> None:
    from tests.conftest import PROJECT_ROOT

    page = (PROJECT_ROOT / "docs" / "flower.md").read_text()
    section = page.split("## Run config and node config", 1)[1].split("\n## ", 1)[0]
    missing = [k for k in [*RUN_CONFIG, *NODE_CONFIG] if f"`{k}`" not in section]
    assert not missing, missing
