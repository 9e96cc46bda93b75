"""Random trees of every split kind, and a per-row reference router for tests."""

from __future__ import annotations

import numpy as np

from fedtrees.tree import Missing, NodeKind, NodeStats, Tree, TreeBuilder

N_CATEGORIES = 5


def _stats(rng: np.random.Generator, n_classes: int) -> NodeStats:
    count = float(rng.integers(0, 20))
    if n_classes:
        counts = rng.integers(0, 10, size=n_classes).astype(float)
        return NodeStats.from_class_counts(counts)
    return NodeStats.from_mean(rng.normal(), count)


def random_tree(
    seed: int,
    *,
    n_features: int = 3,
    categorical: tuple[int, ...] = (2,),
    n_classes: int = 3,
    clients: tuple[str, ...] | None = None,
    max_depth: int = 4,
    p_split: float = 0.75,
    missing: tuple[Missing, ...] = (),
) -> Tree:
    """A random tree (n_classes=0 gives regression) using every allowed split kind.

    ``missing``: the directions a numeric split draws from (none: LARGER everywhere,
    and the tree is the one this seed gave before directions existed).
    """
    rng = np.random.default_rng(seed)
    numeric = [f for f in range(n_features) if f not in categorical]
    builder = TreeBuilder(
        n_features=n_features,
        classes=np.arange(n_classes) if n_classes else None,
        categories=[
            tuple(f"c{i}" for i in range(N_CATEGORIES)) if f in categorical else None
            for f in range(n_features)
        ],
        clients=clients,
    )
    queue = [(builder.add_root(_stats(rng, n_classes)), 0)]
    while queue:
        node, depth = queue.pop(0)
        if depth >= max_depth or rng.random() > p_split:
            continue
        kinds = (["numeric"] if numeric else []) + (["cat"] if categorical else [])
        kinds += ["client"] if clients else []
        kind = kinds[rng.integers(len(kinds))]
        if kind == "numeric":
            f = int(rng.choice(numeric))
            threshold = float(rng.normal())
            left, right = _stats(rng, n_classes), _stats(rng, n_classes)
            direction = (
                missing[int(rng.integers(len(missing)))] if missing else Missing.LARGER
            )
            kids = builder.split_numeric(
                node, f, threshold, left, right, missing=direction
            )
        else:
            n_codes = N_CATEGORIES if kind == "cat" else len(clients or ())
            codes = rng.permutation(n_codes)
            n_branches = int(rng.integers(1, min(3, n_codes) + 1))
            cuts = (
                np.sort(
                    rng.choice(
                        np.arange(1, n_codes), size=n_branches - 1, replace=False
                    )
                )
                if n_branches > 1
                else []
            )
            groups = [
                g
                for g in np.split(
                    codes[: int(rng.integers(n_branches, n_codes + 1))], cuts
                )
                if g.size
            ]
            branches = [(g.tolist(), _stats(rng, n_classes)) for g in groups]
            default = _stats(rng, n_classes) if rng.random() < 0.6 else None
            if kind == "cat":
                f = int(rng.choice(list(categorical)))
                kids = builder.split_categorical(node, f, branches, default)
            else:
                kids = builder.split_client(node, branches, default)
        queue.extend((k, depth + 1) for k in kids)
    return builder.build()


def random_X(seed: int, tree: Tree, n: int, nan_fraction: float = 0.0) -> np.ndarray:
    """Rows with numeric features ~ N(0,1) and categorical codes (some unseen).

    ``nan_fraction`` of the cells (numeric and categorical) are then NaN.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, tree.n_features))
    for f, cats in enumerate(tree.categories or ()):
        if cats is not None:
            X[:, f] = rng.integers(0, N_CATEGORIES + 2, size=n)  # codes 5, 6 are unseen
    if nan_fraction:
        X[rng.random(X.shape) < nan_fraction] = np.nan
    return X


def reference_goes_left(tree: Tree, node: int, value: float) -> bool:
    """One numeric node, one value, read from the arrays (NaN by ``missing``)."""
    if not np.isnan(value):
        return bool(value <= tree.threshold[node])
    direction = tree.missing[node]
    if direction == Missing.LEFT:
        return True
    if direction == Missing.RIGHT:
        return False
    left, right = tree.left[node], tree.right[node]
    return bool(tree.count[left] > tree.count[right])  # LARGER; a tie goes right


def reference_value(
    tree: Tree, x: np.ndarray, client: int | None, node: int = 0
) -> np.ndarray:
    """Route one row by reading the arrays directly (a deliberately naive loop).

    At a client split with an unknown client, recurse into every child and mix the
    results by the children's training counts.
    """
    while True:
        kind = tree.kind[node]
        if kind == NodeKind.LEAF:
            return tree.value[node]
        if kind == NodeKind.NUMERIC:
            goes_left = reference_goes_left(tree, node, x[tree.feature[node]])
            node = tree.left[node] if goes_left else tree.right[node]
            continue
        start, stop = tree.branch_ptr[node], tree.branch_ptr[node + 1]
        codes = tree.branch_code[start:stop].tolist()
        table = dict(zip(codes, tree.branch_child[start:stop].tolist(), strict=True))
        if kind == NodeKind.CLIENT and client is None:
            kids = sorted(set(table.values()) | ({int(tree.right[node])} - {-1}))
            counts = np.array([tree.count[k] for k in kids])
            total = counts.sum()
            weights = counts / total if total > 0 else np.full(len(kids), 1 / len(kids))
            parts = [
                w * reference_value(tree, x, None, k)
                for w, k in zip(weights, kids, strict=True)
            ]
            return np.sum(parts, axis=0)
        if kind == NodeKind.CLIENT:
            code = client
        else:  # NaN is no code: it takes the default branch
            v = x[tree.feature[node]]
            code = None if np.isnan(v) else int(v)
        nxt = table.get(code, int(tree.right[node]))
        if nxt == -1:
            return tree.value[node]
        node = nxt
