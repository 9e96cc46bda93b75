"""``load(name, **options)``: one entry point for every dataset."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Final

from fedtrees._validation import invalid
from fedtrees.datasets._dataset import Dataset
from fedtrees.datasets._heart import load_heart_disease
from fedtrees.datasets._hugadb import load_hugadb
from fedtrees.datasets._tabular import (
    load_adult,
    load_car,
    load_credit_default,
    load_hotel_ac_iot,
    load_nursery,
)

__all__ = ["BUNDLED", "available", "load"]

_LOADERS: Final[dict[str, Callable[..., Dataset]]] = {
    "heart_disease": load_heart_disease,
    "adult": load_adult,
    "nursery": load_nursery,
    "car": load_car,
    "credit_default": load_credit_default,
    "hotel_ac_iot": load_hotel_ac_iot,
    "hugadb": load_hugadb,
}
BUNDLED: Final = (
    "heart_disease",
    "adult",
    "nursery",
    "car",
    "credit_default",
    "hotel_ac_iot",
)


def available() -> list[str]:
    """Names accepted by :func:`load` (all bundled except ``"hugadb"``)."""
    return list(_LOADERS)


def load(name: str, **options: Any) -> Dataset:
    """Load a dataset by name.

    Parameters
    ----------
    name : str
        One of :func:`available`.
    **options
        Loader options: ``flamby=True`` (heart_disease), ``dropna=True`` (adult),
        ``path=FOLDER`` and ``activities=...`` (hugadb).

    Raises
    ------
    ValidationError
        For an unknown name or option.

    Examples
    --------
    >>> load("car").n_samples
    1728
    >>> load("cars")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.ValidationError: The 'name' parameter of load must be one of ...
    """
    loader = _LOADERS.get(name) if isinstance(name, str) else None
    if loader is None:
        choices = ", ".join(repr(n) for n in _LOADERS)
        raise invalid("name", "load", f"one of {choices}", name)
    signature = inspect.signature(loader)
    try:
        signature.bind(**options)
    except TypeError as exc:
        accepted = ", ".join(signature.parameters) or "none"
        raise invalid(
            "options",
            f"load({name!r})",
            f"among ({accepted}) with required ones given",
            sorted(options),
        ) from exc
    return loader(**options)
