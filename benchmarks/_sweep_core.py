"""The hostile sweep's vocabulary: cases, verdicts, how an error is judged, data.

A case is a small function registered with :func:`case`. It either returns a
:class:`Verdict` (it ran; the case itself compared the result with a reference
or with what the docs say) or raises. A raised exception is judged by
:func:`judge_error`: a library error (``FedTreesError`` or scikit-learn's
``NotFittedError``) whose message matches every pattern of the case's
``names`` (the client, column, parameter or field at fault, and what was
expected) is a *clear error*; any other exception, or a library error that does
not name the culprit, is an *unclear crash*; a message that carries a secret
the case registered with :func:`secret` (a client's row count, a data value) is
a *leak*, whatever its type.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

CLEAR, DOCUMENTED, CORRECT = "clear error", "documented", "correct"
UNCLEAR, WRONG, HANG, LEAK = "unclear crash", "silent wrong", "hang", "leak"
OUTCOMES: Final = (CLEAR, DOCUMENTED, CORRECT, UNCLEAR, WRONG, HANG, LEAK)
BAD: Final = (UNCLEAR, WRONG, HANG, LEAK)


@dataclass(frozen=True)
class Verdict:
    """A case's class and a short note (what happened, where)."""

    outcome: str
    note: str = ""


@dataclass(frozen=True)
class Case:
    """One registered case: ``run`` returns a verdict or raises."""

    name: str
    family: str
    run: Callable[[], Verdict]
    names: tuple[str, ...]
    """Regexes a clear error's message must all match (case-insensitive)."""


CASES: dict[str, Case] = {}
_SECRETS: list[str] = []


def case(
    name: str, family: str, names: Sequence[str] = ()
) -> Callable[[Callable[[], Verdict]], Callable[[], Verdict]]:
    """Register the decorated function as case ``family/name``."""

    def register(function: Callable[[], Verdict]) -> Callable[[], Verdict]:
        key = f"{family}/{name}"
        if key in CASES:
            raise ValueError(f"case {key!r} is registered twice")
        CASES[key] = Case(key, family, function, tuple(names))
        return function

    return register


def secret(*patterns: str) -> None:
    """Declare regexes that no error message of this case may match (a leak)."""
    _SECRETS.extend(patterns)


def secret_rows(counts: Iterable[int]) -> None:
    """A client's exact row count is a secret, in the phrases that state one."""
    for n in counts:
        secret(
            rf"(?<![\d.]){n} (rows?|samples?|records?|observations?)\b",
            rf"\b(got|has|holds|only|n_samples\s*=|rows:?)\s*{n}(?![\d.])",
        )


def secret_values(values: np.ndarray) -> None:
    """Data values are secrets, in the forms Python and numpy print them."""
    for v in np.unique(np.asarray(values, dtype=np.float64).ravel()):
        if np.isfinite(v) and abs(v) >= 1e-3 and v != round(v):
            secret(re.escape(f"{v:.6g}"), re.escape(repr(float(v))[:8]))


def leaks(text: str) -> list[str]:
    """The secrets of this case that ``text`` carries."""
    return [p for p in _SECRETS if re.search(p, text, re.IGNORECASE)]


def judge_warnings(verdict: Verdict, messages: Sequence[str]) -> Verdict:
    """A case that ran is a leak if a warning it raised carries a secret."""
    if verdict.outcome in BAD:
        return verdict
    for message in messages:
        leaked = leaks(message)
        if leaked:
            note = f"warning: {_shorten(message)} [matches secret {leaked[0]!r}]"
            return Verdict(LEAK, note)
    return verdict


def correct(note: str = "") -> Verdict:
    return Verdict(CORRECT, note)


def documented(note: str) -> Verdict:
    return Verdict(DOCUMENTED, note)


def wrong(note: str) -> Verdict:
    return Verdict(WRONG, note)


def check(ok: bool, good: str, bad: str) -> Verdict:
    """Correct when ``ok``, else a silent wrong result."""
    return correct(good) if ok else wrong(bad)


def accepted(what: str) -> Verdict:
    """The input should have been refused but the call returned normally."""
    return wrong(f"accepted without an error: {what}")


def judge_error(exc: BaseException, names: Sequence[str]) -> Verdict:
    """Classify an exception that left a case (see the module docstring)."""
    from sklearn.exceptions import NotFittedError

    from fedtrees.exceptions import FedTreesError

    text = f"{type(exc).__name__}: {exc}"
    short = _shorten(text)
    leaked = leaks(str(exc))
    if leaked:
        return Verdict(LEAK, f"{short} [matches secret {leaked[0]!r}] at {where(exc)}")
    if not isinstance(exc, FedTreesError | NotFittedError):
        return Verdict(UNCLEAR, f"{short} at {where(exc)}")
    missing = [p for p in names if not re.search(p, str(exc), re.IGNORECASE)]
    if missing:
        note = f"{short} [does not name {missing[0]!r}] at {where(exc)}"
        return Verdict(UNCLEAR, note)
    return Verdict(CLEAR, short)


