"""Reading a CSV site file: its header, its records, and each column's kind.

The rules (docs/flower.md, "A site's data file"):

- The file is UTF-8 text, comma-separated (a byte-order mark is dropped). Its
  first line names every column, each once, none empty; every later record has
  as many fields as the header (blank lines are skipped).
- A cell is *missing* when it is empty or is one of the site's declared missing
  tokens (``na_values``; the node config's ``na-values``). **Decision:** nothing
  else is missing — not ``NA``, ``null`` or ``?`` — unless declared: ``NA`` may
  be a category, and a token the site did not declare must not vanish silently.
- **Decision (a column's kind):** a column the site declares categorical
  (``categorical``; the node config's ``categorical``) is categorical, its cells
  read as text. Any other column is numeric when every cell that is not missing
  is a number (as :func:`pandas.to_numeric` reads one: ``3``, ``-2.5e3``,
  ``nan``, ``inf``), and categorical when none is. A column holding both is
  *refused*, naming the file, the column and the line of a cell of the smaller
  kind: one stray ``?`` in a numeric column (UCI's missing mark) would otherwise
  make the whole column categorical and the model silently worse. Its route is
  a declaration: the token missing, or the column categorical. The target
  column follows the same rule (text labels stay text).

A site's error travels to the server, so these errors name files, columns and
lines, never a cell's text (docs/security.md, "Errors that travel").
"""

from __future__ import annotations

import csv
import io
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt
import pandas as pd

from fedtrees.datasets._site_file import SiteFile
from fedtrees.exceptions import ValidationError

if TYPE_CHECKING:
    from _csv import Reader

__all__ = ["as_tokens", "parse_csv"]

_NAN_TEXT: Final = frozenset({"nan", "+nan", "-nan"})
"""Cells :func:`pandas.to_numeric` reads as NaN: numbers, not missing marks."""
_OTHER_SEPARATORS: Final = (";", "\t", "|")
_BLOCK: Final = 16 * 2**20
"""Bytes of whole lines whose commas are counted at once."""
_NEWLINE: Final = ord("\n")
_COMMA: Final = ord(",")


def as_tokens(value: str | Sequence[str], name: str) -> tuple[str, ...]:
    """Return the declared ``value`` as a tuple of strings (one string is one).

    Examples
    --------
    >>> as_tokens("?", "na_values"), as_tokens(["?", "NA"], "na_values")
    (('?',), ('?', 'NA'))
    """
    tokens = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(t, str) for t in tokens):
        raise ValidationError(
            f"The {name!r} parameter of load_client_file must be a string or a "
            f"list of strings. Got {value!r} instead."
        )
    return tokens


def parse_csv(
    file: SiteFile,
    target: str | None,
    na_values: tuple[str, ...] = (),
    categorical: tuple[str, ...] = (),
) -> tuple[pd.DataFrame, pd.Series]:
    """Return ``(X, y)`` of a CSV site file, by the rules of the module docstring.

    ``target`` names the label column (default: the last one).

    Raises
    ------
    ValidationError
        Naming the file (and the column or line): not UTF-8, empty, a bad
        header, a record of another width, an unknown declared column, or a
        column with both numbers and text.
    """
    names = _check_records(file)
    label = target if target is not None else names[-1]
    _check_declared(file, names, label, categorical)
    frame = _read_frame(file, na_values, categorical)
    if [str(c) for c in frame.columns] != names:  # pragma: no cover - a safeguard
        raise file.refuse("cannot be parsed as CSV: its header reads two ways.")
    columns = {
        column: _typed(file, frame[column], column, column in categorical)
        for column in names
    }
    y = columns.pop(label)
    if isinstance(y.dtype, pd.CategoricalDtype):  # declared: labels as text
        y = frame[label]
    return pd.DataFrame(columns), y.rename(label)


# -- the records ----------------------------------------------------------------------
def _records(file: SiteFile) -> tuple[Iterator[list[str]], Reader]:
    """Return the file's non-blank records, and the reader (its ``line_num``)."""
    reader = _reader(file)
    return (r for r in reader if not _blank(r)), reader


def _reader(file: SiteFile) -> Reader:
    stream = io.TextIOWrapper(io.BytesIO(file.data), encoding="utf-8-sig", newline="")
    return csv.reader(stream)


def _blank(record: list[str]) -> bool:
    """Say if the record is a blank line, or one of spaces only (pandas skips both)."""
    return not record or (len(record) == 1 and not record[0].strip())


