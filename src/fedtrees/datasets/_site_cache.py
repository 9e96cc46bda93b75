"""A site's prepared data, kept on its own disk for the length of a run.

On Flower a new process answers every message (docs/flower.md), and each would
parse the site's data file again. :func:`load_site_data` parses it once per
run: the first message stores the prepared columns (numeric values, categorical
codes and their category names, the target) uncompressed in
``<cache_dir>/run-<run_id>/<key>.npz``, and later messages of the run read
them back. The key is the SHA-256 of the data file's bytes and the target
column, so an edited file never meets an old entry; an entry also records the
SHA-256 of its own arrays and metadata, so a truncated or altered one is
detected and built again. The cache is a copy, never a source: deleting it is
always safe, and a folder that cannot be written only costs the parse (with a
warning). **Decision:** run folders not used for a day are removed when a new
entry is written, so a SuperNode's disk holds the data of its recent runs only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Final
from zipfile import BadZipFile

import numpy as np
import numpy.typing as npt
import pandas as pd

from fedtrees.datasets._client_files import (
    client_arrays,
    client_frames,
    client_meta,
    load_client_file,
)
from fedtrees.exceptions import ValidationError

__all__ = ["load_site_data"]

IDLE_SECONDS: Final = 24 * 3600.0
"""A run folder unused for this long is removed when a new entry is written."""
_CHUNK: Final = 1 << 20


def load_site_data(
    path: str | Path,
    target: str | None = None,
    *,
    cache_dir: str | Path | None = None,
    run_id: int = 0,
) -> tuple[pd.DataFrame, pd.Series]:
    """Read a client data file, through the run's cache in ``cache_dir`` if given.

    Returns what :func:`load_client_file` returns, exactly (column dtypes,
    categories and target included), cached or not.

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> from fedtrees.datasets import save_client_file
    >>> folder = Path(tempfile.mkdtemp())
    >>> X = pd.DataFrame({"age": [50, 61], "cp": pd.Categorical(["a", "b"])})
    >>> site = save_client_file(folder / "site.npz", X, ["no", "yes"])
    >>> first = load_site_data(site, cache_dir=folder / "cache", run_id=7)
    >>> again = load_site_data(site, cache_dir=folder / "cache", run_id=7)
    >>> again[0].equals(X), sorted(p.name for p in (folder / "cache").iterdir())
    (True, ['run-7'])
    """
    source = Path(path)
    if cache_dir is None or not source.is_file():
        return load_client_file(source, target)  # its errors name the file
    key = _key(source, target)
    entry = Path(cache_dir) / f"run-{run_id}" / f"{key}.npz"
    cached = _read_entry(entry, key)
    if cached is not None:
        return cached
    X, y = load_client_file(source, target)
    _write_entry(entry, key, X, y)
    return X, y


def _key(source: Path, target: str | None) -> str:
    digest = hashlib.sha256()
    with source.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    digest.update(json.dumps(["target", target]).encode())
    return digest.hexdigest()


def _digest(arrays: dict[str, npt.NDArray[np.generic]], meta: dict[str, Any]) -> str:
    """SHA-256 of an entry's arrays and metadata (but its own digest)."""
    digest = hashlib.sha256()
    digest.update(
        json.dumps(
            {k: v for k, v in meta.items() if k != "digest"}, sort_keys=True
        ).encode()
    )
    for name in sorted(arrays):
        values = np.ascontiguousarray(arrays[name])
        digest.update(json.dumps([name, values.dtype.str, values.shape]).encode())
        digest.update(values.tobytes())
    return digest.hexdigest()


def _read_entry(entry: Path, key: str) -> tuple[pd.DataFrame, pd.Series] | None:
    """Return the entry's frames, or None: missing, unreadable or not this key's."""
    try:
        with np.load(entry, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
            meta = client_meta(arrays, entry.name)
    except (OSError, ValueError, EOFError, BadZipFile, ValidationError):
        return None  # missing, truncated or not an npz: built again
    arrays.pop("__meta__")
    if meta.get("key") != key or meta.get("digest") != _digest(arrays, meta):
        return None
    os.utime(entry.parent)  # the run folder is in use
    return client_frames(arrays, meta)


def _write_entry(entry: Path, key: str, X: pd.DataFrame, y: pd.Series) -> None:
    """Store the frames under ``entry`` (atomically); warn if the folder refuses."""
    arrays, meta = client_arrays(X, y)
    meta["key"] = key
    meta["digest"] = _digest(arrays, meta)
    partial: Path | None = None
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            dir=entry.parent, suffix=".tmp", delete=False
        ) as handle:
            partial = Path(handle.name)
            np.savez(handle, **arrays, __meta__=np.array(json.dumps(meta)))  # type: ignore[arg-type]
        os.replace(partial, entry)  # readers see the whole entry or none
    except OSError as exc:
        if partial is not None:
            partial.unlink(missing_ok=True)
        warnings.warn(
            f"The site data cache {str(entry.parent)!r} could not be written "
            f"({exc}); every message parses the data file.",
            stacklevel=3,
        )
        return
    _remove_idle_runs(entry.parent.parent, keep=entry.parent)


def _remove_idle_runs(cache_dir: Path, keep: Path) -> None:
    now = time.time()
    for folder in cache_dir.glob("run-*"):
        try:
            idle = now - folder.stat().st_mtime
        except OSError:
            continue
        if folder != keep and idle > IDLE_SECONDS and _holds_only_entries(folder):
            shutil.rmtree(folder, ignore_errors=True)


def _holds_only_entries(folder: Path) -> bool:
    """Whether every file in ``folder`` is a cache entry (never delete other data)."""
    return all(
        path.is_file() and path.suffix in (".npz", ".tmp") for path in folder.iterdir()
    )
