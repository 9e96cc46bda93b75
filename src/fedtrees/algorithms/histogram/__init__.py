"""The histogram engine: one home for binned, federated tree growth.

What XGBoost's and LightGBM's ``hist`` methods do, made federated and exact on
a grid. FedForest's ``candidates="hist"`` uses it, and so will federated
boosting. Step by step:

1. **Grid, agreed once** (:mod:`._grid`): every client summarises each numeric
   column of its rows (all distinct values, or type-1 quantile points); the
   server cuts the pooled distinct values (exact grid) or inverts the pooled
   mixture of the client CDFs at ``l/max_bins``. Declared edges skip it.
2. **Codes** (:func:`bin_codes`): each client bins its rows once (``uint8``;
   255 = missing) and keeps them, with its rows partitioned by node
   (:class:`NodeRows`, :func:`partition`), for the whole run.
3. **One round per level** (:func:`client_histograms`): per open node its
   statistics and, per (open node, considered feature), the non-zero bins of
   the client's statistics — class counts, regression moments, or any
   weighted vectors — the missing bin included.
4. **Exact pooled sums** (:func:`pool`, per level :func:`level_histograms`),
   and **histogram subtraction** (:func:`plan_level`, :func:`subtract`): where
   a parent's every feature was computed, clients send the smaller child only
   and the server derives its sibling.
5. **Split search** (:func:`search`) over every open node of every tree at
   once, with a learned direction for missing values: scikit-learn's
   impurities (forests) or XGBoost's second-order gain (boosting).

Under secure aggregation (:mod:`._dense`): dense histograms over the bins the
server names, and the root grid from fine histograms over declared ranges;
the pooled sums are checked for what no honest sites can add up to
(:mod:`._pooled`).

On one table, with no federation (:mod:`._local`): a binned CART of rows the
caller holds itself (:func:`fit_binned_cart`; the synthetic-data server's
global tree).

On the wire (:mod:`._wire`): the grid round's reply and the grid a client
keeps for the run, shared by the protocols on the engine.

Decisions (docs/fedforest.md says more): no per-node refinement — below the
root a bin may hold more than ``1/max_bins`` of a node's rows, exactly as in
XGBoost and LightGBM; at most 255 bins (and 255 categories) per feature plus
the missing code; thresholds are grid edges.
"""

from fedtrees.algorithms.histogram._agreement import (
    GridAgreement,
    SketchReply,
    summarise_columns,
)
from fedtrees.algorithms.histogram._check_kernels import whole_max
from fedtrees.algorithms.histogram._dense import (
    FINE_BINS,
    DenseLayout,
    fine_edges,
    fine_grid,
    fine_histograms,
)
from fedtrees.algorithms.histogram._grid import (
    MAX_BINS,
    MISSING,
    Grid,
    GridSketch,
    agree_grid,
    bin_codes,
    check_bin_edges,
    check_declared_edges,
    check_max_bins,
    declared_grid,
    merged_grid,
    sketch_columns,
    type1_points,
)
from fedtrees.algorithms.histogram._histograms import (
    Bins,
    Histograms,
    RowStats,
    client_histograms,
    pool,
    subtract,
)
from fedtrees.algorithms.histogram._level import (
    Kept,
    LevelPlan,
    LevelReplyStats,
    LevelRounds,
    derive_level,
    keep_split,
    level_histograms,
    node_weights,
    plan_level,
)
from fedtrees.algorithms.histogram._local import fit_binned_cart
from fedtrees.algorithms.histogram._pooled import (
    check_pooled_fine,
    check_pooled_level,
    check_pooled_moments,
)
from fedtrees.algorithms.histogram._rows import CodeSplits, NodeRows, partition
from fedtrees.algorithms.histogram._search import CRITERION_CODES, Found, search
from fedtrees.algorithms.histogram._wire import (
    MaskedLevel,
    check_grid_reply,
    check_level_reply,
    grid_reply_fields,
    grid_reply_spec,
    keep_grid,
    level_reply_fields,
    matrix_with_missing,
    skipped_columns,
)

__all__ = [
    "CRITERION_CODES",
    "FINE_BINS",
    "MAX_BINS",
    "MISSING",
    "Bins",
    "CodeSplits",
    "DenseLayout",
    "Found",
    "Grid",
    "GridAgreement",
    "GridSketch",
    "Histograms",
    "Kept",
    "LevelPlan",
    "LevelReplyStats",
    "LevelRounds",
    "MaskedLevel",
    "NodeRows",
    "RowStats",
    "SketchReply",
    "agree_grid",
    "bin_codes",
    "check_bin_edges",
    "check_declared_edges",
    "check_grid_reply",
    "check_level_reply",
    "check_max_bins",
    "check_pooled_fine",
    "check_pooled_level",
    "check_pooled_moments",
    "client_histograms",
    "declared_grid",
    "derive_level",
    "fine_edges",
    "fine_grid",
    "fine_histograms",
    "fit_binned_cart",
    "grid_reply_fields",
    "grid_reply_spec",
    "keep_grid",
    "keep_split",
    "level_histograms",
    "level_reply_fields",
    "matrix_with_missing",
    "merged_grid",
    "node_weights",
    "partition",
    "plan_level",
    "pool",
    "search",
    "sketch_columns",
    "skipped_columns",
    "subtract",
    "summarise_columns",
    "type1_points",
    "whole_max",
]
