"""A site's data file, round four (issue 37): never a silent kind, never a raw error.

Before: one stray ``?`` in a numeric CSV column made the whole column
categorical (the model silently lost its best feature); empty, Latin-1, BOM and
ragged files, and ``.npz`` files with missing, mistyped, mis-shaped, pickled or
out-of-range members gave pandas' and numpy's errors (or, for a short row, a
silent NaN; for an index column or a repeated name, a silent extra feature); a
header of a million columns was parsed for minutes. Now every rule of
docs/flower.md ("A site's data file") holds, and every refusal names the file
(and the column, line or member) and the route.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedtrees import FedForestClassifier
from fedtrees.datasets import (
    MAX_COLUMNS,
    MAX_FILE_BYTES,
    load_client_file,
    load_site_data,
    save_client_file,
)
from fedtrees.datasets import _client_csv as client_csv
from fedtrees.exceptions import DataNotFoundError, ValidationError
from fedtrees.federation import Federation

ROUTE = r"declare its text missing \(na_values; .*na-values=.*declare it categorical"


def _frame(seed: int, n: int = 120) -> pd.DataFrame:
    """Two informative numeric columns, an int, a bool and a text column, labels."""
    rng = np.random.default_rng(seed)
    x0 = rng.normal(size=n).round(3)
    return pd.DataFrame(
        {
            "x0": x0,
            "x1": rng.normal(size=n).round(3),
            "age": rng.integers(20, 80, n),
            "smoker": rng.random(n) < 0.3,
            "ward": rng.choice(["north", "south", "NA"], n),
            "label": np.where(x0 > 0, "sick", "well"),
        }
    )


def _write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _with_cell(frame: pd.DataFrame, row: int, column: str, cell: str) -> str:
    text = frame.astype({column: object})
    text.loc[row, column] = cell
    return text.to_csv(index=False)


# -- a column's kind --------------------------------------------------------------------
@pytest.mark.hostile("clear_error")
def test_a_stray_question_mark_in_a_numeric_column_is_refused_naming_its_line(
    tmp_path: Path,
) -> None:
    """Before: x0 silently became categorical (120 categories of one row each)."""
    site = _write(tmp_path / "a.csv", _with_cell(_frame(0), 6, "x0", "?"))
    with pytest.raises(
        ValidationError,
        match=r"Client data file 'a.csv', column 'x0': the cell at line 8 is not a "
        rf"number, while other cells of the column are\. .*{ROUTE}.*categorical="
        r"\"x0\".* The cell is not quoted here",
    ) as caught:
        load_client_file(site)
    assert "?" not in str(caught.value).split("na-values=")[0]  # no cell text


@pytest.mark.hostile("clear_error")
def test_a_number_among_text_is_refused_naming_its_line(tmp_path: Path) -> None:
    frame = _frame(0)
    site = _write(tmp_path / "a.csv", _with_cell(frame, 3, "ward", "7"))
    with pytest.raises(
        ValidationError,
        match=r"'a.csv', column 'ward': the cell at line 5 is a number, while other "
        r"cells of the column are not",
    ):
        load_client_file(site)


@pytest.mark.hostile("correct")
def test_a_declared_missing_token_is_missing_and_fits_as_the_frame_does(
    tmp_path: Path,
) -> None:
    """The documented route for UCI's ``?``: declared, it is NaN, and hist handles it.

    Reference: the same frames built in memory with NaN where the ``?`` are; the
    federated model fitted from the files equals the one fitted from them.
    """
    frames, paths = {}, {}
    for k, site in enumerate("abc"):
        frame = _frame(k)
        rows = [2, 40] if site == "b" else [5]
        text = frame.astype({"x0": object})
        text.loc[rows, "x0"] = "?"
        paths[site] = _write(tmp_path / f"{site}.csv", text.to_csv(index=False))
        frame["x0"] = frame["x0"].where(~frame.index.isin(rows))
        frames[site] = frame
    loaded = {s: load_client_file(p, na_values="?") for s, p in paths.items()}
    for site, (X, y) in loaded.items():
        reference = frames[site]
        assert X["x0"].dtype == np.float64
        np.testing.assert_array_equal(X["x0"], reference["x0"])  # NaN where '?'
        assert X["ward"].dtype.name == "category"  # 'NA' is a category, not missing
        assert sorted(X["ward"].cat.categories) == ["NA", "north", "south"]
        assert y.tolist() == reference["label"].tolist()
    params = {
        "n_estimators": 3,
        "max_depth": 3,
        "candidates": "hist",
        "random_state": 0,
    }
    from_files = FedForestClassifier(**params).fit_federation(
        Federation.from_clients(loaded)
    )
    in_memory = {
        s: (_as_site(f.drop(columns="label")), f["label"]) for s, f in frames.items()
    }
    from_frames = FedForestClassifier(**params).fit_federation(
        Federation.from_clients(in_memory)
    )
    X_all = pd.concat([loaded[s][0] for s in "abc"], ignore_index=True)
    X_all["smoker"] = X_all["smoker"].astype("category")  # a site's bools: categories
    np.testing.assert_array_equal(from_files.predict(X_all), from_frames.predict(X_all))
    assert from_files.score(X_all, pd.concat([loaded[s][1] for s in "abc"])) > 0.9


def _as_site(X: pd.DataFrame) -> pd.DataFrame:
    """The kinds a CSV site gives: text columns categorical."""
    return X.assign(ward=pd.Categorical(X["ward"]))


@pytest.mark.hostile("documented")
def test_a_column_of_numbers_and_text_is_read_when_declared_categorical(
    tmp_path: Path,
) -> None:
    """UCI car's ``doors`` (2, 3, 4, 5more): refused, then read as categories."""
    doors = ["2", "3", "4", "5more"] * 5
    text = "doors,label\n" + "".join(f"{d},{d == '2'}\n" for d in doors)
    site = _write(tmp_path / "car.csv", text)
    with pytest.raises(ValidationError, match=r"column 'doors': the cell at line 5"):
        load_client_file(site)
    X, _ = load_client_file(site, categorical="doors")
    assert X["doors"].tolist() == doors
    assert list(X["doors"].cat.categories) == ["2", "3", "4", "5more"]
    numeric = _write(tmp_path / "cp.csv", "cp,label\n1,a\n4,b\n")  # codes, declared
    assert load_client_file(numeric, categorical=["cp"])[0]["cp"].tolist() == ["1", "4"]


