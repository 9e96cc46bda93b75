"""``fedtrees flower ...``: certificates, keys, SuperLink, SuperNodes, connection, app.

Thin wrappers over :mod:`fedtrees.federation.flower`: the SuperLink and SuperNode
commands replace this process with Flower's own ``flower-superlink`` /
``flower-supernode`` (TLS unless ``--insecure`` is given explicitly); a job is then
launched with Flower's CLI: ``flwr run "$(fedtrees flower app)" CONNECTION``.
With ``--supernode-auth`` only SuperNodes whose public key was registered
(``fedtrees flower keys`` at the site, ``fedtrees flower register`` at the server)
may join.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Annotated

import typer
from rich.console import Console

from fedtrees import datasets
from fedtrees.cli._typer import App, cli_words

flower_app = App(
    name="flower",
    help="Deploy fedtrees on Flower: certificates, keys, SuperLink, SuperNodes, app.",
    no_args_is_help=True,
)

Insecure = Annotated[
    bool, typer.Option("--insecure", help="Plain HTTP: loopback tests only.")
]
CaFile = Annotated[
    Path | None, typer.Option(help="The CA certificate (ca.crt) for TLS.")
]


def _flower() -> ModuleType:
    try:
        import fedtrees.federation.flower as module
    except ImportError as exc:
        raise typer.BadParameter(
            "this needs Flower: pip install '.[flower]' in a fedtrees clone"
        ) from exc
    return module


def _tls(value: Path | None, insecure: bool, option: str) -> None:
    if (value is None) == (not insecure):
        raise typer.BadParameter(
            f"pass {option} (TLS) or --insecure, exactly one of them"
        )


@flower_app.command()
def certs(
    folder: Annotated[
        Path, typer.Argument(help="Where to write the CA and server files.")
    ],
    host: Annotated[
        list[str] | None,
        typer.Option(help="Address the SuperLink is dialled at (repeat the option)."),
    ] = None,
) -> None:
    """Create a local CA and the SuperLink's TLS certificate."""
    out = _flower().make_certificates(folder, host or ["127.0.0.1", "localhost"])
    Console().print(
        f"Wrote {out}/ca.crt (for SuperNodes and CLI users), server.pem, server.key."
    )


@flower_app.command()
def keys(
    folder: Annotated[Path, typer.Argument(help="Where to write the key pair.")],
    client_id: Annotated[str, typer.Option(help="This site's client id.")],
) -> None:
    """Create this site's SuperNode key pair (for SuperNode authentication)."""
    try:
        private, public = _flower().make_supernode_keys(folder, client_id)
    except ValueError as exc:
        raise typer.BadParameter(cli_words(str(exc))) from exc
    Console().print(
        f"Wrote {private} (keep it at this site: 'fedtrees flower supernode "
        f"--auth-key') and {public} (send it to the server operator, who runs "
        "'fedtrees flower register')."
    )


@flower_app.command()
def register(
    public_key: Annotated[
        Path, typer.Argument(help="A site's public key (.pub from 'keys').")
    ],
    connection: Annotated[
        str, typer.Argument(help="The SuperLink connection (see 'connection').")
    ],
    name: Annotated[
        str | None,
        typer.Option(help="The site's name, shown by 'fedtrees flower sites'."),
    ] = None,
    flwr_home: Annotated[
        Path | None, typer.Option(help="Flower's home (default $FLWR_HOME, ~/.flwr).")
    ] = None,
    wait: Annotated[
        float,
        typer.Option(help="Seconds to keep trying while the SuperLink is unreachable."),
    ] = 30.0,
) -> None:
    """Register a site's SuperNode public key with the SuperLink (server side)."""
    try:
        node_id = _flower().register_supernode(
            public_key, connection, name=name, flwr_home=flwr_home, wait=wait
        )
    except ValueError as exc:
        raise typer.BadParameter(cli_words(str(exc))) from exc
    Console().print(f"Registered {public_key.name} as SuperNode {node_id}.")


