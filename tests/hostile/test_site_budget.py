"""A site's own privacy budget (issue 24): every DP release charged, across runs.

Before it, each DP request made a fresh accountant with the ε the request named:
a re-run job, or a request asking ε = 1e9, was answered, and nothing at the site
added them up. These cases run the real estimators on in-process sites that
declare a budget (``Federation.from_groups(..., privacy_budget=...,
privacy_ledger=...)``); the Flower node config is tested in
``tests/federation/flower/test_site_budget.py``.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from fedtrees import DPForestClassifier, FederatedID3Classifier
from fedtrees.exceptions import (
    PrivacyBudgetExceeded,
    RemoteProtocolError,
    ValidationError,
)
from fedtrees.federation import BudgetFile, Federation, SiteBudget
from fedtrees.privacy import even_share

SITES = ("a", "b", "c")
RANGES = {"x0": (0.0, 1.0), "x1": (0.0, 1.0)}
EDGES = {"x0": [0.25, 0.5, 0.75], "x1": [0.5]}


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(24)
    X = rng.random((60, 2))
    return X, (X[:, 0] > 0.5).astype(int), np.repeat(SITES, 20)


def _federation(**budget: object) -> Federation:
    X, y, groups = _data()
    return Federation.from_groups(X, y, groups, **budget)  # type: ignore[arg-type]


def _dp_forest(epsilon: float) -> DPForestClassifier:
    return DPForestClassifier(
        epsilon=epsilon, max_depth=2, feature_ranges=RANGES, random_state=0
    )


def _spent(path: Path, site: str) -> Fraction:
    """The site's spend, read from the ledger document itself (exact sum)."""
    document = json.loads(path.read_text())
    return sum((Fraction(c["epsilon"]) for c in document["sites"][site]), Fraction(0))


@pytest.mark.hostile("clear_error")
def test_a_second_run_over_the_site_budget_is_refused_naming_it(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger.json"
    first = _dp_forest(1.0).fit_federation(
        _federation(privacy_budget=1.5, privacy_ledger=ledger)
    )
    assert first.epsilon_spent_ == dict.fromkeys(SITES, 1.0)
    again = _federation(privacy_budget=1.5, privacy_ledger=ledger)  # a re-run job
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a', round 1, 'dpforest.tree'.*PrivacyBudgetExceeded: Site 'a' "
        r"privacy budget: total epsilon=1.5, spent 1 over 1 release\(s\); this "
        r"request \(dpforest.tree: one DP tree\) asks epsilon=1, more than the "
        r"budget has left: refused",
    ):
        _dp_forest(1.0).fit_federation(again)
    assert all(_spent(ledger, site) == 1 for site in SITES)  # nothing more charged


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("epsilon", "why"),
    [
        (1e9, "more than the budget has left"),
        (math.inf, "a noise-free release, which no finite budget allows"),
    ],
)
def test_a_request_asking_a_huge_epsilon_is_refused(
    tmp_path: Path, epsilon: float, why: str
) -> None:
    ledger = tmp_path / "ledger.json"
    federation = _federation(privacy_budget=10.0, privacy_ledger=ledger)
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Site 'a' privacy budget: total epsilon=10, spent 0 .* asks "
        rf"epsilon={re.escape(f'{epsilon:g}')}, {why}: refused",
    ):
        _dp_forest(epsilon).fit_federation(federation)
    assert not ledger.exists()  # nothing was charged, so nothing was written


@pytest.mark.hostile("clear_error")
def test_exact_federated_id3_counts_are_refused_at_a_budgeted_site() -> None:
    """A DP method asked for noise-free counts: ε = ∞ fits no finite budget."""
    federation = _federation(privacy_budget={"b": 5.0})
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'b', round \d+, 'fedid3.level'.*Site 'b' privacy budget: "
        r"total epsilon=5, .*exact counts\) asks epsilon=inf, a noise-free release",
    ):
        FederatedID3Classifier(bin_edges=EDGES).fit_federation(federation)