def _check_records(file: SiteFile) -> list[str]:
    """Check the header and every record's width; return the header's names."""
    reader = _reader(file)
    try:
        names = next((r for r in reader if not _blank(r)), None)
        if names is None:
            raise file.refuse(
                "is empty: a CSV site file starts with a header line naming its "
                "columns."
            )
        _check_header(file, names)
        if b'"' in file.data:  # quoted fields may hold commas and line breaks
            ragged = _ragged_record(reader, len(names))
        else:  # one record per line: count the commas of every line at once
            file.data.decode("utf-8")  # what pandas would stumble on later
            ragged = _ragged_line(file.data, len(names))
    except UnicodeDecodeError:
        raise file.refuse(
            f"is not UTF-8 text (line {_bad_byte_line(file.data)} holds a byte "
            "UTF-8 does not allow: a Latin-1 or Windows-1252 file?); save it as "
            "UTF-8, e.g. iconv -f latin1 -t utf-8."
        ) from None
    except csv.Error as exc:
        raise file.refuse(
            f"cannot be read as CSV at line {reader.line_num}: {exc}."
        ) from exc
    if ragged is not None:
        line, fields = ragged
        raise file.refuse(
            f"is not rectangular: the record at line {line} is {fields} fields "
            f"long where the header line names {len(names)} columns; every record "
            "needs one field per column (an empty field is a missing cell)."
        )
    return names


def _ragged_record(reader: Reader, width: int) -> tuple[int, int] | None:
    """Return (line, fields) of the first record after the header of another width."""
    for record in reader:  # the hot loop: the width first, blanks rarely
        if len(record) != width and not _blank(record):
            return int(reader.line_num), len(record)
    return None


def _ragged_line(data: bytes, width: int) -> tuple[int, int] | None:
    """As :func:`_ragged_record` for a file without quotes (a record is a line).

    Vectorised over blocks of whole lines (numpy), since a Python loop over a
    million records costs more than pandas' whole parse. Blank lines, and the
    header line (of ``width`` fields by definition), never count.
    """
    start, lines = 0, 0
    while start < len(data):
        end = data.find(b"\n", min(start + _BLOCK, len(data) - 1))
        end = len(data) if end < 0 else end + 1
        block = np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start)
        newlines = np.flatnonzero(block == _NEWLINE)
        commas = np.flatnonzero(block == _COMMA)
        if not _rectangular(block, newlines, commas, width - 1):
            found = _first_ragged(block, newlines, commas, width)
            if found is not None:
                return lines + found[0] + 1, found[1]
        lines += len(newlines)
        start = end
    return None


def _rectangular(
    block: npt.NDArray[np.uint8],
    newlines: npt.NDArray[np.intp],
    commas: npt.NDArray[np.intp],
    per_line: int,
) -> bool:
    """Whether every line holds ``per_line`` commas (False: look line by line).

    The commas of a rectangular block, counted in order, fall ``per_line`` to a
    line: the last of each line comes before its newline and the next one after
    it. Blank lines break the pattern, and are then left to the exact count.
    """
    tail = len(block) - (int(newlines[-1]) + 1 if len(newlines) else 0)
    n_lines = len(newlines) + (1 if tail else 0)
    if len(commas) != per_line * n_lines:
        return False
    if per_line == 0:
        return True
    last = commas[per_line - 1 :: per_line][: len(newlines)]
    first = commas[per_line::per_line][: len(newlines)]
    return bool(
        np.all(last < newlines[: len(last)]) and np.all(first > newlines[: len(first)])
    )


def _first_ragged(
    block: npt.NDArray[np.uint8],
    newlines: npt.NDArray[np.intp],
    commas: npt.NDArray[np.intp],
    width: int,
) -> tuple[int, int] | None:
    """Return (line in the block, fields) of its first non-blank line of other width."""
    fields = np.bincount(np.searchsorted(newlines, commas), minlength=len(newlines) + 1)
    bounds = np.concatenate(([0], newlines + 1, [len(block)]))
    for k in np.flatnonzero(fields + 1 != width):
        if block[bounds[k] : bounds[k + 1]].tobytes().strip():
            return int(k), int(fields[k]) + 1
    return None