@flower_app.command()
def sites(
    connection: Annotated[
        str, typer.Argument(help="The SuperLink connection (see 'connection').")
    ],
    flwr_home: Annotated[
        Path | None, typer.Option(help="Flower's home (default $FLWR_HOME, ~/.flwr).")
    ] = None,
) -> None:
    """List the registered sites: name, node id, online or not (server side).

    Names come from 'fedtrees flower register --name' (recorded in Flower's
    home), statuses from 'flwr supernode list', which does not show names.
    """
    flower = _flower()
    try:
        found = flower.list_sites(connection, flwr_home)
    except ValueError as exc:
        raise typer.BadParameter(cli_words(str(exc))) from exc
    typer.echo(flower.sites_table(found))


@flower_app.command()
def categories(
    files: Annotated[
        list[Path], typer.Argument(help="Data files read as a site reads its own.")
    ],
    columns: Annotated[
        str | None,
        typer.Option(
            help="Only these columns, comma-separated (default: every "
            "categorical column)."
        ),
    ] = None,
    target: Annotated[
        str | None, typer.Option(help="Target column of the CSV files.")
    ] = None,
    na_values: Annotated[
        str | None,
        typer.Option(
            help="The files' missing tokens besides the empty cell, "
            "comma-separated (e.g. '?')."
        ),
    ] = None,
    categorical: Annotated[
        str | None,
        typer.Option(help="Columns to read as categories, comma-separated."),
    ] = None,
    toml: Annotated[
        bool, typer.Option("--toml", help="Print a job.toml line: categories = ...")
    ] = False,
) -> None:
    """Print the declaration of categories of public files (JSON: column -> names).

    Each column's names are the union found in the files, sorted by text: the
    order the sites' agreement takes, so declaring it changes no model. Use
    public metadata (a codebook, a public sample): a declaration is public.
    """
    from fedtrees.datasets import categories_of_files, declaration_text
    from fedtrees.federation.flower import csv_declarations

    declared = csv_declarations(_csv_config(na_values, categorical))
    wanted = None if columns is None else [c.strip() for c in columns.split(",")]
    try:
        found = categories_of_files(
            files,
            target,
            na_values=declared.na_values,
            categorical=declared.categorical,
            columns=[c for c in wanted if c] if wanted is not None else None,
        )
    except ValueError as exc:
        raise typer.BadParameter(cli_words(str(exc))) from exc
    typer.echo(declaration_text(found, toml=toml))


@flower_app.command()
def superlink(
    certs: Annotated[
        Path | None, typer.Option(help="Folder made by 'fedtrees flower certs' (TLS).")
    ] = None,
    insecure: Insecure = False,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "0.0.0.0",
    port: Annotated[int, typer.Option(help="The one SuperLink port.")] = 9095,
    supernode_auth: Annotated[
        bool,
        typer.Option(
            "--supernode-auth",
            help="Only registered SuperNodes may join (needs TLS; see 'register').",
        ),
    ] = False,
) -> None:
    """Start a SuperLink (replaces this process)."""
    _tls(certs, insecure, "--certs")
    flower = _flower()
    try:
        command = flower.superlink_command(
            certs=certs.resolve() if certs else None,
            insecure=insecure,
            host=host,
            port=port,
            supernode_auth=supernode_auth,
        )
    except ValueError as exc:
        raise typer.BadParameter(cli_words(str(exc))) from exc
    os.execvpe(command[0], command, flower.flower_env())


