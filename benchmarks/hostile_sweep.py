"""A hostile sweep: many small bad inputs and faults, each judged, counted per class.

    python benchmarks/hostile_sweep.py                    # every case, 60 s each
    python benchmarks/hostile_sweep.py --only codec/      # the cases whose name matches
    python benchmarks/hostile_sweep.py --list             # the case names
    python benchmarks/hostile_sweep.py --json sweep.json  # also write the verdicts
    python benchmarks/hostile_sweep.py --bad-only         # print the bad rows only

Not part of the test run: it is run by hand (issue 24), like the benchmarks. The
cases live in ``_sweep_*.py`` beside this script, each a small function that
returns a verdict or raises; ``_sweep_core.py`` says how a raised exception is
judged. Families: ``params`` (bad parameters of every estimator), ``values``
(extreme X values, constant columns, many tiny clients), ``categories``,
``labels``, ``predict``, ``federation`` (building a federation, the agreement),
``replies`` (a client that lies, injected with ``Fault("mutate")``),
``requests`` (bad server requests served by a client's runtime), ``flower``
(Flower replies and ClientApp messages, no Flower processes), ``codec`` (edge
arrays), ``persist`` (pickle and JSON), ``privacy`` (absurd ε), ``fresh`` (a
second look: pandas dtypes, weights, groups, scikit-learn helpers, budgets),
``dp-noise`` (a server replaying a site's DP noise; rows outside the DP forest's
ranges) and ``site4`` (round four at a site: its ledger, data files, cache and
worker).

Classes (issue 24): *clear error* (a ``FedTreesError`` or ``NotFittedError``
naming the culprit), *documented* (works as the docs say, e.g. a warning or
a documented route), *correct* (works, checked against a reference), and the
bad ones: *unclear crash* (another exception, or a message that does not name
the culprit), *silent wrong* (no error, a wrong result), *hang* (over
``--timeout``) and *leak* (a message carrying a client's row count or values).

Every case runs in its own forked process (the parent imports the libraries
once), one at a time; a case that does not answer within ``--timeout`` seconds
is killed and is a hang. The exit status is 1 when any case is bad.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
import warnings
from multiprocessing.connection import Connection
from pathlib import Path

import pandas as pd
from _sweep_core import (
    BAD,
    CASES,
    HANG,
    OUTCOMES,
    UNCLEAR,
    Verdict,
    judge_error,
    judge_warnings,
)
from _table import print_frame

FAMILIES = (
    "_sweep_params",
    "_sweep_values",
    "_sweep_inputs",
    "_sweep_protocol",
    "_sweep_wire",
    "_sweep_flower",
    "_sweep_fresh",
    "_sweep_round4_dp",
    "_sweep_round4_site",
    "_sweep_round4_jobs",
    "_sweep_round4_protocol",
    "_sweep_round4_fedga",
    "_sweep_category_union",
)


def load_cases() -> None:
    """Import every case module (each registers its cases)."""
    for module in FAMILIES:
        __import__(module)


def warm_up() -> None:
    """Import what the cases use, once, so every forked case starts warm.

    Nothing is fitted here: a compiled kernel's thread pool must not be started
    before a fork.
    """
    import fedtrees.algorithms as algorithms
    import fedtrees.federation as federation

    for name in algorithms.__all__:
        getattr(algorithms, name)
    for name in federation.__all__:
        getattr(federation, name)
    import fedtrees.federation.flower._clientapp
    import fedtrees.federation.flower._transport  # noqa: F401


def _child(name: str, conn: Connection, quiet: bool) -> None:
    if quiet:  # keep progress bars and library logs out of the table
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
    case = CASES[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            verdict = case.run()
            if not isinstance(verdict, Verdict):
                verdict = Verdict(UNCLEAR, f"sweep bug: the case returned {verdict!r}")
        except BaseException as exc:  # every outcome is judged, none escapes
            verdict = judge_error(exc, case.names)
    verdict = judge_warnings(verdict, [str(w.message) for w in caught])
    conn.send((verdict.outcome, verdict.note))
    conn.close()


def run_case(name: str, timeout: float, quiet: bool) -> tuple[str, str, float]:
    """Run one case in a forked process; return its class, note and seconds."""
    context = mp.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(name, sender, quiet))
    start = time.perf_counter()
    process.start()
    sender.close()
    try:
        if not receiver.poll(timeout):
            process.kill()
            process.join()
            return HANG, f"no answer within {timeout:g} s", timeout
        outcome, note = receiver.recv()
    except EOFError:
        process.join()
        note = f"the case's process died (exit code {process.exitcode})"
        return UNCLEAR, note, time.perf_counter() - start
    finally:
        receiver.close()
    process.join(10)
    if process.is_alive():
        process.kill()
        process.join()
    return outcome, note, time.perf_counter() - start


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="", help="run the cases whose name has this")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    parser.add_argument("--json", type=Path, help="write the verdicts here")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--bad-only", action="store_true", help="print bad rows only")
    parser.add_argument("--loud", action="store_true", help="keep the cases' output")
    parser.add_argument("--width", type=int, default=160, help="table width")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    load_cases()
    names = [n for n in CASES if args.only in n]
    if args.list:
        for name in names:
            print(name)
        return
    warm_up()
    rows = []
    for k, name in enumerate(names, 1):
        outcome, note, seconds = run_case(name, args.timeout, not args.loud)
        print(f"[{k}/{len(names)}] {name}: {outcome}", file=sys.stderr, flush=True)
        rows.append({"case": name, "class": outcome, "s": seconds, "note": note})
    frame = pd.DataFrame(rows)
    shown = frame[frame["class"].isin(BAD)] if args.bad_only else frame
    print_frame(shown, f"Hostile sweep: {len(frame)} cases", width=args.width)
    counts = frame["class"].value_counts().reindex(OUTCOMES, fill_value=0)
    print_frame(
        counts.rename_axis("class").reset_index(name="cases"), "Cases per class"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    sys.exit(1 if frame["class"].isin(BAD).any() else 0)


if __name__ == "__main__":
    main()