@pytest.mark.hostile("correct")
def test_the_ledger_spends_exactly_the_answered_requests(tmp_path: Path) -> None:
    """Invariant: a site's ledger sums the ε of the requests it answered, no more.

    A naive reference replays the same sequence of fits against each site's
    total; every fit it says fits must be answered, and every other refused.
    """
    ledger = tmp_path / "ledger.json"
    totals = {"a": 2.0, "b": 1.25, "c": 3.5}
    rng = np.random.default_rng(7)
    asked = [float(e) for e in rng.choice([0.25, 0.5, 0.75, 1.0], size=7)]
    reference = dict.fromkeys(SITES, Fraction(0))
    for epsilon in asked:
        federation = _federation(privacy_budget=totals, privacy_ledger=ledger)
        fits = {
            s: reference[s] + Fraction(epsilon) <= Fraction(totals[s]) for s in SITES
        }
        if all(fits.values()):
            _dp_forest(epsilon).fit_federation(federation)
        else:  # the first refusing site ends the fit...
            refusing = next(s for s in SITES if not fits[s])
            with pytest.raises(RemoteProtocolError, match=f"Client '{refusing}'"):
                _dp_forest(epsilon).fit_federation(federation)
        for site in SITES:  # ...but every site that answered released its tree
            reference[site] += Fraction(epsilon) if fits[site] else 0
        for site in SITES:
            assert _spent(ledger, site) == reference[site], (epsilon, site)
    assert all(reference[s] <= Fraction(totals[s]) for s in SITES)
    # FedID3 with noise: each level it answers is charged its share ε/d.
    federation = _federation(privacy_budget=100.0, privacy_ledger=tmp_path / "id3")
    model = FederatedID3Classifier(
        epsilon=1.0, max_depth=2, bin_edges=EDGES, random_state=0
    ).fit_federation(federation)
    share = Fraction(even_share(1.0, 2))
    assert _spent(tmp_path / "id3", "a") == model.levels_ * share


