"""ICDTA4FL: the Cartesian-product aggregation of rule sets (docs/icdta.md step 4).

The rule sets of the kept trees are folded tree after tree (:func:`aggregate`):
every pair of compatible rules becomes ``(r1 ∧ r2, ŷ1 + ŷ2)``, incompatible pairs
are dropped, and identical conjunctions are merged by summing their ŷ
(:meth:`RuleSet.deduplicated`). :class:`RuleSet` (step 3: one rule per leaf) is
defined in :mod:`fedtrees.algorithms.icdta._ruleset` and re-exported here.

- ID3 rules are compatible unless a feature carries two different codes; the
  merged rule holds the union of their conditions.
- CART rules are compatible if, on every feature, their intervals intersect:
  ``max(low_a, low_b) < min(high_a, high_b)``.

**Decision** ``merge=`` (CART only): ``"intersection"`` (default) is the logical
conjunction, ``low = max``, ``high = min``. ``"paper"`` is the paper's "keep the
less restrictive bound" (Sec. 3.3: x0 > 32.5 and x0 > 35 give x0 > 32.5): where
both rules bound the same side of a feature the looser bound is kept, where only
one does its bound is kept (the union of conditions, as in the paper's 1A-1B).
Compatibility is the same intersection test in both modes.

How compatibility is computed: with bitsets over the rules of ``b``
(:mod:`fedtrees.algorithms.icdta._bitsets`).

``max_rules`` counts the compatible pairs (before de-duplication) block by block
of ``a`` and raises :class:`~fedtrees.exceptions.RuleLimitExceeded` before the
pairs past the limit are materialised: a failing product costs O(max_rules +
block) memory, never O(len(a) × len(b) × F). Pairs come out ``a``-major,
``b``-minor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, TypeAlias, cast

import numpy as np

from fedtrees._typing import BoolArray, IntArray
from fedtrees._validation import check_choice, check_int, invalid
from fedtrees.algorithms.icdta import _bitsets as bitsets
from fedtrees.algorithms.icdta._ruleset import Base, RuleSet
from fedtrees.exceptions import RuleLimitExceeded, ValidationError

__all__ = [
    "MERGES",
    "Base",
    "Merge",
    "RuleSet",
    "aggregate",
    "compatible",
    "merge_rules",
]

Merge: TypeAlias = Literal["intersection", "paper"]
MERGES: Final = ("intersection", "paper")
_BLOCK_CELLS = 4_000_000  # pairs counted per block of a (tests shrink it)
_NO_INT, _NO_FLOAT = np.zeros(0, np.int64), np.zeros(0)  # the other base's arrays


def compatible(a: RuleSet, b: RuleSet) -> BoolArray:
    """Return the (len(a), len(b)) matrix of compatible rule pairs (small inputs).

    Examples
    --------
    >>> a = RuleSet("cart", [], [[-np.inf], [32.5]], [[32.5], [np.inf]],
    ...             [[1.0, 0.0], [0.0, 1.0]], 1)
    >>> b = RuleSet("cart", [], [[35.0]], [[np.inf]], [[0.0, 1.0]], 1)
    >>> compatible(a, b).tolist()
    [[False], [True]]
    """
    _check_alike(a, b, "compatible")
    words = bitsets.block_words(
        a, slice(0, a.n_rules), bitsets.slices(b), bitsets.n_words(b.n_rules)
    )
    bits = np.unpackbits(
        words.view(np.uint8), axis=1, count=b.n_rules, bitorder="little"
    )
    return bits.astype(bool)


def merge_rules(
    a: RuleSet,
    b: RuleSet,
    *,
    merge: Merge = "intersection",
    max_rules: int = 100_000,
    step: str = "",
) -> RuleSet:
    """Merge every compatible pair of ``a × b``, then de-duplicate (docs/icdta.md, 4).

    Parameters
    ----------
    a, b
        Rule sets of the same base, width and number of classes.
    merge
        How CART bounds combine (**Decision**, see the module docstring).
    max_rules
        Limit on the compatible pairs (counted before de-duplication).
    step
        What is being merged, for the error message (e.g. ``"merging the rules
        of client 'c7' (tree 3 of 9)"``).

    Raises
    ------
    RuleLimitExceeded
        As soon as more than ``max_rules`` compatible pairs are found, before the
        merged rules are allocated.

    Examples
    --------
    >>> a = RuleSet("cart", [], [[32.5]], [[np.inf]], [[0.0, 1.0]], 1)
    >>> b = RuleSet("cart", [], [[35.0]], [[np.inf]], [[0.2, 0.8]], 1)
    >>> merge_rules(a, b).low.tolist(), merge_rules(a, b, merge="paper").low.tolist()
    ([[35.0]], [[32.5]])
    >>> merge_rules(a, b).proba.tolist()
    [[0.2, 1.8]]
    """
    owner = "merge_rules"
    _check_alike(a, b, owner)
    how = cast(Merge, check_choice(merge, "merge", owner, MERGES))
    limit = check_int(max_rules, "max_rules", owner, min_value=1)
    ia, ib = _compatible_pairs(a, b, limit, step)
    return _merge_pairs(a, b, ia, ib, how).deduplicated()


def aggregate(
    rule_sets: Sequence[RuleSet],
    *,
    merge: Merge = "intersection",
    max_rules: int = 100_000,
    names: Sequence[str] | None = None,
) -> RuleSet:
    """Fold the rule sets left to right by Cartesian product (docs/icdta.md step 4).

    Parameters
    ----------
    rule_sets
        One rule set per kept tree, all of the same base, width and classes.
    merge, max_rules
        As in :func:`merge_rules`; the first set alone must also fit max_rules.
    names
        The client id of each rule set, named in a :class:`RuleLimitExceeded`.

    Examples
    --------
    >>> a = RuleSet("id3", [[0, -1], [1, -1]], [], [], [[1.0, 0.0], [0.0, 1.0]], 2)
    >>> b = RuleSet("id3", [[0, 2], [-1, 3]], [], [], [[0.5, 0.5], [0.0, 1.0]], 2)
    >>> aggregate([a, b]).values.tolist()
    [[0, 2], [0, 3], [1, 3]]
    """
    owner = "aggregate"
    sets = _check_sets(rule_sets, names, owner)
    how = cast(Merge, check_choice(merge, "merge", owner, MERGES))
    limit = check_int(max_rules, "max_rules", owner, min_value=1)
    result = sets[0].deduplicated()
    if result.n_rules > limit:
        step = _step_text(0, len(sets), names)
        what = f"its {result.n_rules} distinct rules"
        raise RuleLimitExceeded(_limit_message(step, limit, what))
    for i in range(1, len(sets)):
        step = _step_text(i, len(sets), names)
        result = merge_rules(result, sets[i], merge=how, max_rules=limit, step=step)
    return result


# -- pairs ---------------------------------------------------------------------------
def _compatible_pairs(
    a: RuleSet, b: RuleSet, max_rules: int, step: str
) -> tuple[IntArray, IntArray]:
    """Return the indices of the compatible pairs, checking the limit per block.

    A block of ``a`` holds ``_BLOCK_CELLS // len(b)`` rules; it is computed in
    chunks whose words take at most ``_BLOCK_CELLS`` bytes. Once the running total
    passes ``max_rules`` the rest of the block is only counted, so the error
    reports the total at the end of the block.
    """
    n_a, n_b = a.n_rules, b.n_rules
    rows = max(1, _BLOCK_CELLS // max(n_b, 1))
    n_words = bitsets.n_words(n_b)
    chunk = max(1, min(rows, _BLOCK_CELLS // (8 * max(n_words, 1))))
    slices = bitsets.slices(b)
    found_a, found_b = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    total = 0
    for start in range(0, n_a if n_b else 0, rows):
        stop = min(start + rows, n_a)
        for low in range(start, stop, chunk):
            words = bitsets.block_words(
                a, slice(low, min(low + chunk, stop)), slices, n_words
            )
            total += bitsets.popcount(words)
            if total <= max_rules:
                ia, ib = bitsets.set_bits(words)
                found_a.append(low + ia)
                found_b.append(ib)
        if total > max_rules:
            what = (
                f"the Cartesian product of {n_a} and {n_b} rules (at least "
                f"{total} compatible pairs)"
            )
            raise RuleLimitExceeded(_limit_message(step, max_rules, what))
    return np.concatenate(found_a), np.concatenate(found_b)


def _merge_pairs(
    a: RuleSet, b: RuleSet, ia: IntArray, ib: IntArray, merge: Merge
) -> RuleSet:
    """Return the merged rule of every pair (``ŷ_a + ŷ_b``), not de-duplicated."""
    proba = bitsets.take_rows(a.proba, ia) + bitsets.take_rows(b.proba, ib)
    if a.base == "id3":
        # -1 (no condition) is below every code: the max is the union of conditions.
        values = np.maximum(
            bitsets.take_rows(a.values, ia), bitsets.take_rows(b.values, ib)
        )
        return RuleSet("id3", values, _NO_FLOAT, _NO_FLOAT, proba, a.n_features)
    la, lb = bitsets.take_rows(a.low, ia), bitsets.take_rows(b.low, ib)
    ha, hb = bitsets.take_rows(a.high, ia), bitsets.take_rows(b.high, ib)
    if merge == "intersection":
        low, high = np.maximum(la, lb), np.minimum(ha, hb)
    else:
        # Paper (Sec. 3.3): both bound a side -> keep the looser; else the one bound.
        both_low = np.isfinite(la) & np.isfinite(lb)
        both_high = np.isfinite(ha) & np.isfinite(hb)
        low = np.where(both_low, np.minimum(la, lb), np.maximum(la, lb))
        high = np.where(both_high, np.maximum(ha, hb), np.minimum(ha, hb))
    return RuleSet("cart", _NO_INT, low, high, proba, a.n_features)


def _limit_message(step: str, max_rules: int, what: str) -> str:
    return (
        f"ICDTA4FL rule aggregation, {step or 'merging two rule sets'}: {what} "
        f"would exceed max_rules={max_rules}. Keep fewer client trees with a "
        "stricter filter (e.g. filter='percentile:75' or filter='median') or pass "
        "a larger max_rules."
    )


def _step_text(i: int, n: int, names: Sequence[str] | None) -> str:
    verb = "taking" if i == 0 else "merging"
    if names is None:
        return f"{verb} the rules of tree {i + 1} of {n}"
    return f"{verb} the rules of client {names[i]!r} (tree {i + 1} of {n})"


def _check_alike(a: RuleSet, b: RuleSet, owner: str) -> None:
    for name, other in (("a", a), ("b", b)):
        if not isinstance(other, RuleSet):
            raise invalid(name, owner, "a RuleSet", type(other).__name__)
    for attr in ("base", "n_features", "n_classes"):
        if getattr(a, attr) != getattr(b, attr):
            raise ValidationError(
                f"{owner}: the rule sets must share {attr}; got {getattr(a, attr)!r} "
                f"and {getattr(b, attr)!r}."
            )


def _check_sets(
    rule_sets: Sequence[RuleSet], names: Sequence[str] | None, owner: str
) -> list[RuleSet]:
    sets = list(rule_sets)
    if not sets:
        raise invalid("rule_sets", owner, "a non-empty sequence of RuleSet", sets)
    if names is not None and len(names) != len(sets):
        raise invalid("names", owner, f"{len(sets)} names (one per rule set)", names)
    for other in sets:
        _check_alike(sets[0], other, owner)
    return sets
