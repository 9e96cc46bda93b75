"""Whose entries a site's data cache trusts, round four (issue 37).

Before: an entry was keyed by the file's SHA-256 and checked against a digest
of its own arrays, but anyone who could write the cache folder could plant one
(the digest is recomputable), and a world-writable folder was accepted. Now the
cache folder and the run folder must be the site user's alone to write (else
refused, naming the folder and ``chmod 700``), new ones are created ``0700``,
and an entry is used only if it is a regular file of the site's user, reached
without following a link.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedtrees.datasets import _site_cache, load_client_file, load_site_data
from fedtrees.exceptions import ValidationError


@pytest.fixture
def site(tmp_path: Path) -> Path:
    path = tmp_path / "site.csv"
    rng = np.random.default_rng(37)
    pd.DataFrame(
        {"age": rng.integers(20, 80, 30), "label": rng.choice(["a", "b"], 30)}
    ).to_csv(path, index=False)
    return path


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    parse = _site_cache.parse_client_file

    def counted(file: object, *args: object) -> object:
        seen.append(str(file))
        return parse(file, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(_site_cache, "parse_client_file", counted)
    return seen


def _poison(entry: Path) -> None:
    """Rewrite an entry with other values and a digest that matches them."""
    with np.load(entry) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(str(arrays.pop("__meta__")))
    arrays["c0"] = np.full_like(arrays["c0"], 999)
    meta["digest"] = _site_cache._digest(arrays, meta)
    with entry.open("wb") as handle:
        np.savez(handle, **arrays, __meta__=np.array(json.dumps(meta)))


def _refused(folder: Path, problem: str) -> str:
    return (
        rf"The site data cache folder '{folder}' {problem}\. A cache entry is used "
        r"as the site's own parse of its data file, so only the site's user may "
        rf"write its folder: run chmod 700 '{folder}'"
    )


@pytest.mark.hostile("clear_error")
def test_a_poisoned_entry_in_a_folder_others_may_write_is_never_used(
    site: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    load_site_data(site, cache_dir=cache, run_id=1)
    (entry,) = cache.glob("run-1/*.npz")
    os.chmod(cache, 0o777)  # now anyone may plant an entry...
    _poison(entry)  # ...and one did
    with pytest.raises(
        ValidationError,
        match=_refused(
            cache, r"may be written by its group or by others \(mode 0o777\)"
        ),
    ):
        load_site_data(site, cache_dir=cache, run_id=1)
    os.chmod(cache, 0o700)  # the operator's fix: the planted entry stays out
    os.chmod(entry.parent, 0o770)
    with pytest.raises(
        ValidationError, match=_refused(entry.parent, r"may be .* \(mode 0o770\)")
    ):
        load_site_data(site, cache_dir=cache, run_id=1)


@pytest.mark.hostile("clear_error")
def test_a_world_writable_cache_folder_is_refused_before_anything_is_written(
    site: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # like /tmp
    with pytest.raises(
        ValidationError, match=_refused(shared, r"may be .* \(mode 0o1777\)")
    ):
        load_site_data(site, cache_dir=shared, run_id=1)
    assert list(shared.iterdir()) == []


@pytest.mark.hostile("clear_error")
def test_a_cache_folder_of_another_user_is_refused(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    me = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: me + 1)  # the site runs as another user
    with pytest.raises(
        ValidationError,
        match=rf"'{cache}' is owned by user id {me}, not by the site's user \(id "
        rf"{me + 1}\).*run chown {me + 1} '{cache}' && chmod 700",
    ):
        load_site_data(site, cache_dir=cache)


@pytest.mark.hostile("correct")
def test_folders_are_created_for_the_site_user_alone_and_entries_are_its_own(
    site: Path, tmp_path: Path, parses: list[str]
) -> None:
    cache = tmp_path / "deep" / "cache"
    fresh = load_client_file(site)
    load_site_data(site, cache_dir=cache, run_id=4)
    (entry,) = cache.glob("run-4/*.npz")
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert stat.S_IMODE(entry.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    cached = load_site_data(site, cache_dir=cache, run_id=4)
    pd.testing.assert_frame_equal(cached[0], fresh[0])
    assert len(parses) == 1
    # An entry others may write, or a link, is not the site's own: built again.
    os.chmod(entry, 0o666)
    _poison(entry)
    pd.testing.assert_frame_equal(
        load_site_data(site, cache_dir=cache, run_id=4)[0], fresh[0]
    )
    assert len(parses) == 2
    elsewhere = tmp_path / "planted.npz"
    os.replace(entry, elsewhere)
    elsewhere.chmod(0o600)
    entry.symlink_to(elsewhere)
    pd.testing.assert_frame_equal(
        load_site_data(site, cache_dir=cache, run_id=4)[0], fresh[0]
    )
    assert len(parses) == 3
    assert not entry.is_symlink()  # replaced by the site's own entry


@pytest.mark.hostile("correct")
def test_an_entry_is_keyed_by_the_files_bytes_and_the_declarations(
    tmp_path: Path, parses: list[str]
) -> None:
    """One file read with other declarations never meets the other's entry."""
    site = tmp_path / "s.csv"
    site.write_text("x,label\n1,a\n?,b\n2,a\n")
    cache = tmp_path / "cache"
    as_missing = load_site_data(site, cache_dir=cache, na_values="?")
    as_category = load_site_data(site, cache_dir=cache, categorical="x")
    assert as_missing[0]["x"].dtype == np.float64
    assert as_category[0]["x"].dtype.name == "category"
    assert len(parses) == 2
    assert len(list(cache.glob("run-0/*.npz"))) == 2
    again = load_site_data(site, cache_dir=cache, na_values=["?"])
    pd.testing.assert_frame_equal(again[0], as_missing[0])
    assert len(parses) == 2


@pytest.mark.hostile("clear_error")
def test_a_flower_site_with_an_unsafe_cache_says_so(site: Path, tmp_path: Path) -> None:
    pytest.importorskip("flwr")
    from fedtrees.exceptions import RemoteProtocolError
    from tests.hostile.test_site_data_files import _ask_site

    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    node = {"client-id": "a", "data-path": str(site), "cache-dir": str(shared)}
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a', round 1.*cannot load local data: ValidationError: The "
        r"site data cache folder .* run chmod 700 .*node config cache-dir",
    ):
        _ask_site(node)
