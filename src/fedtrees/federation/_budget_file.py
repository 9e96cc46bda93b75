"""A site's privacy ledger file: its charges, kept across runs and processes.

A small JSON document (format ``fedtrees.privacy-ledger``, version 1) holding,
per site, the list of its charges (ε, request, run, UTC time). One file may
serve several sites (the in-process sites of a federation); on Flower each
SuperNode names its own (node config ``privacy-ledger``).

- A charge reads the file, decides, and writes the whole document back as one
  step under an exclusive lock (``fcntl.flock`` on ``<file>.lock``, a file that
  is never replaced; POSIX systems; elsewhere a lock within this process only),
  so two processes never both spend the last of a budget.
- The document is written to a temporary file in the same folder, flushed to
  disk and moved over the old one (``os.replace``): a reader sees the old
  document or the new one, never a part.
- **Decision:** a missing file is a new, empty ledger (created at the first
  charge). A file that cannot be read, or is not such a document, is refused —
  every charge raises, naming the file — and never reset: it holds the site's
  spend, and starting again from zero would release it again.
- **Decision (one file, one path):** the ledger and its lock are opened without
  following symbolic links (``O_NOFOLLOW``), and the ledger must be a regular
  file with one link. The replace above writes a new file at the *path*: through
  a symbolic link it would replace the link with a plain file, and beside a hard
  link it would leave the other name on the old file, so the spend would split
  between two files that each allow the whole budget (a site spent 20 of a total
  of 15 that way), and the two names would lock two different lock files. Such
  a path is refused, naming what it is, before anything is charged.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from fedtrees.exceptions import SerializationError, ValidationError
from fedtrees.federation._budget import BudgetCharge, Decide

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: a lock within this process only
    fcntl = None  # type: ignore[assignment]

__all__ = ["BudgetFile"]

FORMAT: Final = "fedtrees.privacy-ledger"
VERSION: Final = 1
_FIELDS: Final = frozenset({"epsilon", "request", "run", "time"})
_PROCESS_LOCK = threading.Lock()
"""Serialises this process's threads; ``flock`` serialises processes."""
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)  # POSIX; elsewhere links are followed
_READ: Final = os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW  # a FIFO opens, then is refused
_LOCK: Final = os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NOFOLLOW
_LINK_ERRNOS: Final = frozenset({errno.ELOOP, errno.EMLINK})
"""What opening a symbolic link with ``O_NOFOLLOW`` fails with (Linux, BSDs)."""