def where(exc: BaseException) -> str:
    """The innermost fedtrees frame of the traceback: ``module:function:line``."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "fedtrees" in f.filename.replace("\\", "/")]
    frame = (ours or frames or [None])[-1]
    if frame is None:
        return "?"
    path = frame.filename.replace("\\", "/")
    short = path.split("/src/", 1)[-1] if "/src/" in path else path.rsplit("/", 1)[-1]
    return f"{short}:{frame.name}:{frame.lineno}"


def _shorten(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- data ---------------------------------------------------------------------------
SIZES: Final = (23, 37, 41)
"""Rows of the three clients of :func:`blobs`: distinctive, so a leak is visible."""


def blobs(
    sizes: Sequence[int] = SIZES, n_features: int = 3, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Separable two-class data over len(sizes) clients ("a", "b", ...)."""
    rng = np.random.default_rng(seed)
    n = int(sum(sizes))
    X = rng.normal(size=(n, n_features)) * 10.0 + 0.123456
    y = (X[:, 0] + 0.5 * X[:, 1] > 0.123456).astype(np.int64)
    groups = np.repeat([chr(ord("a") + k) for k in range(len(sizes))], sizes)
    return X, y, groups


def regression(
    sizes: Sequence[int] = SIZES, n_features: int = 3, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A smooth target over the features of :func:`blobs`."""
    X, _, groups = blobs(sizes, n_features, seed)
    return X, 3.0 * X[:, 0] - X[:, 1] + 0.5, groups


def same(a: Any, b: Any) -> bool:
    """Equal arrays (NaN equal to NaN), for predictions."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc" and b.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def accuracy(model: Any, X: Any, y: Any) -> float:
    return float(np.mean(np.asarray(model.predict(X)) == np.asarray(y)))


# -- estimators ---------------------------------------------------------------------
RANGES: Final = [(-60.0, 60.0)] * 3
SMALL: Final[dict[str, dict[str, Any]]] = {
    "FedForestClassifier": {"n_estimators": 2, "max_depth": 3, "random_state": 0},
    "FedForestRegressor": {"n_estimators": 2, "max_depth": 3, "random_state": 0},
    "FedGBDTClassifier": {"n_estimators": 3, "max_depth": 2, "random_state": 0},
    "FedGBDTRegressor": {"n_estimators": 3, "max_depth": 2, "random_state": 0},
    "DPForestClassifier": {
        "max_depth": 3, "feature_ranges": RANGES, "epsilon": 10.0, "random_state": 0
    },
    "ICDTAClassifier": {"max_depth": 3, "random_state": 0},
    "FederatedID3Classifier": {"max_depth": 3, "random_state": 0},
    "FedGAClassifier": {
        "population_size": 4, "n_generations": 2, "depth_range": (1, 3),
        "cv_folds": 2, "random_state": 0,
    },
    "FedGARegressor": {
        "population_size": 4, "n_generations": 2, "depth_range": (1, 3),
        "cv_folds": 2, "random_state": 0,
    },
    "SyntheticDataClassifier": {
        "client_max_depth": 2, "samples_per_path": 10, "feature_ranges": RANGES,
        "random_state": 0,
    },
    "FedAvgClassifier": {"n_rounds": 2, "local_steps": 5, "random_state": 0},
    "LocalEnsembleClassifier": {"n_estimators": 2, "max_depth": 3, "random_state": 0},
    "LocalEnsembleRegressor": {"n_estimators": 2, "max_depth": 3, "random_state": 0},
    "LocalModelsClassifier": {"n_estimators": 2, "max_depth": 3, "random_state": 0},
    "LocalModelsRegressor": {"n_estimators": 2, "max_depth": 3, "random_state": 0},
}  # fmt: skip
"""A small, fast instance of every estimator of ``fedtrees.__all__``."""


def is_regressor(name: str) -> bool:
    return name.endswith("Regressor")


def make(name: str, **params: Any) -> Any:
    """A small ``name`` estimator with ``params`` over its defaults."""
    import fedtrees

    return getattr(fedtrees, name)(**{**SMALL[name], **params})


def data_for(name: str, **kw: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return regression(**kw) if is_regressor(name) else blobs(**kw)


SITES_NOISE_SEED: Final = 37
"""The simulated sites' secret noise seed: the sweep plays every site, so a DP
method's two fits of the same request and rows draw the same noise (the noise is
the sites' own, never the estimator's seed: docs/security.md)."""


def fit(name: str, data: Any = None, **params: Any) -> Any:
    """Fit a small ``name`` on ``data`` (X, y, groups; default :func:`data_for`)."""
    X, y, groups = data_for(name) if data is None else data
    return make(name, **params).fit(X, y, groups, noise_seed=SITES_NOISE_SEED)


PERSONAL: Final = (
    "FedGAClassifier",
    "FedGARegressor",
    "LocalModelsClassifier",
    "LocalModelsRegressor",
)
"""Estimators whose ``predict`` needs each row's client (personal models)."""


def predict(model: Any, X: Any, groups: Any) -> np.ndarray:
    """``model.predict(X)``, with each row's client where the model is personal."""
    if type(model).__name__ in PERSONAL:
        return np.asarray(model.predict(X, client=np.asarray(groups)))
    return np.asarray(model.predict(X))