@pytest.mark.hostile("correct")
def test_a_clean_file_reads_as_pandas_reads_it(tmp_path: Path) -> None:
    """Numbers (NaN literals and empty cells included) and text, as before the rule."""
    frame = _frame(3)
    frame.loc[4, "x1"] = np.nan  # written as an empty cell
    text = frame.to_csv(index=False)
    site = _write(tmp_path / "a.csv", text)
    X, y = load_client_file(site)
    reference = pd.read_csv(io.StringIO(text))
    for column in ("x0", "x1", "age", "smoker"):
        assert X[column].dtype == reference[column].dtype, column
        np.testing.assert_array_equal(X[column], reference[column])
    assert X["ward"].tolist() == frame["ward"].tolist()  # 'NA' kept: not missing
    assert y.tolist() == frame["label"].tolist()
    literal = _write(tmp_path / "nan.csv", "x,label\n1.5,a\nnan,b\n-inf,a\n")
    assert load_client_file(literal)[0]["x"].tolist()[::2] == [1.5, -np.inf]


# -- files that are not rectangular UTF-8 CSV ----------------------------------------------
@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", r"'s.csv' is empty: a CSV site file starts with a header line"),
        (
            "age,city,label\n50,Zürich,a\n".encode("latin-1"),
            r"'s.csv' is not UTF-8 text \(line 2 holds a byte UTF-8 does not allow: "
            r"a Latin-1 .* save it as UTF-8",
        ),
        (
            b"a,b,label\n1,2,x\n3,4,5,y\n",
            r"'s.csv' is not rectangular: the record at line 3 is 4 fields long where "
            r"the header line names 3 columns",
        ),
        (
            b"a,b,label\n1,2,x\n3,4\n",  # before: a silent NaN label
            r"'s.csv' is not rectangular: the record at line 3 is 2 fields long",
        ),
        (
            b",a,label\n0,1,x\n1,2,y\n",  # before: a silent 'Unnamed: 0' feature
            r"'s.csv' has no name for column 1 in its header line \(a file written "
            r"with its index",
        ),
        (
            b"a,a,label\n1,2,x\n",  # before: a silent 'a.1'
            r"'s.csv' names column 'a' more than once in its header line",
        ),
        (
            b"a;b;label\n1;2;x\n",
            r"'s.csv' has a single column whose name holds ';'.*comma-separated",
        ),
        (
            b'a,label\n1,"x\n',
            r"'s.csv' cannot be (read|parsed) as CSV",
        ),
    ],
    ids=[
        "empty",
        "latin-1",
        "long-row",
        "short-row",
        "index-column",
        "repeated-name",
        "semicolons",
        "open-quote",
    ],
)
def test_a_malformed_csv_is_refused_naming_the_file(
    tmp_path: Path, content: bytes, message: str
) -> None:
    site = _write(tmp_path / "s.csv", content)
    with pytest.raises(ValidationError, match=rf"Client data file {message}"):
        load_client_file(site)


