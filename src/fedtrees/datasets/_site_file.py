"""Reading a site's data file: its bytes, once, within named bounds.

A site's data file is read whole into memory, once per parse: the bytes that are
parsed are the bytes that are hashed (the site cache keys its entries by their
SHA-256, :mod:`fedtrees.datasets._site_cache`), so an entry always holds what
its own file's bytes say. Before the bytes are read, the file must be a regular
file (a pipe or a device never ends) of at most :data:`MAX_FILE_BYTES`; before a
CSV is parsed, its header line is read on its own, within
:data:`MAX_HEADER_BYTES`, and may name at most :data:`MAX_COLUMNS` columns. So a
file too large or too wide is refused in the time it takes to read its size and
its first megabyte, never after minutes of parsing. **Decision:** the bounds are
the site's (keyword arguments of the loaders, these constants by default), not
the server's: a run's config cannot make a site read more.
"""

from __future__ import annotations

import csv
import hashlib
import os
import stat
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import BinaryIO, Final

from fedtrees.exceptions import DataNotFoundError, ValidationError

__all__ = [
    "MAX_COLUMNS",
    "MAX_FILE_BYTES",
    "MAX_HEADER_BYTES",
    "FileBounds",
    "SiteFile",
    "check_header_line",
    "read_site_file",
]

MAX_FILE_BYTES: Final = 2**30
"""The largest site data file read (1 GiB): on disk, and unpacked for ``.npz``."""
MAX_COLUMNS: Final = 10_000
"""The most columns (features and target) a site data file may have."""
MAX_HEADER_BYTES: Final = 2**20
"""The longest header line of a CSV site file (1 MiB), read before the rest."""
SUFFIXES: Final = (".csv", ".npz")
_CHUNK: Final = 2**20


@dataclass(frozen=True)
class FileBounds:
    """How large and how wide a site data file may be (defaults: the constants).

    Examples
    --------
    >>> FileBounds().max_columns
    10000
    """

    max_bytes: int = MAX_FILE_BYTES
    max_columns: int = MAX_COLUMNS
    max_header_bytes: int = MAX_HEADER_BYTES


@dataclass(frozen=True, eq=False)
class SiteFile:
    """A site data file's name (for messages), suffix and bytes, and its bounds."""

    name: str
    suffix: str
    data: bytes
    bounds: FileBounds = FileBounds()

    @cached_property
    def sha256(self) -> str:
        """The SHA-256 of the bytes, in hex."""
        return hashlib.sha256(self.data).hexdigest()

    def refuse(self, problem: str) -> ValidationError:
        """Return an error naming this file: ``Client data file 'NAME' PROBLEM``."""
        space = "" if problem.startswith((",", ":")) else " "
        return ValidationError(f"Client data file {self.name!r}{space}{problem}")


def read_site_file(path: str | os.PathLike[str], bounds: FileBounds) -> SiteFile:
    """Read a site data file (``.csv`` or ``.npz``) within ``bounds``.

    Raises
    ------
    DataNotFoundError
        If nothing exists at ``path``.
    ValidationError
        Naming the file: another suffix, not a regular file, unreadable, larger
        than ``bounds.max_bytes``, or (CSV) a header line longer than
        ``bounds.max_header_bytes`` or naming more than ``bounds.max_columns``
        columns.
    """
    source = Path(path)
    suffix = source.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValidationError(
            f"Client data file {source.name!r}: use .npz or .csv (got "
            f"{source.suffix or 'no suffix'!r})."
        )
    try:
        descriptor = os.open(source, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError as exc:
        raise DataNotFoundError(
            f"Client data file {str(source)!r} does not exist."
        ) from exc
    except OSError as exc:
        raise _unreadable(source.name, exc) from exc
    try:
        size = _check_regular(source.name, os.fstat(descriptor), bounds)
    except ValidationError:
        os.close(descriptor)
        raise
    with os.fdopen(descriptor, "rb") as handle:
        try:
            head = handle.read(bounds.max_header_bytes + 1) if suffix == ".csv" else b""
            if head:
                check_header_line(head, source.name, bounds)
            data = head + _read_rest(handle, bounds.max_bytes - len(head), size)
        except OSError as exc:
            raise _unreadable(source.name, exc) from exc
    if len(data) > bounds.max_bytes:
        raise _too_large(source.name, bounds)
    return SiteFile(source.name, suffix, data, bounds)


def _check_regular(name: str, status: os.stat_result, bounds: FileBounds) -> int:
    """Refuse anything but a regular file within the bounds; return its size."""
    if not stat.S_ISREG(status.st_mode):
        what = "a directory" if stat.S_ISDIR(status.st_mode) else "not a regular file"
        raise ValidationError(
            f"Client data file {name!r} is {what}; a site's data-path names a "
            ".npz or .csv file."
        )
    if status.st_size > bounds.max_bytes:
        raise _too_large(name, bounds)
    return status.st_size


def _read_rest(handle: BinaryIO, limit: int, size: int) -> bytes:
    """Read to the end, or to one byte past ``limit`` (a file that grew).

    ``size`` (the file's size) is read at once; more is read in chunks only if
    the file grew since.
    """
    first = handle.read(max(min(size, limit), 0) + 1)
    if len(first) <= size:
        return first
    chunks, left = [first], limit + 1 - len(first)
    while left > 0:
        chunk = handle.read(min(left, _CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def check_header_line(head: bytes, name: str, bounds: FileBounds) -> int:
    """Return how many columns the header line in ``head`` names, within bounds.

    ``head`` is the file's first ``bounds.max_header_bytes + 1`` bytes (or all
    of it). Only the first line is decoded and split, so a header of a million
    columns is refused after one megabyte. A header whose quoted names hold line
    breaks is counted up to its first break here; the full parse checks it whole.

    Raises
    ------
    ValidationError
        A header line over ``bounds.max_header_bytes`` bytes, or naming more
        than ``bounds.max_columns`` columns, naming the bound.
    """
    end = head.find(b"\n")
    if end < 0 and len(head) > bounds.max_header_bytes:
        raise ValidationError(
            f"Client data file {name!r}: its header line is longer than "
            f"{bounds.max_header_bytes} bytes, the bound on a CSV site file's header "
            "(fedtrees.datasets.MAX_HEADER_BYTES); a CSV site file starts with one "
            "line naming its columns."
        )
    line = head[: end if end >= 0 else len(head)].decode("utf-8", errors="replace")
    try:
        fields = len(next(csv.reader([line.rstrip("\r")]), []))
    except csv.Error:  # e.g. a name over csv's field limit: the full parse says so
        return 0
    if fields > bounds.max_columns:
        raise ValidationError(
            f"Client data file {name!r}: its header names {fields} columns, more "
            f"than {bounds.max_columns}, the bound on a site data file's columns "
            "(fedtrees.datasets.MAX_COLUMNS; the loaders' max_columns)."
        )
    return fields


def _too_large(name: str, bounds: FileBounds) -> ValidationError:
    return ValidationError(
        f"Client data file {name!r} is larger than {bounds.max_bytes} bytes, the "
        "bound on a site's data file (fedtrees.datasets.MAX_FILE_BYTES; the "
        "loaders' max_bytes); split the site's data or raise the bound."
    )


def _unreadable(name: str, exc: OSError) -> ValidationError:
    return ValidationError(
        f"Client data file {name!r} cannot be read ({type(exc).__name__}: "
        f"{exc.strerror or exc}); the SuperNode's user must be able to read it."
    )
