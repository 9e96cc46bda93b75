r"""Every key of the run config and the node config, checked by name.

The **run config** (``[tool.flwr.app.config]`` of the app's pyproject, plus
``flwr run --run-config``) tells the ServerApp which job to run and how
(:data:`RUN_CONFIG`); the sites read ``job``, ``max-message-bytes`` and
``categories`` from it too. The **node config** (``flower-supernode
--node-config``) is a site's own settings (:data:`NODE_CONFIG`). Each key has
one check and one sentence saying what it must be; a bad value, a missing
required key or an unknown key is a :class:`~fedtrees.exceptions.ValidationError`
naming the key (docs/flower.md, "Run config and node config").

JSON values (``params``, ``categories``, ``classes``) are bounded in size and
nesting before they are parsed (:func:`fedtrees._validation.load_json`).

Node config text: Flower reads ``--node-config`` with a pattern that ends a
double-quoted value at its first ``"`` (escaped or not) and then parses the pairs
as TOML. :func:`node_config_text` therefore writes every string as a TOML basic
string whose ``"``, ``\`` and control characters are ``\uXXXX`` escapes, so any
text a key may hold survives Flower's parsing unchanged; text TOML cannot hold
(lone surrogates, from undecodable file names) is refused, naming the key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from fedtrees._validation import (
    MAX_CLIENT_ID_CHARS,
    is_integral,
    is_real,
    load_json,
    shown,
)
from fedtrees.exceptions import ValidationError
from fedtrees.federation._codec import MAX_MESSAGE_BYTES
from fedtrees.federation._data import (
    DeclaredCategories,
    check_categories,
    check_classes,
)
from fedtrees.federation._driver import MAX_TIMEOUT
from fedtrees.federation.flower._noise import (
    NOISE_SAMPLER_KEY,
    NOISE_SEED_KEY,
    site_noise,
)
from fedtrees.federation.flower._site_files import (
    CATEGORICAL_KEY,
    NA_VALUES_KEY,
    csv_declarations,
)
from fedtrees.federation.flower._wire import NODE_CONFIG_KEY

__all__ = [
    "NODE_CONFIG",
    "REPORT_CATEGORIES_KEY",
    "REQUIRE_DECLARED_KEY",
    "RUN_CONFIG",
    "ConfigKey",
    "check_node_config",
    "check_run_config",
    "check_site_id",
    "declared_categories",
    "max_message_bytes",
    "node_config_text",
    "reports_categories",
    "require_declared_categories",
    "run_config_value",
]

REQUIRE_DECLARED_KEY: Final = "require-declared-categories"
"""The run config entry requiring every categorical column to be declared."""
REPORT_CATEGORIES_KEY: Final = "report-categories"
"""The node config entry with which a site refuses to send category names."""
MAX_POLL_INTERVAL: Final = 60.0
"""Longest pause between two pulls of the ServerApp, in seconds."""


class _Bad(Exception):
    """A value that breaks its key's constraint (turned into a named error)."""


@dataclass(frozen=True)
class ConfigKey:
    """One key of a config: what it must be, its check, and whether it is needed.

    ``check(value)`` returns the value to use, or raises (any ``ValueError`` or
    ``TypeError``, or a :class:`ValidationError` that already names the key).
    """

    expected: str
    check: Callable[[Any], Any]
    required: bool = False


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise _Bad
    return value


def _filled_text(value: object) -> str:
    if not _text(value) or "\0" in str(value):
        raise _Bad
    return str(value)


def _site_id(value: object) -> str:
    text = _filled_text(value)
    if len(text) > MAX_CLIENT_ID_CHARS or _CONTROL.search(text):
        raise _Bad
    return text


def _int(value: object) -> int:
    if not is_integral(value):
        raise _Bad
    return int(value)


def _int_at_least_one(value: object) -> int:
    if is_real(value) and not is_integral(value) and float(value).is_integer():
        value = int(value)  # 1e6 from TOML is a float
    if not is_integral(value) or int(value) < 1:
        raise _Bad
    return int(value)


