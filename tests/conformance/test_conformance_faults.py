"""Every estimator under faults: a client dropping out, a malformed reply.

A client that does not answer, or answers something that is not a well-formed
reply of the round, is named: the fit fails in that round with a
:class:`RemoteProtocolError`, or (where the estimator continues without it, as
documented) warns with a :class:`ClientDropoutWarning`. A malformed reply is
refused before it is used: a run that continues gives the model of a run in
which the client did not answer at all.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedtrees.exceptions import ClientDropoutWarning, RemoteProtocolError
from fedtrees.federation import Fault, Payload, payload
from tests.conformance import checks
from tests.conformance.registry import Entry, params

DROPPED = "b"


@payload("conformance.stray")
class StrayReply(Payload):
    """A well-encoded payload that no round asks for."""

    value: int


def _stray(reply: Payload) -> Payload:
    return StrayReply(7)


def _settings(entry: Entry) -> list[dict[str, Any]]:
    """``on_dropout`` both ways where the estimator has it, else its own setting."""
    if "on_dropout" in entry.make(0).get_params():
        return [{"on_dropout": "fail"}, {"on_dropout": "continue"}]
    return [{}]


def _continues(entry: Entry, settings: dict[str, Any]) -> bool:
    return settings.get("on_dropout", entry.dropout) == "continue"


@pytest.mark.parametrize("entry", params("dropout"))
def test_a_client_dropping_out_is_named_and_the_fit_ends_as_documented(
    entry: Entry,
) -> None:
    _, clean, _ = checks.clean_fit(entry)
    round_ = checks.middle_round(clean)
    fault = Fault(DROPPED, "drop", round=round_)
    for settings in _settings(entry):
        if _continues(entry, settings):
            with pytest.warns(ClientDropoutWarning, match=f"Client '{DROPPED}'"):
                model, _, _ = checks.fit(entry, [fault], **settings)
            assert np.isfinite(checks.outputs(entry, model)).all()
        else:
            with pytest.raises(RemoteProtocolError, match="unreachable") as caught:
                checks.fit(entry, [fault], **settings)
            assert (caught.value.client, caught.value.round) == (DROPPED, round_)


@pytest.mark.parametrize("entry", params("bad_replies"))
@pytest.mark.parametrize(
    ("action", "mutate", "reason"),
    [
        ("garbage", None, "not a fedtrees message"),
        ("mutate", _stray, "'kind' is 'conformance.stray'"),
    ],
    ids=["garbage", "wrong-kind"],
)
def test_a_malformed_reply_is_refused_by_name_before_it_is_used(
    entry: Entry, action: Any, mutate: Any, reason: str
) -> None:
    _, clean, _ = checks.clean_fit(entry)
    round_ = checks.middle_round(clean)
    bad = Fault(DROPPED, action, round=round_, mutate=mutate)
    for settings in _settings(entry):
        if _continues(entry, settings):
            named = f"Client '{DROPPED}', round {round_}, .*{reason}"
            with pytest.warns(ClientDropoutWarning, match=named):
                model, _, _ = checks.fit(entry, [bad], **settings)
            # The reply is left out as if the client had not answered at all.
            with pytest.warns(ClientDropoutWarning):
                dropped, _, _ = checks.fit(
                    entry, [Fault(DROPPED, "drop", round=round_)], **settings
                )
            checks.same_model(entry, model, dropped)
        else:
            with pytest.raises(RemoteProtocolError, match=reason) as caught:
                checks.fit(entry, [bad], **settings)
            assert (caught.value.client, caught.value.round) == (DROPPED, round_)
