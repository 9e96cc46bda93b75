"""Round four, the site's side (issue 37): its budget ledger, data files, cache, worker.

- ``site4/ledger-*``: a ledger path that is a symbolic link, a hard link or a
  pipe; the spend over two paths to one ledger (the reported 20 of 15).
- ``site4/csv-*``, ``site4/npz-*``: a stray ``?`` in a numeric column (and its
  declared route), empty, Latin-1, BOM, ragged, unnamed and repeated-name CSV
  files, a header of a million columns; ``.npz`` members missing, mistyped,
  mis-shaped, pickled or out of range.
- ``site4/cache-*``: a poisoned entry in a folder others may write, and a
  world-writable folder.
- ``site4/worker-*``: malformed frames and a stalled connection on the site
  worker's socket, each followed by a good request.

The cases use only what main's code also offers (plus ``na_values`` for the
declared route), so the sweep says what main did with each.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _sweep_core import (
    HANG,
    WRONG,
    Verdict,
    accepted,
    accuracy,
    case,
    check,
    documented,
)

F = "site4"


def _folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="sweep-site4-"))


# -- the site's privacy ledger ---------------------------------------------------------
def _budget(path: Path) -> Any:
    from fedtrees.federation import BudgetFile, SiteBudget

    return SiteBudget("a", 15.0, BudgetFile(path))


def _spent(path: Path) -> float:
    document = json.loads(path.read_text())
    return sum(c["epsilon"] for c in document["sites"].get("a", []))


@case("ledger-symlink", F, ("ledger", "symbolic link"))
def ledger_symlink() -> Verdict:
    folder = _folder()
    _budget(folder / "real.json").charge(5.0, "first")
    (folder / "link.json").symlink_to(folder / "real.json")
    _budget(folder / "link.json").charge(5.0, "through the link")
    still = (folder / "link.json").is_symlink()
    return accepted(
        f"charged through a link (the link is {'kept' if still else 'gone'})"
    )


@case("ledger-two-paths-20-of-15", F, ("ledger",))
def ledger_two_paths() -> Verdict:
    """Charges of 5 alternately through the ledger and a link to it, total 15."""
    from fedtrees.exceptions import FedTreesError

    folder = _folder()
    real, link = folder / "real.json", folder / "link.json"
    _budget(real).charge(5.0, "first")
    link.symlink_to(real)
    for k in range(6):
        with contextlib.suppress(FedTreesError):
            _budget(link if k % 2 == 0 else real).charge(5.0, f"charge {k}")
    spent = _spent(real) + (0.0 if link.is_symlink() else _spent(link))
    return check(
        spent <= 15.0, f"spent {spent:g} of 15", f"spent {spent:g} of a total of 15"
    )


@case("ledger-hard-link", F, ("ledger", "hard link"))
def ledger_hard_link() -> Verdict:
    folder = _folder()
    _budget(folder / "real.json").charge(5.0, "first")
    os.link(folder / "real.json", folder / "copy.json")
    _budget(folder / "copy.json").charge(5.0, "through the other name")
    return accepted("charged through a second hard link (the spend splits)")


@case("ledger-named-pipe", F, ("ledger", "pipe"))
def ledger_named_pipe() -> Verdict:
    folder = _folder()
    os.mkfifo(folder / "ledger.json")
    _budget(folder / "ledger.json").charge(1.0, "x")
    return accepted("a named pipe as the ledger")


# -- the site's data files -------------------------------------------------------------
def _site_frame(seed: int, n: int = 120) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x0 = rng.normal(size=n).round(3)
    return pd.DataFrame(
        {
            "x0": x0,
            "x1": rng.normal(size=n).round(3),
            "ward": rng.choice(["north", "south"], n),
            "label": np.where(x0 > 0, "sick", "well"),
        }
    )


def _write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _stray_sites(folder: Path) -> tuple[dict[str, Path], dict[str, pd.DataFrame]]:
    """Three CSV sites, each with one '?' in x0, their best feature (row 6)."""
    paths, frames = {}, {}
    for k, site in enumerate("abc"):
        frame = _site_frame(k)
        text = frame.astype({"x0": object})
        text.loc[6, "x0"] = "?"
        paths[site] = _write(folder, f"{site}.csv", text.to_csv(index=False))
        frames[site] = frame
    return paths, frames


def _forest_accuracy(sites: dict[str, tuple[pd.DataFrame, Any]]) -> float:
    from fedtrees import FedForestClassifier
    from fedtrees.federation import Federation

    model = FedForestClassifier(
        n_estimators=5, max_depth=3, candidates="hist", random_state=0
    ).fit_federation(Federation.from_clients(sites))
    X = pd.concat([x for x, _ in sites.values()], ignore_index=True)
    y = pd.concat([pd.Series(np.asarray(t)) for _, t in sites.values()])
    return accuracy(model, X, y.to_numpy())


@case("csv-stray-question-mark", F, (r"a\.csv", "x0", "line 8"))
def csv_stray_question_mark() -> Verdict:
    from fedtrees.datasets import load_client_file

    paths, frames = _stray_sites(_folder())
    sites = {s: load_client_file(p) for s, p in paths.items()}
    kind = sites["a"][0]["x0"].dtype.name
    for site in sites.values():
        site[0]["ward"] = site[0]["ward"].astype("category")
    clean = {
        s: (f.drop(columns="label").astype({"ward": "category"}), f["label"])
        for s, f in frames.items()
    }
    got, reference = _forest_accuracy(sites), _forest_accuracy(clean)
    return Verdict(
        WRONG,
        f"x0 read as {kind}, no error: accuracy {got:.2f} (clean {reference:.2f})",
    )


@case("csv-question-mark-declared", F, ("x0",))
def csv_question_mark_declared() -> Verdict:
    """The documented route: na_values='?' makes it NaN, and hist handles NaN."""
    from fedtrees.datasets import load_client_file

    paths, frames = _stray_sites(_folder())
    sites = {s: load_client_file(p, na_values="?") for s, p in paths.items()}
    if sites["b"][0]["x0"].dtype != np.float64:
        return accepted(f"x0 read as {sites['b'][0]['x0'].dtype}")
    for site in sites.values():
        site[0]["ward"] = site[0]["ward"].astype("category")
    clean = {
        s: (f.drop(columns="label").astype({"ward": "category"}), f["label"])
        for s, f in frames.items()
    }
    got, reference = _forest_accuracy(sites), _forest_accuracy(clean)
    return (
        documented(
            f"docs/flower.md: declared missing; accuracy {got:.2f} vs {reference:.2f}"
        )
        if got >= reference - 0.02
        else Verdict(WRONG, f"accuracy {got:.2f} vs clean {reference:.2f}")
    )


def _load_csv(content: bytes) -> Any:
    from fedtrees.datasets import load_client_file

    return load_client_file(_write(_folder(), "s.csv", content))


@case("csv-empty", F, (r"s\.csv", "empty"))
def csv_empty() -> Verdict:
    _load_csv(b"")
    return accepted("an empty CSV file")


@case("csv-latin-1", F, (r"s\.csv", "UTF-8", "line 2"))
def csv_latin_1() -> Verdict:
    _load_csv("age,city,label\n50,Zürich,a\n".encode("latin-1"))
    return accepted("a Latin-1 file")


@case("csv-bom", F, ())
def csv_bom() -> Verdict:
    text = "age,cp,label\n50,a,x\n61,b,y\n"
    plain, marked = _load_csv(text.encode()), _load_csv(b"\xef\xbb\xbf" + text.encode())
    return check(
        list(marked[0].columns) == list(plain[0].columns)
        and marked[0].equals(plain[0]),
        "the byte-order mark is dropped",
        f"columns {list(marked[0].columns)}",
    )


@case("csv-ragged-long-row", F, (r"s\.csv", "line 3"))
def csv_ragged_long() -> Verdict:
    X, _ = _load_csv(b"a,b,label\n1,2,x\n3,4,5,y\n")
    return accepted(f"a long row; columns {list(X.columns)}")


@case("csv-ragged-short-row", F, (r"s\.csv", "line 3"))
def csv_ragged_short() -> Verdict:
    _, y = _load_csv(b"a,b,label\n1,2,x\n3,4\n")
    return accepted(f"a short row; labels {y.tolist()}")


@case("csv-index-column", F, (r"s\.csv", "column 1"))
def csv_index_column() -> Verdict:
    X, _ = _load_csv(b",a,label\n0,1,x\n1,2,y\n")
    return accepted(f"an unnamed column; features {list(X.columns)}")


@case("csv-repeated-name", F, (r"s\.csv", "'a'"))
def csv_repeated_name() -> Verdict:
    X, _ = _load_csv(b"a,a,label\n1,2,x\n")
    return accepted(f"a repeated name; features {list(X.columns)}")


@case("csv-million-columns", F, (r"s\.csv", "MAX_HEADER_BYTES|MAX_COLUMNS"))
def csv_million_columns() -> Verdict:
    header = ",".join(f"c{i}" for i in range(10**6)) + ",label\n"
    X, _ = _load_csv(header.encode() + b"0," * 10**6 + b"x\n")
    return accepted(f"a header of {X.shape[1]} feature columns was parsed")


def _npz(arrays: dict[str, np.ndarray], columns: list[dict[str, Any]]) -> Any:
    from fedtrees.datasets import load_client_file

    path = _folder() / "s.npz"
    meta = {
        "format": "fedtrees.client-data",
        "version": 1,
        "columns": columns,
        "target_name": None,
    }
    with path.open("wb") as handle:
        np.savez(handle, **arrays, __meta__=np.array(json.dumps(meta)))
    return load_client_file(path)


AGE, CP = {"name": "age"}, {"name": "cp", "categories": ["a", "b"]}
TARGET = np.array(["x", "y", "x"])


def _npz_case(name: str, names: tuple[str, ...], arrays: dict[str, np.ndarray]) -> None:
    def run() -> Verdict:
        _npz({"__target__": TARGET, **arrays}, [AGE, CP])
        return accepted(f"an .npz with {name}")

    case(f"npz-{name}", F, (r"s\.npz", *names))(run)


_npz_case("missing-member", ("c1", "cp"), {"c0": np.ones(3)})
_npz_case(
    "float-codes", ("c1", "cp"), {"c0": np.ones(3), "c1": np.array([0.0, 1.0, 0.0])}
)
_npz_case("2-D-column", ("c0", "age"), {"c0": np.ones((3, 2)), "c1": np.zeros(3, int)})
_npz_case(
    "codes-out-of-range",
    ("c1", "cp", "categor"),
    {"c0": np.ones(3), "c1": np.array([0, 5, 1])},
)


@case("npz-pickled-member", F, (r"s\.npz", "c0", "pickle"))
def npz_pickled() -> Verdict:
    from fedtrees.datasets import load_client_file

    path = _folder() / "s.npz"
    with path.open("wb") as handle:
        np.savez(
            handle,
            c0=np.array([{"a": 1}, None, 3], dtype=object),
            __target__=TARGET,
            __meta__=np.array(json.dumps({"format": "fedtrees.client-data",
                                          "columns": [AGE]})),
        )  # fmt: skip
    load_client_file(path)
    return accepted("a pickled member")


@case("npz-not-an-archive", F, (r"s\.npz", "archive"))
def npz_garbage() -> Verdict:
    from fedtrees.datasets import load_client_file

    load_client_file(_write(_folder(), "s.npz", b"PK\x03\x04not really"))
    return accepted("garbage as an .npz")


# -- the site's cache ---------------------------------------------------------------
def _cached_site(folder: Path) -> tuple[Path, Path]:
    site = _write(folder, "site.csv", "age,label\n40,a\n50,b\n60,a\n")
    return site, folder / "cache"


@case("cache-poisoned-entry", F, ("cache", "chmod 700"))
def cache_poisoned() -> Verdict:
    from fedtrees.datasets import _site_cache, load_site_data

    site, cache = _cached_site(_folder())
    load_site_data(site, cache_dir=cache, run_id=1)
    (entry,) = cache.glob("run-1/*.npz")
    os.chmod(cache, 0o777)
    with np.load(entry) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(str(arrays.pop("__meta__")))
    arrays["c0"] = np.full_like(arrays["c0"], 999)
    meta["digest"] = _site_cache._digest(arrays, meta)
    with entry.open("wb") as handle:
        np.savez(handle, **arrays, __meta__=np.array(json.dumps(meta)))
    X, _ = load_site_data(site, cache_dir=cache, run_id=1)
    return check(
        X["age"].tolist() == [40, 50, 60],
        "the planted entry was not used",
        f"the planted entry was used: age {X['age'].tolist()}",
    )


@case("cache-world-writable-folder", F, ("cache", "chmod 700"))
def cache_world_writable() -> Verdict:
    from fedtrees.datasets import load_site_data

    site, cache = _cached_site(_folder())
    cache.mkdir()
    os.chmod(cache, 0o1777)
    load_site_data(site, cache_dir=cache, run_id=1)
    return accepted("a world-writable cache folder")


# -- the site worker ----------------------------------------------------------------
def _worker() -> tuple[str, int]:
    """A site worker on a thread (default bounds); its socket and lifeline."""
    from fedtrees.federation.flower._wire import SiteAnswer, SiteMessage
    from fedtrees.federation.flower._worker import serve_forever

    def serve(message: SiteMessage) -> SiteAnswer:
        return SiteAnswer(message.request[::-1])

    path = str(Path(tempfile.mkdtemp(prefix="s4-")) / "site.sock")
    parent_r, parent_w = os.pipe()
    ready_r, ready_w = os.pipe()
    threading.Thread(
        target=serve_forever, args=(path, parent_r, ready_w, serve), daemon=True
    ).start()
    os.read(ready_r, 1)
    return path, parent_w


def _connect(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(55.0)  # the case's own hang guard
    sock.connect(path)
    return sock


def _served(path: str) -> bool:
    """Whether a good request gets its answer."""
    from fedtrees.federation.flower._wire import (
        SiteAnswer,
        SiteMessage,
        read_frame,
        write_frame,
    )

    try:
        with _connect(path) as sock:
            write_frame(sock, *SiteMessage(b"abc", {}, {}, 1).to_frame())
            answer = SiteAnswer.from_frame(*read_frame(sock))
    except OSError:
        return False
    return answer.reply == b"cba"


def _frame(header: Any) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack(">I", len(text)) + text


BAD_FRAMES: dict[str, Callable[[], bytes]] = {
    "header-a-list": lambda: _frame([1]),
    "no-blobs": lambda: _frame({"state": []}),
    "blob-text": lambda: _frame({"blobs": ["x"]}),
    "header-too-deep": lambda: struct.pack(">I", 50_000) + b"[" * 50_000,
    "header-not-json": lambda: struct.pack(">I", 3) + b"{x:",
    "fields-wrong": lambda: _frame({"state": "x", "blobs": [1]}) + b"r",
}


@case("worker-malformed-frames", F, ())
def worker_malformed_frames() -> Verdict:
    path, _ = _worker()
    alive = []
    for name, frame in BAD_FRAMES.items():
        try:
            with _connect(path) as sock:
                sock.sendall(frame())
                sock.shutdown(socket.SHUT_WR)
                sock.recv(1 << 16)
        except OSError:
            pass
        alive.append((name, _served(path)))
    dead = [name for name, ok in alive if not ok]
    return check(
        not dead,
        f"answered {len(BAD_FRAMES)} malformed frames and served on",
        f"no longer served after: {', '.join(dead)}",
    )


@case("worker-huge-header-length", F, ())
def worker_huge_length() -> Verdict:
    path, _ = _worker()
    with _connect(path) as sock:
        sock.sendall(struct.pack(">I", 2**32 - 1))  # then nothing: says 4 GiB
        try:
            answer = sock.recv(1 << 16)
        except TimeoutError:
            return Verdict(HANG, "the worker waited for 4 GiB of header")
    return check(
        b"FrameError" in answer and _served(path),
        "refused at once, served on",
        f"answered {answer[:60]!r}",
    )


@case("worker-stalled-connection", F, ())
def worker_stalled() -> Verdict:
    path, _ = _worker()
    stalled = _connect(path)
    stalled.sendall(_frame({"state": [], "blobs": [10]}) + b"half")
    served = _served(path)  # waits up to the worker's 30 s frame deadline
    stalled.close()
    if not served:
        return Verdict(HANG, "a stalled connection blocked the worker")
    return check(served, "the stalled connection was closed; the next one served", "")