@flower_app.command()
def supernode(
    superlink: Annotated[str, typer.Option(help="HOST:PORT of the SuperLink.")],
    client_id: Annotated[str, typer.Option(help="This site's client id.")],
    data: Annotated[Path, typer.Option(help="This site's data file (.npz or .csv).")],
    ca: CaFile = None,
    insecure: Insecure = False,
    port: Annotated[
        int | None,
        typer.Option(
            help="Local ClientAppIO port on 127.0.0.1 (default: a free one, so "
            "several SuperNodes can share a host)."
        ),
    ] = None,
    target: Annotated[
        str | None, typer.Option(help="Target column of a CSV data file.")
    ] = None,
    na_values: Annotated[
        str | None,
        typer.Option(
            help="A CSV data file's missing tokens besides the empty cell, "
            "comma-separated (e.g. '?' for UCI data)."
        ),
    ] = None,
    categorical: Annotated[
        str | None,
        typer.Option(
            help="The CSV data file's columns to read as categories, "
            "comma-separated (a column holding numbers and text must be declared)."
        ),
    ] = None,
    auth_key: Annotated[
        Path | None,
        typer.Option(help="This site's private key (from 'keys'), for SuperNode auth."),
    ] = None,
    cache_dir: Annotated[
        str | None,
        typer.Option(
            help="Folder caching the prepared data per run (default: "
            "$XDG_CACHE_HOME/fedtrees/site-data, else ~/.cache/...; '' for none)."
        ),
    ] = None,
    site_worker: Annotated[
        bool,
        typer.Option(
            help="Serve messages from a long-lived worker beside the SuperNode "
            "(fedtrees and its kernels stay loaded; POSIX systems); without it, "
            "every message's ClientApp process serves it itself."
        ),
    ] = True,
    privacy_budget: Annotated[
        float | None,
        typer.Option(
            help="This site's total epsilon over every DP release, across runs "
            "(needs --privacy-ledger); a request that would exceed it is refused."
        ),
    ] = None,
    privacy_ledger: Annotated[
        Path | None,
        typer.Option(help="The file keeping this site's spent epsilon across runs."),
    ] = None,
    noise_seed: Annotated[
        str | None,
        typer.Option(
            help="This site's secret DP noise seed, at least 32 hex digits (to "
            "reproduce its noise; default: fresh entropy for every release). Never "
            "sent; keep it secret."
        ),
    ] = None,
    noise_sampler: Annotated[
        str | None,
        typer.Option(help="This site's Laplace sampler: numpy (default) or opendp."),
    ] = None,
) -> None:
    """Start this site's SuperNode (replaces this process).

    Without --port the SuperNode's local ClientAppIO port is a free one picked
    at start, so several SuperNodes can share a host. A site worker serves the
    SuperNode's messages unless --no-site-worker is given.
    """
    # Why: Flower's fixed ClientAppIO default, 9094, would make a second SuperNode
    # on the same host fail with 'address already in use'. Flower starts a
    # ClientApp process per message, and loading fedtrees in each one costs more
    # than the work of a round, hence the site worker (fedtrees.cli.site_worker).
    _tls(ca, insecure, "--ca")
    flower = _flower()
    try:
        command = flower.supernode_command(
            superlink=superlink,
            client_id=client_id,
            data_path=data.resolve(),
            root_certificates=ca.resolve() if ca else None,
            insecure=insecure,
            port=port,
            target=target,
            auth_private_key=auth_key.resolve() if auth_key else None,
            node_config={
                **_node_config(cache_dir, privacy_budget, privacy_ledger),
                **_noise_config(noise_seed, noise_sampler),
                **_csv_config(na_values, categorical),
            },
        )
    except ValueError as exc:
        raise typer.BadParameter(cli_words(str(exc))) from exc
    if site_worker and os.name == "posix":  # a Unix socket and inherited pipes
        from fedtrees.cli.site_worker import with_site_worker

        command = with_site_worker(command)
    os.execvpe(command[0], command, flower.flower_env())