def _seconds_up_to(top: float) -> Callable[[object], float]:
    def check(value: object) -> float:
        if not is_real(value) or not 0.0 < float(value) <= top:
            raise _Bad
        return float(value)

    return check


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Bad
    return value


def _as_given(value: object) -> object:
    """Return a value checked with another key, elsewhere (the budget pair)."""
    return value


def _checked_alone(
    key: str, check: Callable[[Mapping[str, Any]], object]
) -> Callable[[object], object]:
    """Check one entry with its own reader (it names the key itself)."""

    def check_entry(value: object) -> object:
        check({key: value})
        return value

    return check_entry


def _rounds(value: object) -> object:
    if is_integral(value):
        return value
    if not isinstance(value, str) or not _ROUNDS.fullmatch(value):
        raise _Bad
    return value


def _json_object(key: str) -> Callable[[object], dict[str, Any]]:
    def check(value: object) -> dict[str, Any]:
        parsed = load_json(_text(value), f"Run config {key!r}")
        if not isinstance(parsed, dict):
            raise _Bad
        return parsed

    return check


def _json_or_empty(key: str, then: Callable[[Any, str], Any]) -> Callable[[Any], Any]:
    def check(value: object) -> Any:
        where = f"Run config {key!r}"
        text = _text(value)
        return then(None if text == "" else load_json(text, where), where)

    return check


_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")
_ROUNDS: Final = re.compile(r"\s*(\d+\s*(,\s*\d+\s*)*)?")

RUN_CONFIG: Final[dict[str, ConfigKey]] = {
    "job": ConfigKey("the name of a fedtrees job (text)", _filled_text, True),
    "params": ConfigKey(
        "the job's parameters: a JSON object, as text", _json_object("params")
    ),
    "output-path": ConfigKey(
        "the path of the result file on the SuperLink host (non-empty text)",
        _filled_text,
        True,
    ),
    "min-clients": ConfigKey(
        "an int >= 1: the SuperNodes to wait for", _int_at_least_one, True
    ),
    "round-timeout": ConfigKey(
        f"seconds in (0, {MAX_TIMEOUT:g}]: how long a round waits for a site",
        _seconds_up_to(MAX_TIMEOUT),
        True,
    ),
    "registration-timeout": ConfigKey(
        f"seconds in (0, {MAX_TIMEOUT:g}]: how long to wait for the SuperNodes",
        _seconds_up_to(MAX_TIMEOUT),
        True,
    ),
    "poll-interval": ConfigKey(
        f"seconds in (0, {MAX_POLL_INTERVAL:g}] between two pulls of replies",
        _seconds_up_to(MAX_POLL_INTERVAL),
        True,
    ),
    "max-message-bytes": ConfigKey(
        "an int >= 1: the longest message either side reads", _int_at_least_one
    ),
    "categories": ConfigKey(
        '"" or a JSON object, as text: column -> list of category names',
        _json_or_empty("categories", check_categories),
    ),
    "classes": ConfigKey(
        '"" or a JSON list of class labels, as text',
        _json_or_empty("classes", check_classes),
    ),
    REQUIRE_DECLARED_KEY: ConfigKey(
        "true or false: every categorical column must be declared in "
        "categories (no site sends a category name)",
        _flag,
    ),
}
"""Every run config key fedtrees reads, with what it must be."""