@pytest.mark.hostile("correct")
def test_the_spend_persists_across_federations_and_processes(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    _dp_forest(1.0).fit_federation(
        _federation(privacy_budget=1.5, privacy_ledger=ledger)
    )
    script = textwrap.dedent(
        f"""
        from fedtrees.federation import BudgetFile, SiteBudget
        SiteBudget("a", 1.5, BudgetFile({str(ledger)!r})).charge(0.25, "elsewhere")
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert _spent(ledger, "a") == Fraction(5, 4)
    fresh = _federation(privacy_budget=1.5, privacy_ledger=ledger)
    _dp_forest(0.25).fit_federation(fresh)  # exactly the 0.25 that "a" has left
    with pytest.raises(RemoteProtocolError, match=r"Site 'a' .*spent 1.5 over 3"):
        _dp_forest(0.25).fit_federation(fresh)
    requests = [c.request for c in BudgetFile(ledger).charges("a")]
    tree = "dpforest.tree: one DP tree"
    assert requests == [tree, "elsewhere", tree]


@pytest.mark.hostile("correct")
def test_concurrent_processes_never_overspend(tmp_path: Path) -> None:
    """Two processes charging one ledger at once: the total is never exceeded."""
    ledger = tmp_path / "ledger.json"
    script = textwrap.dedent(
        f"""
        from fedtrees.exceptions import PrivacyBudgetExceeded
        from fedtrees.federation import BudgetFile, SiteBudget
        budget = SiteBudget("a", 2.0, BudgetFile({str(ledger)!r}))
        answered = 0
        for _ in range(12):
            try:
                budget.charge(0.125, "race")
                answered += 1
            except PrivacyBudgetExceeded:
                pass
        print(answered)
        """
    )
    racers = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
        for _ in range(2)
    ]
    answered = [int(p.communicate(timeout=120)[0]) for p in racers]
    assert all(p.returncode == 0 for p in racers)
    assert sum(answered) == 16  # 2.0 / 0.125: every charge that fits, no more
    assert _spent(ledger, "a") == 2
    assert len(BudgetFile(ledger).charges("a")) == 16


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "Expecting value"),
        (
            b'{"format": "fedtrees.privacy-ledger", "version": 1, "sites": {',
            "Expecting",
        ),
        (b'{"format": "other", "version": 1, "sites": {}}', "its format is not"),
        (
            b'{"format": "fedtrees.privacy-ledger", "version": 2, "sites": {}}',
            "version 2",
        ),
        (
            b'{"format": "fedtrees.privacy-ledger", "version": 1, "sites": []}',
            "'sites'",
        ),
        (
            b'{"format": "fedtrees.privacy-ledger", "version": 1, "sites": {"a": '
            b'[{"epsilon": -1.0, "request": "x", "run": null, "time": "t"}]}}',
            "charge 0 of site 'a' has epsilon -1.0",
        ),
        (
            b'{"format": "fedtrees.privacy-ledger", "version": 1, "sites": {"a": '
            b'[{"epsilon": NaN, "request": "x", "run": null, "time": "t"}]}}',
            "has epsilon nan",
        ),
        (
            b'{"format": "fedtrees.privacy-ledger", "version": 1, "sites": {"a": '
            b'[{"epsilon": 1.0, "request": "x"}]}}',
            "does not hold exactly",
        ),
    ],
    ids=[
        "empty",
        "truncated",
        "format",
        "version",
        "sites",
        "negative",
        "nan",
        "fields",
    ],
)
def test_a_corrupt_ledger_is_refused_and_never_reset(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    ledger = tmp_path / "ledger.json"
    ledger.write_bytes(content)
    federation = _federation(privacy_budget=5.0, privacy_ledger=ledger)
    with pytest.raises(
        RemoteProtocolError,
        match=rf"SerializationError: The privacy ledger 'ledger.json' is not a "
        rf"readable fedtrees.privacy-ledger document \(.*{reason}.*Every DP request is "
        r"refused until it is repaired; it is never reset",
    ):
        _dp_forest(1.0).fit_federation(federation)
    assert ledger.read_bytes() == content


@pytest.mark.hostile("clear_error")
def test_a_ledger_in_a_missing_folder_is_refused(tmp_path: Path) -> None:
    federation = _federation(
        privacy_budget=5.0, privacy_ledger=tmp_path / "no-such-folder" / "ledger.json"
    )
    with pytest.raises(
        RemoteProtocolError,
        match=r"ValidationError: The privacy ledger 'ledger.json' cannot be used "
        r"\(FileNotFoundError: .*Every DP request is refused until it can",
    ):
        _dp_forest(1.0).fit_federation(federation)


@pytest.mark.hostile("documented")
def test_without_a_ledger_file_the_spend_lives_with_the_federation() -> None:
    """In memory: one federation object keeps the spend; a new one starts afresh."""
    federation = _federation(privacy_budget={"a": 1.5})
    _dp_forest(1.0).fit_federation(federation)
    with pytest.raises(RemoteProtocolError, match=r"Site 'a' privacy budget"):
        _dp_forest(1.0).fit_federation(federation.with_classes(None))  # same sites
    _dp_forest(1.0).fit_federation(_federation(privacy_budget={"a": 1.5}))


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"privacy_ledger": "l.json"},
            "privacy_ledger is given without privacy_budget",
        ),
        ({"privacy_budget": {"z": 1.0}}, r"names sites \['z'\] that are not clients"),
        ({"privacy_budget": 0.0}, "site 'a' must be a finite epsilon > 0; got 0.0"),
        ({"privacy_budget": math.nan}, "must be a finite epsilon > 0; got nan"),
        ({"privacy_budget": math.inf}, "must be a finite epsilon > 0; got inf"),
        ({"privacy_budget": {"b": True}}, "site 'b' must be a finite epsilon > 0"),
        ({"privacy_budget": "3"}, "must be a finite epsilon > 0; got '3'"),
    ],
)
def test_budget_declarations_are_validated(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        _federation(**options)
    X, y, _ = _data()
    with pytest.raises(ValidationError, match=message.replace("'a'", "'0'")):
        Federation.from_clients(
            {"0": (X, y), "b": (X, y)},
            **options,  # type: ignore[arg-type]
        )


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("epsilon", [math.nan, -1.0, 0.0, "1"])
def test_a_charge_that_is_not_a_positive_epsilon_is_refused(epsilon: object) -> None:
    budget = SiteBudget("a", 10.0)
    with pytest.raises(PrivacyBudgetExceeded, match="not a positive epsilon"):
        budget.charge(epsilon, "hostile.request")  # type: ignore[arg-type]
    assert budget.charges() == ()


# -- round four: the ledger is one file at one path (issue 37) -------------------------
def _link_refused(name: str, what: str) -> str:
    return (
        rf"The privacy ledger '{name}' cannot be used: its ledger '{name}' is {what}"
        r".*a regular file at exactly one path is expected.*Every DP request is "
        r"refused until it is"
    )


@pytest.mark.hostile("clear_error")
def test_a_ledger_path_that_is_a_symbolic_link_is_refused_and_left_alone(
    tmp_path: Path,
) -> None:
    """Before: the first charge replaced the link with a plain file."""
    real = tmp_path / "real.json"
    SiteBudget("a", 15.0, BudgetFile(real)).charge(5.0, "before")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(ValidationError, match=_link_refused("link.json", "a symbolic")):
        SiteBudget("a", 15.0, BudgetFile(link)).charge(5.0, "through the link")
    assert link.is_symlink()  # not replaced by a plain file
    assert _spent(real, "a") == 5  # and nothing charged
    dangling = tmp_path / "dangling.json"  # before: read as a new, empty ledger
    dangling.symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(ValidationError, match=_link_refused("dangling.json", "a sym")):
        SiteBudget("a", 15.0, BudgetFile(dangling)).charge(5.0, "dangling")
    assert not (tmp_path / "nowhere.json").exists()


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("second_name", ["symlink", "hardlink"])
def test_two_paths_to_one_ledger_never_spend_more_than_the_total(
    tmp_path: Path, second_name: str
) -> None:
    """The reported attack: 20 of a total of 15 through a ledger reached by two paths.

    A site charges 5 at a time, alternately through the ledger's own path and a
    second name for it. Before: the first charge through the link replaced the
    link (or, beside a hard link, the name) with a new file, and each file then
    allowed the whole total. Now the second name is refused, and the spend over
    every file the charges touched stays within the total: beside a symbolic
    link the ledger's own path is served to the total; a hard-linked ledger is
    refused under either name (neither is the one path of its spend).
    """
    real = tmp_path / "real.json"
    SiteBudget("a", 15.0, BudgetFile(real)).charge(5.0, "first")
    other = tmp_path / "other.json"
    if second_name == "symlink":
        other.symlink_to(real)
    else:
        os.link(real, other)
    answered = 1
    for k in range(6):
        path = other if k % 2 == 0 else real
        try:
            SiteBudget("a", 15.0, BudgetFile(path)).charge(5.0, f"charge {k}")
            answered += 1
        except (ValidationError, PrivacyBudgetExceeded):
            pass
    files = {os.stat(real).st_ino: real}
    if not other.is_symlink():
        files.setdefault(os.stat(other).st_ino, other)
    spent = sum(_spent(path, "a") for path in files.values())
    assert spent == 5 * answered <= 15
    assert answered == (3 if second_name == "symlink" else 1)


@pytest.mark.hostile("clear_error")
def test_a_hard_linked_ledger_is_refused_naming_its_links(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    SiteBudget("a", 15.0, BudgetFile(real)).charge(5.0, "before")
    os.link(real, tmp_path / "copy.json")
    with pytest.raises(
        ValidationError, match=_link_refused("real.json", "a file with 2 hard links")
    ):
        SiteBudget("a", 15.0, BudgetFile(real)).charge(5.0, "after")
    assert _spent(real, "a") == 5


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("kind", ["directory", "named pipe"])
def test_a_ledger_that_is_not_a_regular_file_is_refused_without_waiting(
    tmp_path: Path, kind: str
) -> None:
    """A named pipe is opened without blocking (before: a read that never ended)."""
    ledger = tmp_path / "ledger.json"
    if kind == "directory":
        ledger.mkdir()
    else:
        os.mkfifo(ledger)
    with pytest.raises(
        ValidationError, match=_link_refused("ledger.json", f"a {kind}")
    ):
        SiteBudget("a", 15.0, BudgetFile(ledger)).charges()


@pytest.mark.hostile("clear_error")
def test_a_lock_file_that_is_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    (tmp_path / "ledger.json.lock").symlink_to(tmp_path / "elsewhere.lock")
    with pytest.raises(
        ValidationError,
        match=r"The privacy ledger 'ledger.json' cannot be used: its lock file "
        r"'ledger.json.lock' is a symbolic link",
    ):
        SiteBudget("a", 15.0, BudgetFile(ledger)).charge(1.0, "x")
    assert not (tmp_path / "elsewhere.lock").exists()
    assert not ledger.exists()
