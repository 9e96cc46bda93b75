"""ICDTA4FL rule aggregation (docs/icdta.md, step 4) on adult, measured in one run.

    python benchmarks/bench_icdta_rules.py

Setting: adult (rows with missing values dropped) split at random over 50 clients
(``default_rng(0).integers(0, 50, n)``), the clients' trees of ICDTAClassifier
(``random_state=0``; ID3 trees of 300-400 leaves, CART trees of 15-25) and the
trees kept by ``filter="mean"``, in aggregation order. One fit per base, with a
filter that keeps a single tree, gives the trees and their scores; the rule sets
are then folded by :func:`aggregate` (``RuleLimitExceeded`` ends a run) and, on
the same inputs, the compatible-pair search alone is timed step by step. Best
of three runs.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from _table import print_frame

from fedtrees import ICDTAClassifier, datasets
from fedtrees.algorithms.icdta import _rules
from fedtrees.algorithms.icdta._rules import RuleSet, aggregate, merge_rules
from fedtrees.exceptions import RuleLimitExceeded

CLIENTS, REPEATS = 50, 3
SETTINGS = [("id3", 100_000), ("id3", 1_000_000), ("cart", 100_000)]


def kept_rule_sets(base: str) -> list[RuleSet]:
    """The rule sets of the trees that ``filter="mean"`` keeps, in order."""
    adult = datasets.load("adult", dropna=True)
    groups = np.random.default_rng(0).integers(0, CLIENTS, adult.n_samples)
    model = ICDTAClassifier(base=base, filter="percentile:100", random_state=0)
    model.fit(adult.X, adult.y, groups=groups)
    scores = model.tree_scores_
    kept = scores.index[scores >= scores.mean() - 1e-12]
    return [RuleSet.from_tree(model.client_trees_[c], base) for c in kept]


def time_aggregate(sets: list[RuleSet], max_rules: int) -> tuple[float, str]:
    """Seconds of one :func:`aggregate` and how it ended."""
    start = time.perf_counter()
    try:
        end = f"{len(aggregate(sets, max_rules=max_rules))} rules"
    except RuleLimitExceeded as exc:
        end = "limit hit " + str(exc).split(": ")[0].split(", ")[-1]
    return time.perf_counter() - start, end


def time_pairs(sets: list[RuleSet], max_rules: int) -> tuple[float, int]:
    """Seconds of the compatible-pair search alone over the fold, and its steps."""
    result, spent = sets[0].deduplicated(), 0.0
    for step, rules in enumerate(sets[1:], start=1):
        start = time.perf_counter()
        try:
            _rules._compatible_pairs(result, rules, max_rules, "")
        except RuleLimitExceeded:
            return spent + time.perf_counter() - start, step
        spent += time.perf_counter() - start
        result = merge_rules(result, rules, max_rules=max_rules)
    return spent, len(sets) - 1


def main() -> None:
    rows = []
    for base in dict.fromkeys(base for base, _ in SETTINGS):
        sets = kept_rule_sets(base)
        for max_rules in (limit for b, limit in SETTINGS if b == base):
            runs = [time_aggregate(sets, max_rules) for _ in range(REPEATS)]
            pairs = [time_pairs(sets, max_rules) for _ in range(REPEATS)]
            total = min(seconds for seconds, _ in runs)
            search = min(seconds for seconds, _ in pairs)
            rows.append(
                {
                    "base": base,
                    "max_rules": f"{max_rules:,}",
                    "trees": len(sets),
                    "steps": pairs[0][1],
                    "aggregate s": total,
                    "pair search s": search,
                    "search share": search / total,
                    "end": runs[0][1],
                }
            )
    title = f"ICDTA4FL rule aggregation, adult, {CLIENTS} clients"
    print_frame(pd.DataFrame(rows), title, width=140)


if __name__ == "__main__":
    main()