NODE_CONFIG: Final[dict[str, ConfigKey]] = {
    "client-id": ConfigKey(
        f"this site's client id: text of 1 to {MAX_CLIENT_ID_CHARS} characters, "
        "no control characters",
        _site_id,
        True,
    ),
    "data-path": ConfigKey(
        "the path of this site's data file, .npz or .csv (non-empty text)",
        _filled_text,
        True,
    ),
    "target": ConfigKey("the label column of a CSV data file (text)", _text),
    "cache-dir": ConfigKey(
        'the folder caching the prepared data (text; "" for no cache)', _text
    ),
    "privacy-budget": ConfigKey(
        "the site's total epsilon, a finite number > 0 (checked with "
        "privacy-ledger: site_budget)",
        _as_given,
    ),
    "privacy-ledger": ConfigKey(
        "the absolute path of the site's privacy ledger file (checked with "
        "privacy-budget: site_budget)",
        _as_given,
    ),
    NOISE_SEED_KEY: ConfigKey(
        "this site's secret DP noise seed: at least 32 hex digits in a string "
        "(never sent)",
        _checked_alone(NOISE_SEED_KEY, site_noise),
    ),
    NOISE_SAMPLER_KEY: ConfigKey(
        '"numpy" or "opendp": the sampler of this site\'s DP noise',
        _checked_alone(NOISE_SAMPLER_KEY, site_noise),
    ),
    NA_VALUES_KEY: ConfigKey(
        "the CSV cells read as missing: comma-separated text, '?,NA'",
        _checked_alone(NA_VALUES_KEY, csv_declarations),
    ),
    CATEGORICAL_KEY: ConfigKey(
        "the CSV columns read as categories: comma-separated text",
        _checked_alone(CATEGORICAL_KEY, csv_declarations),
    ),
    REPORT_CATEGORIES_KEY: ConfigKey(
        "true or false: false, this site sends no category name (its "
        "categorical columns must be declared by the run)",
        _flag,
    ),
    NODE_CONFIG_KEY: ConfigKey(
        "the path of the site worker's socket (text; fedtrees flower supernode "
        "adds it)",
        _text,
    ),
    "forget-state-at": ConfigKey(
        'rounds before which the site forgets its kept state (tests), "2,5"',
        _rounds,
    ),
    "partition-id": ConfigKey("an int (Flower's simulation sets it)", _int),
    "num-partitions": ConfigKey("an int (Flower's simulation sets it)", _int),
}
"""Every node config key a fedtrees site reads, with what it must be.

``partition-id`` and ``num-partitions`` are Flower's own (its simulation sets
them); a site ignores them.
"""


def run_config_value(config: Mapping[str, Any], key: str) -> Any:
    """Return the run config's ``key`` checked (None if it is absent and optional).

    Raises
    ------
    ValidationError
        Naming the key: missing though required, or a value that breaks it.

    Examples
    --------
    >>> run_config_value({"min-clients": 3}, "min-clients")
    3
    >>> run_config_value({"min-clients": True}, "min-clients")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: Run config 'min-clients' must be an int ...
    """
    return _value(RUN_CONFIG, config, key, "Run config")


def check_run_config(config: Mapping[str, Any]) -> None:
    """Check every key of a run config; refuse a key fedtrees does not read."""
    _refuse_unknown(RUN_CONFIG, config, "Run config")
    for key in RUN_CONFIG:
        _value(RUN_CONFIG, config, key, "Run config")


def check_node_config(config: Mapping[str, Any]) -> None:
    """Check every key of a site's node config; refuse a key no site reads.

    Raises
    ------
    ValidationError
        Naming the key and what it must be; a missing ``client-id`` or
        ``data-path`` says how to start the SuperNode.

    Examples
    --------
    >>> check_node_config({"client-id": "a", "data-path": "/d/a.npz"})
    >>> misspelt = {"client-id": "a", "data-path": "/d", "cache_dir": ""}
    >>> check_node_config(misspelt)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: The node config has the key 'cache_dir'...
    """
    _refuse_unknown(NODE_CONFIG, config, "The node config")
    for key in NODE_CONFIG:
        _value(NODE_CONFIG, config, key, "The node config's")


def _value(
    table: Mapping[str, ConfigKey], config: Mapping[str, Any], key: str, where: str
) -> Any:
    spec, value = table[key], config.get(key)
    if value is None:
        if spec.required:
            raise ValidationError(f"{where} {key!r} is missing: {_needed(key)}")
        return None
    try:
        return spec.check(value)
    except ValidationError:
        raise
    except (_Bad, TypeError, ValueError):
        raise ValidationError(
            f"{where} {key!r} must be {spec.expected}; got {shown(value)}."
        ) from None


def _needed(key: str) -> str:
    if key in ("client-id", "data-path"):
        return (
            'start the SuperNode with --node-config \'client-id="NAME" '
            'data-path="/path/to/data.npz"\''
        )
    where = RUN_CONFIG if key in RUN_CONFIG else NODE_CONFIG
    return f"it must be {where[key].expected}."


