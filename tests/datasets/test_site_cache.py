"""The per-run cache of a site's prepared data (what a Flower ClientApp reads).

Invariants: a cached read returns exactly the frames of a fresh read, so a model
fitted on cached data is bit-identical; an edited file, a truncated, altered or
foreign entry, or a deleted cache is detected and the entry built again.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fedtrees.algorithms import run_job
from fedtrees.datasets import _site_cache, load_client_file, load_site_data
from fedtrees.datasets._client_files import parse_client_file
from fedtrees.datasets._site_file import SiteFile
from fedtrees.exceptions import DataNotFoundError
from fedtrees.federation import Federation

Frames = tuple[pd.DataFrame, pd.Series]


def _write_site(folder: Path, name: str, seed: int) -> Path:
    """A CSV site file with int, float (with NaN), bool and text columns, text labels."""
    rng = np.random.default_rng(seed)
    n = 60
    frame = pd.DataFrame(
        {
            "age": rng.integers(20, 80, n),
            "chol": np.where(rng.random(n) < 0.1, np.nan, rng.normal(200, 30, n)),
            "smoker": rng.random(n) < 0.3,
            "cp": rng.choice(["typical", "atypical", "none"], n),
            "label": rng.choice(["sick", "healthy"], n),
        }
    )
    path = folder / f"{name}.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every parse of a data file the cache makes (the file's path)."""
    seen: list[Path] = []

    def counted(file: SiteFile, *args: Any) -> Frames:
        seen.append(Path(file.name))
        return parse_client_file(file, *args)

    monkeypatch.setattr(_site_cache, "parse_client_file", counted)
    return seen


def _assert_same(a: Frames, b: Frames) -> None:
    pd.testing.assert_frame_equal(a[0], b[0], check_exact=True)
    pd.testing.assert_series_equal(a[1], b[1], check_exact=True)


def _assert_reads_as_the_file(site: Path, cache: Path) -> None:
    """The read through ``cache`` gives exactly the file's frames."""
    _assert_same(
        load_site_data(site, "label", cache_dir=cache), load_client_file(site, "label")
    )


def _entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("run-*/*.npz"))


def test_a_cached_read_is_exactly_a_fresh_one_and_parses_once(
    tmp_path: Path, parses: list[Path]
) -> None:
    site = _write_site(tmp_path, "a", 0)
    fresh = load_client_file(site, "label")
    first = load_site_data(site, "label", cache_dir=tmp_path / "cache", run_id=3)
    second = load_site_data(site, "label", cache_dir=tmp_path / "cache", run_id=3)
    _assert_same(fresh, first)
    _assert_same(fresh, second)
    assert parses == [Path(site.name)]  # the second message read the cache
    assert [p.parent.name for p in _entries(tmp_path / "cache")] == ["run-3"]
    load_site_data(site, "label", cache_dir=tmp_path / "cache", run_id=4)
    assert parses == [Path(site.name)] * 2  # a new run parses the file again


def _fit(sites: dict[str, Path], load: Callable[[Path], Frames]) -> dict[str, Any]:
    """The FedForest (hist) and FedGBDT documents fitted on the loaded sites."""
    federation = Federation.from_clients({n: load(p) for n, p in sites.items()})
    return {
        job: run_job(job, federation, params)[0]
        for job, params in {
            "fedforest": {"n_estimators": 3, "max_depth": 3, "random_state": 0},
            "fedgbdt": {"n_estimators": 3, "max_depth": 2, "random_state": 0},
        }.items()
    }


def test_models_from_cached_data_are_bit_identical(
    tmp_path: Path, parses: list[Path]
) -> None:
    sites = {name: _write_site(tmp_path, name, seed) for seed, name in enumerate("abc")}
    cache = tmp_path / "cache"
    fresh = _fit(sites, lambda p: load_client_file(p, "label"))
    for _ in range(2):  # the first fit fills the cache, the second reads it
        cached = _fit(
            sites, lambda p: load_site_data(p, "label", cache_dir=cache, run_id=1)
        )
        assert json.dumps(cached, sort_keys=True) == json.dumps(fresh, sort_keys=True)
    assert len(parses) == len(sites)


