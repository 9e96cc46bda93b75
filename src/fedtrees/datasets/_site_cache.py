"""A site's prepared data, kept on its own disk for the length of a run.

On Flower a new process answers every message (docs/flower.md), and each would
parse the site's data file again. :func:`load_site_data` parses it once per
run: the first message stores the prepared columns (numeric values, categorical
codes and their category names, the target) uncompressed in
``<cache_dir>/run-<run_id>/<key>.npz``, and later messages of the run read
them back.

- **Keyed by content.** The key is the SHA-256 of the very bytes that are
  parsed (the file is read once, :mod:`fedtrees.datasets._site_file`), with
  the target column and the CSV declarations (missing tokens, categorical
  columns): an edited file, or other declarations, never meet an old entry. An
  entry also records the SHA-256 of its own arrays and metadata, so a truncated
  or damaged one is detected and built again.
- **Decision (whose entries are trusted):** an entry is used only if the site's
  own user wrote it. The cache folder and each run folder must be owned by the
  site's user and writable by no one else (mode ``0700`` when created here);
  anything else is *refused*, naming the folder and how to fix it (``chmod
  700``), because anyone who may write there could plant an entry — a digest
  they can recompute proves nothing. Within such a folder, every entry is opened
  without following links and must be a regular file owned by the site's user
  (else it is built again). A MAC was not chosen: its key would need a file only
  the site's user may write, which is the same check. POSIX systems; elsewhere
  the cache is off (every message parses the file).
- The cache is a copy, never a source: deleting it is always safe, and a folder
  that cannot be created or written only costs the parse (with a warning).
  **Decision:** run folders not used for a day are removed when a new entry is
  written, so a SuperNode's disk holds the data of its recent runs only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import stat
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pandas as pd

from fedtrees.datasets._client_csv import as_tokens
from fedtrees.datasets._client_files import (
    _UNREADABLE,
    client_arrays,
    client_frames,
    client_meta,
    parse_client_file,
)
from fedtrees.datasets._site_file import (
    MAX_COLUMNS,
    MAX_FILE_BYTES,
    FileBounds,
    SiteFile,
    read_site_file,
)
from fedtrees.exceptions import ValidationError

__all__ = ["load_site_data"]

IDLE_SECONDS: Final = 24 * 3600.0
"""A run folder unused for this long is removed when a new entry is written."""
_ENTRY_VERSION: Final = 2
_SUPPORTED: Final = os.name == "posix" and os.open in os.supports_dir_fd
_FOLDER: Final = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_OTHERS_WRITE: Final = stat.S_IWGRP | stat.S_IWOTH


def load_site_data(
    path: str | Path,
    target: str | None = None,
    *,
    cache_dir: str | Path | None = None,
    run_id: int = 0,
    na_values: str | Sequence[str] = (),
    categorical: str | Sequence[str] = (),
    max_bytes: int = MAX_FILE_BYTES,
    max_columns: int = MAX_COLUMNS,
) -> tuple[pd.DataFrame, pd.Series]:
    """Read a client data file, through the run's cache in ``cache_dir`` if given.

    Returns what :func:`~fedtrees.datasets.load_client_file` returns for the
    same arguments, exactly (column dtypes, categories and target included),
    cached or not.

    Raises
    ------
    ValidationError
        Besides the file's own errors (:func:`~fedtrees.datasets.load_client_file`):
        ``cache_dir`` (or its run folder) is not owned by the site's user, or
        others may write it.

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
    >>> oct((folder / "cache" / "run-7").stat().st_mode & 0o777)
    '0o700'
    """
    file = read_site_file(path, FileBounds(max_bytes, max_columns))
    tokens = as_tokens(na_values, "na_values")
    declared = as_tokens(categorical, "categorical")
    if cache_dir is None or not _SUPPORTED:
        return parse_client_file(file, target, tokens, declared)
    key = _key(file, target, tokens, declared)
    with _run_folder(Path(cache_dir), run_id) as folder:
        cached = None if folder is None else _read_entry(folder, key)
        if cached is not None:
            return cached
        X, y = parse_client_file(file, target, tokens, declared)
        if folder is not None:
            _write_entry(folder, key, X, y)
    if folder is not None:
        _remove_idle_runs(Path(cache_dir), keep=f"run-{run_id}")
    return X, y


def _key(
    file: SiteFile,
    target: str | None,
    na_values: tuple[str, ...],
    categorical: tuple[str, ...],
) -> str:
    digest = hashlib.sha256(file.sha256.encode())
    declarations = [_ENTRY_VERSION, target, list(na_values), list(categorical)]
    digest.update(json.dumps(declarations).encode())
    return digest.hexdigest()


# -- folders only the site's user may write -----------------------------------------
class _Folder:
    """An open, checked cache folder: entries are opened relative to ``fd``."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd


@contextlib.contextmanager
def _run_folder(cache_dir: Path, run_id: int) -> Iterator[_Folder | None]:
    """Yield the run's folder, opened and checked (None, with a warning: unusable)."""
    opened: list[int] = []
    try:
        folder = _open_run_folder(cache_dir, f"run-{run_id}", opened)
        yield folder
    finally:
        for fd in opened:
            os.close(fd)