def _check_header(file: SiteFile, names: list[str]) -> None:
    if len(names) > file.bounds.max_columns:
        raise file.refuse(
            f"has {len(names)} columns, more than {file.bounds.max_columns}, the "
            "bound on a site data file's columns (fedtrees.datasets.MAX_COLUMNS)."
        )
    if len(names) == 1 and any(s in names[0] for s in _OTHER_SEPARATORS):
        raise file.refuse(
            "has a single column whose name holds ';', a tab or '|': fedtrees "
            "reads comma-separated files; write it with commas."
        )
    for position, name in enumerate(names, 1):
        if not name.strip():
            raise file.refuse(
                f"has no name for column {position} in its header line (a file "
                "written with its index? write it with index=False, or name it)."
            )
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise file.refuse(
                f"names column {name!r} more than once in its header line; give "
                "every column its own name."
            )
        seen.add(name)


def _bad_byte_line(data: bytes) -> int:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return data.count(b"\n", 0, exc.start) + 1
    return 1  # pragma: no cover - called only on a decode error


def _line_of(file: SiteFile, row: int) -> int:
    """Return the line of the file where data row ``row`` (0-based) ends."""
    records, reader = _records(file)
    next(records)  # the header
    for k, _ in enumerate(records):
        if k == row:
            break
    return int(reader.line_num)


# -- declarations and the frame -------------------------------------------------------
def _check_declared(
    file: SiteFile, names: list[str], label: str, categorical: tuple[str, ...]
) -> None:
    if label not in names:
        raise file.refuse(f"has no column {label!r}.")
    unknown = [c for c in categorical if c not in names]
    if unknown:
        raise file.refuse(
            f"has no column {unknown[0]!r}, which the site declares categorical "
            "(categorical: the names of the file's header line)."
        )


def _read_frame(
    file: SiteFile, na_values: tuple[str, ...], categorical: tuple[str, ...]
) -> pd.DataFrame:
    try:
        with warnings.catch_warnings():
            # A column typed differently in two chunks comes back as objects,
            # which _typed judges cell by cell: pandas' warning says nothing more.
            warnings.simplefilter("ignore", pd.errors.DtypeWarning)
            return pd.read_csv(
                io.BytesIO(file.data),
                encoding="utf-8-sig",
                keep_default_na=False,
                na_values=["", *na_values],
                dtype=dict.fromkeys(categorical, str),
                index_col=False,
            )
    except (ValueError, pd.errors.ParserError) as exc:
        raise file.refuse(
            f"cannot be parsed as CSV ({type(exc).__name__}: {exc})."
        ) from exc


def _typed(file: SiteFile, series: pd.Series, column: str, declared: bool) -> pd.Series:
    """Return the column as numbers or categories (the module docstring's rule)."""
    if declared:
        return pd.Series(pd.Categorical(series), name=column)
    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return series
    distinct = pd.Series(series.unique(), dtype=object).dropna()
    numbers = _numbers(distinct)  # judged once per distinct text
    if not numbers.any():
        return pd.Series(pd.Categorical(series), name=column)
    if numbers.all():
        return pd.to_numeric(series, errors="coerce")
    number = series.isin(set(distinct[numbers])).to_numpy(dtype=bool)
    _refuse_mixed(file, column, number, series.notna().to_numpy() & ~number)
    raise AssertionError  # pragma: no cover - _refuse_mixed always raises


def _numbers(cells: pd.Series) -> npt.NDArray[np.bool_]:
    """Say which cells are numbers (NaN literals included)."""
    numbers = pd.to_numeric(cells, errors="coerce").notna().to_numpy(dtype=bool)
    nan_text = cells.map(
        lambda cell: isinstance(cell, str) and cell.strip().lower() in _NAN_TEXT
    ).to_numpy(dtype=bool)
    found: npt.NDArray[np.bool_] = numbers | nan_text
    return found


def _refuse_mixed(
    file: SiteFile,
    column: str,
    number: npt.NDArray[np.bool_],
    text: npt.NDArray[np.bool_],
) -> None:
    """Raise naming the line of the first cell of the column's smaller kind."""
    numeric = int(number.sum()) >= int(text.sum())
    row = int(np.argmax(text if numeric else number))
    cell, others = ("not a number", "are") if numeric else ("a number", "are not")
    raise file.refuse(
        f", column {column!r}: the cell at line {_line_of(file, row)} is {cell}, "
        f"while other cells of the column {others}. A column is numeric when every "
        "cell that is not missing is a number, and categorical when none is. If "
        "that cell marks a missing value, declare its text missing (na_values; a "
        'SuperNode\'s node config na-values="TEXT"); if the column holds '
        f"categories, declare it categorical (categorical; node config "
        f'categorical="{column}"). The cell is not quoted here (a site\'s errors '
        "travel to the server): open the file at that line."
    )