class BudgetFile:
    """The charges of one or more sites, in the ledger file at ``path``.

    Examples
    --------
    >>> import tempfile
    >>> from fedtrees.federation import SiteBudget
    >>> path = Path(tempfile.mkdtemp()) / "ledger.json"
    >>> SiteBudget("a", 2.0, BudgetFile(path)).charge(1.5, "doc.release")
    >>> SiteBudget("a", 2.0, BudgetFile(path)).epsilon_spent  # another object
    1.5
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def charges(self, site: str) -> tuple[BudgetCharge, ...]:
        """Every charge of ``site`` so far, in order (raises if unreadable)."""
        with self._locked():
            return self._read().get(site, ())

    def append(self, site: str, decide: Decide) -> BudgetCharge:
        """Read, ``decide`` and write back as one step under the file's lock."""
        with self._locked():
            sites = self._read()
            charge = decide(sites.get(site, ()))
            sites[site] = (*sites.get(site, ()), charge)
            self._write(sites)
            return charge

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        lock = self.path.with_name(self.path.name + ".lock")
        with _PROCESS_LOCK:
            descriptor = self._open(lock, _LOCK)
            try:
                self._check_plain(lock, os.fstat(descriptor))
                if fcntl is not None:
                    fcntl.flock(descriptor, fcntl.LOCK_EX)
                yield
            finally:
                os.close(descriptor)  # releases the lock

    def _open(self, path: Path, flags: int) -> int:
        """Open ``path`` without following a symbolic link; raise naming it."""
        try:
            return os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            if exc.errno in _LINK_ERRNOS and path.is_symlink():
                raise self._not_plain(path, "a symbolic link") from exc
            if isinstance(exc, FileNotFoundError) and path == self.path:
                raise
            raise self._unusable(exc) from exc

    def _read(self) -> dict[str, tuple[BudgetCharge, ...]]:
        try:
            descriptor = self._open(self.path, _READ)
        except FileNotFoundError:
            return {}
        try:
            self._check_plain(self.path, os.fstat(descriptor))
        except ValidationError:
            os.close(descriptor)
            raise
        with os.fdopen(descriptor, "rb") as handle:
            try:
                text = handle.read()
            except OSError as exc:
                raise self._unusable(exc) from exc
        try:
            return _sites(json.loads(text))
        except (ValueError, TypeError, KeyError, OverflowError, RecursionError) as exc:
            raise SerializationError(
                f"The privacy ledger {self.path.name!r} is not a readable "
                f"{FORMAT} document ({exc}). Every DP request is refused until it "
                "is repaired; it is never reset, as it holds the site's spent "
                "epsilon."
            ) from exc

    def _write(self, sites: dict[str, tuple[BudgetCharge, ...]]) -> None:
        document = {
            "format": FORMAT,
            "version": VERSION,
            "sites": {
                site: [_entry(c) for c in charges] for site, charges in sites.items()
            },
        }
        text = json.dumps(document, indent=1, allow_nan=False).encode()
        partial: Path | None = None
        try:
            with tempfile.NamedTemporaryFile(
                dir=self.path.parent,
                prefix=f".{self.path.name}.",
                suffix=".tmp",
                delete=False,
            ) as handle:
                partial = Path(handle.name)
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(partial, self.path)  # readers see the old or the new file
        except OSError as exc:
            if partial is not None:
                partial.unlink(missing_ok=True)
            raise self._unusable(exc) from exc
        _sync_folder(self.path.parent)

    def _check_plain(self, path: Path, status: os.stat_result) -> None:
        """Refuse a ledger (or lock) that is not a regular file with one name."""
        if not stat.S_ISREG(status.st_mode):
            raise self._not_plain(path, _kind(status.st_mode))
        if status.st_nlink > 1:
            raise self._not_plain(
                path,
                f"a file with {status.st_nlink} hard links (another name reaches "
                "it, and a charge, which replaces the file at this name, would "
                "leave that name on the old spend)",
            )

    def _not_plain(self, path: Path, what: str) -> ValidationError:
        role = "lock file" if path != self.path else "ledger"
        return ValidationError(
            f"The privacy ledger {self.path.name!r} cannot be used: its {role} "
            f"{path.name!r} is {what}; a regular file at exactly one path is "
            "expected, opened without following links, so that every charge reads "
            "and replaces the one file that holds the site's spend. Every DP "
            "request is refused until it is; point the ledger path at the file "
            "itself (not a link to it)."
        )

    def _unusable(self, exc: OSError) -> ValidationError:
        return ValidationError(
            f"The privacy ledger {self.path.name!r} cannot be used "
            f"({type(exc).__name__}: {exc.strerror or exc}). Every DP request is "
            "refused until it can; give the site a ledger path in a folder it may "
            "write."
        )

    def __repr__(self) -> str:
        return f"BudgetFile({str(self.path)!r})"


def _kind(mode: int) -> str:
    """Say what a file that is not a regular file is."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file"


def _sites(document: Any) -> dict[str, tuple[BudgetCharge, ...]]:
    """Return the charges per site of a ledger document (ValueError if malformed)."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError(f"its format is not {FORMAT!r}")
    if document.get("version") != VERSION:
        raise ValueError(f"version {document.get('version')!r}; {VERSION} expected")
    sites = document.get("sites")
    if not isinstance(sites, dict):
        raise ValueError("'sites' is not a mapping of site -> charges")
    return {
        str(site): tuple(_charge(site, i, e) for i, e in enumerate(_list(site, got)))
        for site, got in sites.items()
    }


def _list(site: str, entries: object) -> list[object]:
    if not isinstance(entries, list):
        raise ValueError(f"the charges of site {site!r} are not a list")
    return entries


def _charge(site: str, i: int, entry: object) -> BudgetCharge:
    where = f"charge {i} of site {site!r}"
    if not isinstance(entry, dict) or set(entry) != _FIELDS:
        raise ValueError(f"{where} does not hold exactly {sorted(_FIELDS)}")
    epsilon, request, run, time = (entry[k] for k in sorted(_FIELDS))
    if (
        isinstance(epsilon, bool)
        or not isinstance(epsilon, int | float)
        or not (math.isfinite(epsilon) and epsilon > 0)
    ):
        raise ValueError(f"{where} has epsilon {epsilon!r}, not a positive number")
    if not (isinstance(request, str) and isinstance(time, str)):
        raise ValueError(f"{where} has a request or time that is not a string")
    if run is not None and not isinstance(run, str):
        raise ValueError(f"{where} has a run that is neither a string nor null")
    return BudgetCharge(float(epsilon), request, run, time)


def _entry(charge: BudgetCharge) -> dict[str, object]:
    return {
        "epsilon": charge.epsilon,
        "request": charge.request,
        "run": charge.run,
        "time": charge.time,
    }


def _sync_folder(folder: Path) -> None:
    """Flush the folder's entry of the replaced file (best effort; POSIX only)."""
    with contextlib.suppress(OSError, AttributeError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
