"""The second step of the agreement: where each site's categories sit in the union.

When the sites' category lists of an undeclared column differ (a rare value at
one site only), :func:`~fedtrees.federation._schema.agree` takes their union,
sorted by text — what ``fit`` in process gives the same rows. Every site whose
list differs from the agreed one must then code that column by the union before
it computes any statistic. The round loop sends it one
:class:`CategoriesRequest` (kind ``federation.categories``), still in round 0,
right after the schema; sites whose lists all equal the agreed ones get none, and
a run whose lists all agree has no such step (its messages are unchanged).

**Decision (what travels down):** not the union's names — that would show each
site the other sites' rare values — but, per column, the union's size and the
position of each of the site's *own* categories in it: the site learns how many
categories the federation has (every request for a categorical histogram says
so anyway) and how many sort between its own, never a name it does not hold.
The site checks the request (one distinct position in range per own category)
and answers :class:`CategoriesReply`, echoing the columns.

**Decision (where a site keeps it):** like a declaration, not like the per-run
cache. In process on the :class:`~fedtrees.federation.ClientData` (which the
transport keeps for the whole federation; round 0 of the next run clears it).
On Flower a new process answers each message, so the site also keeps the
request under :data:`AGREED_KEY` in its run state (the SuperNode's
``context.state``) and re-applies it to every message's data
(:func:`apply_kept_agreement`). That entry is not a cache: the test device
``forget-state-at`` leaves it, and a SuperNode loses it only when it restarts —
then it is a new node, which the run (addressing the nodes it found at its
start) never asks again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np

from fedtrees.exceptions import ValidationError
from fedtrees.federation._client import handler
from fedtrees.federation._data import AgreedCoding, ClientData
from fedtrees.federation._payload import Field, Payload, ReplySpec, payload
from fedtrees.federation._schema import Schema, SchemaReply
from fedtrees.federation._state import ClientState

__all__ = [
    "AGREED_KEY",
    "CategoriesReply",
    "CategoriesRequest",
    "apply_kept_agreement",
    "coding_requests",
]

AGREED_KEY: Final = "federation.agreed_categories"
"""The run-state entry where a site keeps its :class:`CategoriesRequest`."""


@payload("federation.categories")
class CategoriesRequest(Payload):
    """Where this site's categories sit in the agreed union (module docstring).

    ``columns[k]`` has ``sizes[k]`` agreed categories; ``positions``
    concatenates, column after column, the union position of each of the
    site's own categories (``n_own[k]`` of them, in the order it reported).
    """

    columns: np.ndarray
    sizes: np.ndarray
    n_own: np.ndarray
    positions: np.ndarray

    def codings(self) -> dict[str, AgreedCoding]:
        """Return column -> its coding (checking the counts).

        Raises
        ------
        ValidationError
            If the arrays do not line up (a malformed request).
        """
        columns, sizes, counts = (
            self.columns.tolist(),
            self.sizes.tolist(),
            self.n_own.tolist(),
        )
        if (
            not len(columns) == len(sizes) == len(counts)
            or any(c < 0 for c in counts)
            or sum(counts) != self.positions.shape[0]
            or len(set(columns)) != len(columns)
        ):
            raise ValidationError(
                "CategoriesRequest: columns, sizes and n_own must give one entry "
                "per distinct column, n_own adding up to the positions."
            )
        bounds = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        positions = self.positions.astype(np.int64)
        return {
            str(column): AgreedCoding(
                int(sizes[k]), positions[bounds[k] : bounds[k + 1]].copy()
            )
            for k, column in enumerate(columns)
        }

    def expected_reply(self) -> ReplySpec:
        """Return the spec of the reply: it echoes the columns."""
        return ReplySpec(
            CategoriesReply, {"columns": Field.array("U", (None,), equals=self.columns)}
        )


@payload("federation.categories_reply")
class CategoriesReply(Payload):
    """A site's acknowledgement: it codes these columns by the agreed union."""

    columns: np.ndarray


@handler("federation.categories", stateful=True)
def apply_agreed_categories(
    request: CategoriesRequest, data: ClientData, state: ClientState
) -> CategoriesReply:
    """Client side: code the columns by the union; keep the request for the run."""
    data.agree_categories(request.codings())
    state.put(AGREED_KEY, request)
    return CategoriesReply(columns=request.columns.astype(str))


def apply_kept_agreement(data: ClientData, state: ClientState) -> None:
    """Re-apply the agreement a site kept in its run state (a Flower site).

    A new process loads the site's data for every message; the agreement it
    answered earlier in the run is in its run state (module docstring).
    """
    kept = state.get(AGREED_KEY, CategoriesRequest)
    if kept is not None:
        data.agree_categories(kept.codings())


def coding_requests(
    replies: Mapping[str, SchemaReply], schema: Schema
) -> dict[str, CategoriesRequest]:
    """Server side: the request of every client whose lists differ from the agreed.

    For each of :attr:`Schema.agreed_columns`, a client's own categories (as it
    reported them) get their positions in the union; a client whose lists all
    equal the agreed ones is left out.
    """
    out: dict[str, CategoriesRequest] = {}
    if not schema.agreed_columns:
        return out
    for client, reply in sorted(replies.items()):
        own = _reported(reply)
        columns: list[str] = []
        sizes: list[int] = []
        counts: list[int] = []
        positions: list[int] = []
        for column in schema.agreed_columns:
            union = schema.categories[schema.feature_names.index(column)] or ()
            if own[column] == union:
                continue
            index = {name: k for k, name in enumerate(union)}
            columns.append(column)
            sizes.append(len(union))
            counts.append(len(own[column]))
            positions.extend(index[name] for name in own[column])
        if columns:
            out[client] = CategoriesRequest(
                np.asarray(columns, dtype=str),
                np.asarray(sizes, dtype=np.int64),
                np.asarray(counts, dtype=np.int64),
                np.asarray(positions, dtype=np.int64),
            )
    return out


def _reported(reply: SchemaReply) -> dict[str, Sequence[str]]:
    """Return column -> the categories a client reported (undeclared columns)."""
    bounds = np.concatenate([[0], np.cumsum(reply.n_categories)]).tolist()
    flat = reply.categories.tolist()
    return {
        str(name): tuple(flat[bounds[j] : bounds[j + 1]])
        for j, name in enumerate(reply.feature_names.tolist())
    }