@pytest.mark.hostile("correct")
def test_a_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    """Before: the first column was named '\\ufeffage' (and met no other site's)."""
    text = "age,cp,label\n50,a,x\n61,b,y\n"
    plain = load_client_file(_write(tmp_path / "plain.csv", text))
    marked = load_client_file(_write(tmp_path / "bom.csv", "\ufeff" + text))
    pd.testing.assert_frame_equal(marked[0], plain[0])
    pd.testing.assert_series_equal(marked[1], plain[1])
    assert list(marked[0].columns) == ["age", "cp"]


@pytest.mark.hostile("clear_error")
def test_a_declared_column_the_file_lacks_is_refused(tmp_path: Path) -> None:
    site = _write(tmp_path / "s.csv", "a,label\n1,x\n")
    with pytest.raises(
        ValidationError,
        match=r"'s.csv' has no column 'zz', which the site declares categorical",
    ):
        load_client_file(site, categorical=["zz"])
    with pytest.raises(ValidationError, match=r"'na_values' parameter .* list of str"):
        load_client_file(site, na_values=[3])  # type: ignore[list-item]


@pytest.mark.hostile("clear_error")
def test_a_data_path_that_is_not_a_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError, match=r"missing\.csv' does not exist"):
        load_client_file(tmp_path / "missing.csv")
    os.mkfifo(tmp_path / "pipe.csv")  # before: reported as missing
    with pytest.raises(ValidationError, match=r"'pipe.csv' is not a regular file"):
        load_client_file(tmp_path / "pipe.csv")
    (tmp_path / "folder.npz").mkdir()
    with pytest.raises(ValidationError, match=r"'folder.npz' is a directory"):
        load_client_file(tmp_path / "folder.npz")
    with pytest.raises(ValidationError, match=r"'site.txt': use .npz or .csv"):
        load_client_file(_write(tmp_path / "site.txt", "a,b\n"))