def _node_config(
    cache_dir: str | None, privacy_budget: float | None, privacy_ledger: Path | None
) -> dict[str, str]:
    """Return the SuperNode's optional node config entries (the site's settings)."""
    config = {}
    if cache_dir is not None:
        config["cache-dir"] = str(Path(cache_dir).resolve()) if cache_dir else ""
    if privacy_budget is not None:
        config["privacy-budget"] = repr(privacy_budget)
    if privacy_ledger is not None:
        config["privacy-ledger"] = str(privacy_ledger.resolve())
    if (privacy_budget is None) != (privacy_ledger is None):
        raise typer.BadParameter(
            "pass --privacy-budget and --privacy-ledger together: only the ledger "
            "file keeps the site's spend across runs"
        )
    if privacy_budget is not None and not 0 < privacy_budget < float("inf"):
        raise typer.BadParameter(
            f"--privacy-budget must be a finite epsilon > 0, got {privacy_budget}"
        )
    if privacy_budget is not None or privacy_ledger is not None:
        from fedtrees.federation.flower import site_budget

        site_budget(config, "", 0)  # the site's own check, now, not at a message
    return config


def _noise_config(seed: str | None, sampler: str | None) -> dict[str, str]:
    """Return the node config entries of the site's noise source, checked now.

    The messages name the flags and never show the seed (it is the site's secret).
    """
    from fedtrees.federation.flower import site_noise

    config = {} if sampler is None else {"noise-sampler": sampler}
    try:
        site_noise(config)
    except ValueError:
        raise typer.BadParameter(
            f"--noise-sampler must be numpy or opendp, got {sampler!r}"
        ) from None
    if seed is None:
        return config
    config["noise-seed"] = seed
    try:
        site_noise(config)
    except ValueError:
        raise typer.BadParameter(
            "--noise-seed must be this site's secret, at least 32 hex digits (128 "
            "bits; python -c 'import secrets; print(secrets.token_hex(16))' prints "
            "one), with the numpy sampler (OpenDP's cannot be seeded); the value "
            "given is not shown"
        ) from None
    return config


def _csv_config(na_values: str | None, categorical: str | None) -> dict[str, str]:
    """Return the node config entries describing a CSV data file (checked now)."""
    from fedtrees.federation.flower import csv_declarations

    config = {
        key: value
        for key, value in (("na-values", na_values), ("categorical", categorical))
        if value is not None
    }
    try:
        csv_declarations(config)
    except ValueError as exc:
        raise typer.BadParameter(cli_words(str(exc))) from exc
    return config


@flower_app.command()
def connection(
    name: Annotated[str, typer.Argument(help="Name for 'flwr run APP NAME'.")],
    address: Annotated[str, typer.Option(help="HOST:PORT of the SuperLink.")],
    ca: CaFile = None,
    insecure: Insecure = False,
    flwr_home: Annotated[
        Path | None, typer.Option(help="Flower's home (default $FLWR_HOME, ~/.flwr).")
    ] = None,
) -> None:
    """Register a SuperLink connection for Flower's CLI (flwr run / ls / log)."""
    _tls(ca, insecure, "--ca")
    path = _flower().write_connection(
        name, address, flwr_home=flwr_home, root_certificates=ca, insecure=insecure
    )
    Console().print(f"Wrote connection {name!r} to {path}.")


@flower_app.command()
def app() -> None:
    """Print the directory of fedtrees' Flower App (for 'flwr run')."""
    Console().print(str(_flower().app_dir()), soft_wrap=True)


@flower_app.command()
def split(
    dataset: Annotated[str, typer.Argument(help="A bundled dataset with clients.")],
    folder: Annotated[Path, typer.Argument(help="Where to write the data files.")],
) -> None:
    """Write one .npz data file per natural client of a bundled dataset (trials)."""
    options = {"flamby": True} if dataset == "heart_disease" else {}
    data = datasets.load(dataset, **options)
    if data.clients is None:
        raise typer.BadParameter(f"{dataset!r} has no natural clients")
    folder.mkdir(parents=True, exist_ok=True)
    console = Console()
    for client in data.clients.unique():
        rows = (data.clients == client).to_numpy()
        path = folder / f"{str(client).replace(' ', '_')}.npz"
        datasets.save_client_file(
            path, data.X[rows].reset_index(drop=True), data.y[rows]
        )
        console.print(f"{client}: {int(rows.sum())} rows -> {path}")