def test_an_edited_file_is_never_served_from_the_old_entry(
    tmp_path: Path, parses: list[Path]
) -> None:
    site = _write_site(tmp_path, "a", 0)
    load_site_data(site, "label", cache_dir=tmp_path / "cache")
    frame = pd.read_csv(site)
    frame.loc[0, "age"] = 999
    frame.to_csv(site, index=False)
    X, _ = load_site_data(site, "label", cache_dir=tmp_path / "cache")
    assert X.loc[0, "age"] == 999
    assert len(parses) == 2


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b[: len(b) // 2], id="truncated"),
        pytest.param(lambda b: b[:-200] + bytes(200), id="zeroed-tail"),
        pytest.param(lambda b: b"not an archive", id="garbage"),
        pytest.param(lambda b: b"", id="empty"),
    ],
)
def test_a_damaged_entry_is_detected_and_built_again(
    tmp_path: Path, parses: list[Path], damage: Callable[[bytes], bytes]
) -> None:
    site = _write_site(tmp_path, "a", 0)
    load_site_data(site, "label", cache_dir=tmp_path / "cache")
    (entry,) = _entries(tmp_path / "cache")
    entry.write_bytes(damage(entry.read_bytes()))
    _assert_reads_as_the_file(site, tmp_path / "cache")
    assert len(parses) == 2
    load_site_data(site, "label", cache_dir=tmp_path / "cache")
    assert len(parses) == 2  # the rebuilt entry serves again


def test_altered_values_with_a_valid_archive_are_detected(
    tmp_path: Path, parses: list[Path]
) -> None:
    """An entry rewritten with other values (a valid npz) fails its arrays' digest."""
    site = _write_site(tmp_path, "a", 0)
    load_site_data(site, "label", cache_dir=tmp_path / "cache")
    (entry,) = _entries(tmp_path / "cache")
    with np.load(entry) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays["c0"] = arrays["c0"] + 1
    with entry.open("wb") as handle:
        np.savez(handle, **arrays)
    _assert_reads_as_the_file(site, tmp_path / "cache")
    assert len(parses) == 2


def test_another_files_entry_under_this_key_is_refused(
    tmp_path: Path, parses: list[Path]
) -> None:
    a, b = _write_site(tmp_path, "a", 0), _write_site(tmp_path, "b", 1)
    load_site_data(a, "label", cache_dir=tmp_path / "cache")
    load_site_data(b, "label", cache_dir=tmp_path / "cache")
    entry_a, entry_b = sorted(_entries(tmp_path / "cache"), key=os.path.getmtime)
    entry_b.write_bytes(entry_a.read_bytes())  # a's data under b's name
    _assert_reads_as_the_file(b, tmp_path / "cache")
    assert len(parses) == 3


def test_the_cache_is_safe_to_delete_and_optional(
    tmp_path: Path, parses: list[Path]
) -> None:
    site = _write_site(tmp_path, "a", 0)
    cache = tmp_path / "cache"
    load_site_data(site, "label", cache_dir=cache)
    for path in _entries(cache):
        path.unlink()
    _assert_reads_as_the_file(site, cache)
    blocked = tmp_path / "a-file"
    blocked.write_text("a file, not a folder")
    with pytest.warns(UserWarning, match="could not be written"):
        X, _ = load_site_data(site, "label", cache_dir=blocked)
    assert len(X) == 60
    assert not list(tmp_path.glob("*.tmp"))


def test_runs_idle_for_a_day_are_removed_when_a_new_one_is_written(
    tmp_path: Path,
) -> None:
    site = _write_site(tmp_path, "a", 0)
    cache = tmp_path / "cache"
    for run in (1, 2):
        load_site_data(site, "label", cache_dir=cache, run_id=run)
    old = time.time() - _site_cache.IDLE_SECONDS - 60
    os.utime(cache / "run-1", (old, old))
    mine = cache / "run-mine"  # not the cache's: never deleted
    mine.mkdir()
    (mine / "notes.txt").write_text("kept")
    os.utime(mine, (old, old))
    load_site_data(site, "label", cache_dir=cache, run_id=3)
    assert sorted(p.name for p in cache.iterdir()) == ["run-2", "run-3", "run-mine"]


def test_a_missing_file_is_named_with_or_without_a_cache(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError, match=r"missing\.csv"):
        load_site_data(tmp_path / "missing.csv", cache_dir=tmp_path / "cache")