# -- bounds -------------------------------------------------------------------------------
@pytest.fixture
def never_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail if a CSV reaches the full parse (the bound must refuse it before)."""

    def parse(*args: object) -> None:
        raise AssertionError("the file was parsed")

    monkeypatch.setattr(client_csv.pd, "read_csv", parse)


@pytest.mark.hostile("clear_error")
@pytest.mark.usefixtures("never_parsed")
def test_a_header_of_a_million_columns_is_refused_before_parsing(
    tmp_path: Path,
) -> None:
    header = ",".join(f"c{i}" for i in range(10**6)) + ",label\n"  # 6.9 MB
    site = _write(tmp_path / "wide.csv", header + "0," * 10**6 + "x\n")
    with pytest.raises(
        ValidationError,
        match=r"'wide.csv': its header line is longer than 1048576 bytes, the bound "
        r"on a CSV site file's header \(fedtrees.datasets.MAX_HEADER_BYTES\)",
    ):
        load_site_data(site)
    narrow = ",".join(["c"] * (MAX_COLUMNS + 1)) + "\n"  # 20 kB: under the byte bound
    with pytest.raises(
        ValidationError,
        match=rf"its header names {MAX_COLUMNS + 1} columns, more than {MAX_COLUMNS}, "
        r"the bound on a site data file's columns \(fedtrees.datasets.MAX_COLUMNS",
    ):
        load_client_file(_write(tmp_path / "narrow.csv", narrow))


@pytest.mark.hostile("clear_error")
@pytest.mark.usefixtures("never_parsed")
def test_a_file_over_the_size_bound_is_refused_before_reading(tmp_path: Path) -> None:
    site = _write(tmp_path / "big.csv", "a,label\n" + "1,x\n" * 300)
    with pytest.raises(
        ValidationError,
        match=r"'big.csv' is larger than 1000 bytes, the bound on a site's data file "
        r"\(fedtrees.datasets.MAX_FILE_BYTES; the loaders' max_bytes\)",
    ):
        load_site_data(site, max_bytes=1000)
    assert MAX_FILE_BYTES == 2**30


@pytest.mark.hostile("clear_error")
def test_an_npz_that_unpacks_beyond_the_bound_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, c0=np.zeros(10**6), __target__=np.zeros(10**6))
    assert path.stat().st_size < 50_000
    with pytest.raises(
        ValidationError, match=r"'bomb.npz' unpacks to more than 1000000 bytes"
    ):
        load_client_file(path, max_bytes=10**6)


# -- .npz members ---------------------------------------------------------------------
def _npz(path: Path, arrays: dict[str, np.ndarray], meta: object) -> Path:
    with path.open("wb") as handle:
        np.savez(handle, **arrays, __meta__=np.array(json.dumps(meta)))
    return path


def _meta(columns: list[dict[str, object]]) -> dict[str, object]:
    return {
        "format": "fedtrees.client-data",
        "version": 1,
        "columns": columns,
        "target_name": None,
    }


AGE = {"name": "age"}
CP = {"name": "cp", "categories": ["a", "b"]}
GOOD = {
    "c0": np.array([50.0, 61.0, 70.0]),
    "c1": np.array([0, 1, -1], dtype=np.int8),
    "__target__": np.array(["x", "y", "x"]),
}


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("arrays", "columns", "message"),
    [
        (
            {"c0": GOOD["c0"], "__target__": GOOD["__target__"]},
            [AGE, CP],
            r"member 'c1' \(column 'cp'\) is missing",
        ),
        (
            {**GOOD, "c1": np.array([0.0, 1.0, 0.0])},
            [AGE, CP],
            r"member 'c1' \(column 'cp'\) is a 1-D float64 array; 1-D integer "
            r"category codes expected",
        ),
        (
            {**GOOD, "c0": np.array(["50", "61", "70"])},
            [AGE, CP],
            r"member 'c0' \(column 'age'\) is a 1-D <U2 array; 1-D numbers expected",
        ),
        (
            {**GOOD, "c0": np.ones((3, 2))},
            [AGE, CP],
            r"member 'c0' \(column 'age'\) is a 2-D float64 array",
        ),
        (
            {**GOOD, "c0": np.ones(5)},
            [AGE, CP],
            r"member 'c0' \(column 'age'\) does not hold one value per row",
        ),
        (
            {**GOOD, "c1": np.array([0, 2, 1], dtype=np.int8)},
            [AGE, CP],
            r"member 'c1' \(column 'cp'\) holds category codes outside its 2 "
            r"categories",
        ),
        (
            {"c0": GOOD["c0"], "c1": GOOD["c1"]},
            [AGE, CP],
            r"has no member '__target__'",
        ),
        (GOOD, [AGE, {"name": "cp", "categories": ["a", "a"]}], r"not a list of dis"),
        (GOOD, [AGE, {"categories": ["a", "b"]}], r"metadata for column 1 has no name"),
    ],
    ids=[
        "missing-member",
        "float-codes",
        "text-numbers",
        "2-D",
        "other-length",
        "codes-out-of-range",
        "no-target",
        "repeated-categories",
        "unnamed-column",
    ],
)
def test_an_npz_whose_members_disagree_with_its_metadata_is_refused(
    tmp_path: Path,
    arrays: dict[str, np.ndarray],
    columns: list[dict[str, object]],
    message: str,
) -> None:
    site = _npz(tmp_path / "s.npz", arrays, _meta(columns))
    with pytest.raises(ValidationError, match=rf"Client data file 's.npz'.*{message}"):
        load_client_file(site)


@pytest.mark.hostile("clear_error")
def test_an_npz_with_a_pickled_member_is_refused_without_unpickling(
    tmp_path: Path,
) -> None:
    site = tmp_path / "s.npz"
    with site.open("wb") as handle:
        np.savez(
            handle,
            c0=np.array([{"a": 1}, None, 3], dtype=object),
            __target__=GOOD["__target__"],
            __meta__=np.array(json.dumps(_meta([AGE]))),
        )
    with pytest.raises(
        ValidationError,
        match=r"'s.npz': member 'c0' is a pickled object array \(client data files "
        r"hold no pickle\)",
    ):
        load_client_file(site)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not an archive", r"is not a readable .npz archive"),
        (b"PK\x03\x04truncated", r"is not a readable .npz archive"),
        (None, r"holds a single array, not a client data file's archive"),
    ],
    ids=["garbage", "truncated-zip", "npy"],
)
def test_an_npz_that_is_not_an_archive_is_refused(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    site = tmp_path / "s.npz"
    if content is None:
        with site.open("wb") as handle:
            np.save(handle, np.arange(3))
    else:
        site.write_bytes(content)
    with pytest.raises(ValidationError, match=rf"Client data file 's.npz' {message}"):
        load_client_file(site)


@pytest.mark.hostile("correct")
def test_missing_category_codes_and_written_files_still_read(tmp_path: Path) -> None:
    """Code -1 is a missing category; ``save_client_file`` output reads back exactly."""
    X, _ = load_client_file(_npz(tmp_path / "s.npz", GOOD, _meta([AGE, CP])))
    assert X["cp"].tolist()[:2] == ["a", "b"]
    assert pd.isna(X["cp"].tolist()[2])
    frame = (
        _frame(1)
        .drop(columns="label")
        .assign(ward=lambda f: f["ward"].astype("category"))
    )
    back = load_client_file(
        save_client_file(tmp_path / "w.npz", frame, _frame(1)["label"])
    )
    pd.testing.assert_frame_equal(back[0], frame)


@pytest.mark.hostile("clear_error")
def test_csv_declarations_for_an_npz_are_refused(tmp_path: Path) -> None:
    site = _npz(tmp_path / "s.npz", GOOD, _meta([AGE, CP]))
    with pytest.raises(
        ValidationError,
        match=r"'s.npz' is an .npz file, whose columns carry their kinds.*CSV files",
    ):
        load_client_file(site, na_values="?")


@pytest.mark.hostile("clear_error")
def test_the_zip_members_are_bounded_before_any_is_read(tmp_path: Path) -> None:
    path = tmp_path / "many.npz"
    with zipfile.ZipFile(path, "w") as archive:
        for k in range(30):
            archive.writestr(f"c{k}.npy", b"")
    with pytest.raises(ValidationError, match=re.escape("holds 30 members, more than")):
        load_client_file(path, max_columns=10)


# -- on Flower: the node config declares them ------------------------------------------
def _ask_site(node_config: dict[str, object]) -> object:
    """Serve a toy request at a ClientApp with ``node_config``; the payload or raise."""
    pytest.importorskip("flwr")
    from fedtrees.algorithms.toy import ToyCountsRequest
    from fedtrees.federation import Envelope, encode, receive
    from fedtrees.federation._transport import Delivery
    from fedtrees.federation.flower import make_client_app
    from fedtrees.federation.flower._wire import pack, unpack
    from tests.federation.flower.test_apps import _context, _message

    request = ToyCountsRequest(np.array(["sick", "well"]))
    data = encode(Envelope("request", 1, "a", request.kind, request))
    app = make_client_app(load_site_data)
    reply = app(_message(pack(data), "query.fedtrees"), _context(node_config))
    return receive("a", 1, request, Delivery("a", "ok", unpack(reply.content), 0.1))


@pytest.mark.hostile("clear_error")
def test_a_site_declares_its_missing_tokens_and_categories_in_its_node_config(
    tmp_path: Path,
) -> None:
    from fedtrees.exceptions import RemoteProtocolError

    frame = _frame(0)
    site = _write(tmp_path / "a.csv", _with_cell(frame, 6, "x0", "?"))
    node = {"client-id": "a", "data-path": str(site), "cache-dir": ""}
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a', round 1.*cannot load local data: ValidationError: Client "
        r"data file 'a.csv', column 'x0': the cell at line 8 is not a number",
    ):
        _ask_site(node)
    counts = _ask_site({**node, "na-values": "?", "categorical": "age"}).counts  # type: ignore[attr-defined]
    assert counts.sum() == len(frame)
    with pytest.raises(
        RemoteProtocolError,
        match=r"The node config's na-values must be a string of comma-separated, "
        r"non-empty items, or a JSON list of strings .*Got 3 instead",
    ):
        _ask_site({**node, "na-values": 3})
    with pytest.raises(
        RemoteProtocolError, match=r"has no column 'zz', which the site"
    ):
        _ask_site({**node, "na-values": "?", "categorical": '["zz"]'})


@pytest.mark.hostile("documented")
def test_the_supernode_command_passes_the_declarations_and_checks_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``fedtrees flower supernode --na-values --categorical``: node config entries."""
    pytest.importorskip("flwr")
    from typer.testing import CliRunner

    from fedtrees.cli import app

    started: list[list[str]] = []
    monkeypatch.setattr(os, "execvpe", lambda _, command, env: started.append(command))
    base = ["flower", "supernode", "--superlink", "h:1", "--insecure", "--client-id"]
    site = _write(tmp_path / "a.csv", "x,label\n1,a\n")
    options = ["--data", str(site), "--no-site-worker"]
    out = CliRunner().invoke(
        app, [*base, "a", *options, "--na-values", "?,NA", "--categorical", "x"]
    )
    assert out.exit_code == 0, out.output
    config = started[0][started[0].index("--node-config") + 1]
    assert 'na-values="?,NA"' in config
    assert 'categorical="x"' in config
    out = CliRunner().invoke(app, [*base, "a", *options, "--na-values", "?,,NA"])
    assert out.exit_code == 2
    assert "na-values" in out.output
    assert "Got '?,,NA' instead" in out.output


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("block", [7, 64, 2**24])
def test_the_vectorised_width_check_agrees_with_the_csv_module(
    monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """Reference: Python's csv reader, record by record, on the same bytes.

    Random files of 1-4 columns with blank and space-only lines, CRLF endings
    and at most one ragged line, counted in blocks of ``block`` bytes.
    """
    monkeypatch.setattr(client_csv, "_BLOCK", block)
    rng = np.random.default_rng(37)
    for _ in range(300):
        width = int(rng.integers(1, 5))
        lines = [",".join(f"h{j}" for j in range(width))]
        for _ in range(int(rng.integers(0, 30))):
            kind = rng.random()
            if kind < 0.1:
                lines.append(" " * int(rng.integers(0, 3)))
            else:
                n = width if kind < 0.95 else int(rng.integers(1, 6))
                lines.append(",".join(str(int(v)) for v in rng.integers(0, 99, n)))
        end = "\r\n" if rng.random() < 0.3 else "\n"
        data = (end.join(lines) + (end if rng.random() < 0.5 else "")).encode()
        reader = csv.reader(io.StringIO(data.decode(), newline=""))
        next(r for r in reader if not client_csv._blank(r))
        expected = client_csv._ragged_record(reader, width)
        assert client_csv._ragged_line(data, width) == expected, data


@pytest.mark.hostile("clear_error")
def test_a_ragged_record_with_quoted_commas_is_named_by_its_line(
    tmp_path: Path,
) -> None:
    text = 'name,note,label\n"a, b","x\ny",1\nc,d,2\ne,f\n'
    with pytest.raises(ValidationError, match=r"the record at line 5 is 2 fields long"):
        load_client_file(_write(tmp_path / "q.csv", text))
    X, y = load_client_file(_write(tmp_path / "ok.csv", text.replace("e,f\n", "")))
    assert X["name"].tolist() == ["a, b", "c"]
    assert y.tolist() == [1, 2]