def _open_run_folder(cache_dir: Path, name: str, opened: list[int]) -> _Folder | None:
    """Create (mode 0700) and open the cache and run folders, checking both."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        opened.append(os.open(cache_dir, _FOLDER))
        _check_folder(cache_dir, opened[0])
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=opened[0])
        opened.append(os.open(name, _FOLDER | _NOFOLLOW, dir_fd=opened[0]))
    except OSError as exc:
        _warn_unwritable(cache_dir, exc)
        return None
    _check_folder(cache_dir / name, opened[1])
    return _Folder(cache_dir / name, opened[1])


def _check_folder(path: Path, fd: int) -> None:
    """Refuse a folder that is not the site user's alone to write."""
    status = os.fstat(fd)
    if not stat.S_ISDIR(status.st_mode):  # pragma: no cover - O_DIRECTORY refuses
        raise _unsafe(path, "is not a folder")
    if status.st_uid != os.geteuid():
        raise _unsafe(
            path,
            f"is owned by user id {status.st_uid}, not by the site's user (id "
            f"{os.geteuid()})",
            f"chown {os.geteuid()} '{path}' && chmod 700 '{path}'",
        )
    if status.st_mode & _OTHERS_WRITE:
        raise _unsafe(
            path,
            f"may be written by its group or by others (mode "
            f"{oct(stat.S_IMODE(status.st_mode))})",
        )


def _unsafe(path: Path, problem: str, fix: str = "") -> ValidationError:
    command = fix or f"chmod 700 '{path}'"
    return ValidationError(
        f"The site data cache folder {str(path)!r} {problem}. A cache entry is "
        "used as the site's own parse of its data file, so only the site's user "
        f"may write its folder: run {command}, or choose another folder (node "
        'config cache-dir, fedtrees flower supernode --cache-dir; "" turns the '
        "cache off)."
    )


def _warn_unwritable(folder: Path, exc: OSError) -> None:
    warnings.warn(
        f"The site data cache {str(folder)!r} could not be written ({exc}); every "
        "message parses the data file.",
        stacklevel=4,
    )


# -- entries --------------------------------------------------------------------------
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


def _read_entry(folder: _Folder, key: str) -> tuple[pd.DataFrame, pd.Series] | None:
    """Return the entry's frames; None if missing, foreign, damaged or another key's."""
    entry = f"{key}.npz"
    try:
        fd = os.open(entry, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=folder.fd)
    except OSError:
        return None  # missing, or a link: built again
    with os.fdopen(fd, "rb") as handle:
        status = os.fstat(fd)
        if not _own_file(status):
            return None
        try:
            with np.load(handle, allow_pickle=False) as archive:
                arrays = {name: archive[name] for name in archive.files}
                meta = client_meta(arrays, entry)
        except (*_UNREADABLE, ValidationError):
            return None  # truncated or not an npz: built again
    arrays.pop("__meta__")
    if meta.get("key") != key or meta.get("digest") != _digest(arrays, meta):
        return None
    with contextlib.suppress(OSError, NotImplementedError):
        os.utime(folder.fd)  # the run folder is in use
    try:
        return client_frames(arrays, meta, entry)
    except (ValidationError, KeyError, TypeError):
        return None


def _own_file(status: os.stat_result) -> bool:
    """Say if it is a regular file of the site's user that no one else may write."""
    return (
        stat.S_ISREG(status.st_mode)
        and status.st_uid == os.geteuid()
        and not status.st_mode & _OTHERS_WRITE
    )


def _write_entry(folder: _Folder, key: str, X: pd.DataFrame, y: pd.Series) -> None:
    """Store the frames as the entry ``key`` (atomically); warn if it fails."""
    arrays, meta = client_arrays(X, y)
    meta["key"] = key
    meta["digest"] = _digest(arrays, meta)
    partial = f".{key}.{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
    try:
        fd = os.open(partial, flags, 0o600, dir_fd=folder.fd)
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **arrays, __meta__=np.array(json.dumps(meta)))  # type: ignore[arg-type]
        os.replace(partial, f"{key}.npz", src_dir_fd=folder.fd, dst_dir_fd=folder.fd)
    except OSError as exc:  # readers see the whole entry or none
        with contextlib.suppress(OSError):
            os.unlink(partial, dir_fd=folder.fd)
        _warn_unwritable(folder.path, exc)


def _remove_idle_runs(cache_dir: Path, keep: str) -> None:
    now = time.time()
    for folder in cache_dir.glob("run-*"):
        try:
            status = folder.lstat()
        except OSError:
            continue
        idle = now - status.st_mtime
        if (
            folder.name != keep
            and stat.S_ISDIR(status.st_mode)
            and idle > IDLE_SECONDS
            and _holds_only_entries(folder)
        ):
            shutil.rmtree(folder, ignore_errors=True)


def _holds_only_entries(folder: Path) -> bool:
    """Whether every file in ``folder`` is a cache entry (never delete other data)."""
    return all(
        path.is_file() and path.suffix in (".npz", ".tmp") for path in folder.iterdir()
    )