def _refuse_unknown(
    table: Mapping[str, ConfigKey], config: Mapping[str, Any], where: str
) -> None:
    unknown = sorted(str(k) for k in config if k not in table)
    if unknown:
        raise ValidationError(
            f"{where} has the key {shown(unknown[0])}, which fedtrees does not "
            f"read; its keys are {sorted(table)} (a misspelt key would be "
            "ignored otherwise)."
        )


def check_site_id(client_id: object, owner: str) -> str:
    """Refuse a site's client id that a node config or a key file cannot carry.

    The rule of the node config's ``client-id`` (:data:`NODE_CONFIG`), for the
    functions that take it as ``client_id`` (a command line, a key's file name
    and comment).

    Raises
    ------
    ValidationError
        Naming ``client_id`` (``--client-id`` on the command line).

    Examples
    --------
    >>> check_site_id("Cleveland", "f")
    'Cleveland'
    """
    spec = NODE_CONFIG["client-id"]
    try:
        return str(spec.check(client_id))
    except (_Bad, TypeError, ValueError):
        raise ValidationError(
            f"{owner}: 'client_id' must be {spec.expected}; got {shown(client_id)}."
        ) from None


def max_message_bytes(config: Mapping[str, Any]) -> int:
    """Return the run config's ``max-message-bytes`` (an int >= 1), or the default.

    The longest message either side reads: the server checks every reply, each
    ClientApp every request, before decoding.
    """
    value = run_config_value(config, "max-message-bytes")
    return MAX_MESSAGE_BYTES if value is None else int(value)


def require_declared_categories(config: Mapping[str, Any]) -> bool:
    """Return the run config's ``require-declared-categories`` (default false)."""
    return bool(run_config_value(config, REQUIRE_DECLARED_KEY))


def reports_categories(node_config: Mapping[str, Any]) -> bool:
    """Return the node config's ``report-categories`` (default true)."""
    value = _value(NODE_CONFIG, node_config, REPORT_CATEGORIES_KEY, "The node config's")
    return True if value is None else bool(value)


def declared_categories(config: Mapping[str, Any]) -> DeclaredCategories:
    """Return the run config's ``categories`` (JSON: column -> names), or {}."""
    value: DeclaredCategories | None = run_config_value(config, "categories")
    return {} if value is None else value


# -- node config text ------------------------------------------------------------
_ESCAPED: Final = re.compile(r'["\\\x00-\x1f\x7f]')


def node_config_text(entries: Mapping[str, object]) -> str:
    r"""Return ``entries`` as one ``--node-config`` value that Flower reads back whole.

    Each entry is checked (:data:`NODE_CONFIG`); strings become TOML basic
    strings with ``"``, ``\`` and control characters escaped as ``\uXXXX``
    (Flower ends a quoted value at its first ``"``, even an escaped one).

    Raises
    ------
    ValidationError
        Naming the key: unknown, a value that breaks it, or text TOML cannot
        carry (lone surrogates).

    Examples
    --------
    >>> print(node_config_text({"client-id": 'Site "A"', "data-path": "/d/a.npz"}))
    client-id="Site \u0022A\u0022" data-path="/d/a.npz"
    """
    _refuse_unknown(NODE_CONFIG, entries, "The node config")
    pairs = []
    for key, value in entries.items():
        _value(NODE_CONFIG, entries, key, "The node config's")
        pairs.append(f"{key}={_toml_value(key, value)}")
    return " ".join(pairs)


def _toml_value(key: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if is_integral(value):
        return str(int(value))
    if is_real(value) and math.isfinite(float(value)):
        return repr(float(value))
    if not isinstance(value, str):
        raise ValidationError(
            f"The node config's {key!r} must be text or a finite number; got "
            f"{shown(value)}."
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(
            f"The node config's {key!r} holds characters that are not text "
            f"(undecodable bytes of a file name): {shown(value)}; rename it."
        ) from None
    return '"' + _ESCAPED.sub(lambda m: f"\\u{ord(m.group()):04X}", value) + '"'
