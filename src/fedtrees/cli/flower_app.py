"""The components of fedtrees' Flower App (see federation/flower/app/pyproject.toml).

``serverapp`` runs a named fedtrees job over the SuperNodes; ``clientapp`` serves
its requests from each node's local data file. Importing fedtrees.algorithms
registers every method's payloads and handlers in the ClientApp process.
"""

from fedtrees.algorithms import run_job
from fedtrees.datasets import load_client_file
from fedtrees.federation.flower import make_client_app, make_server_app

__all__ = ["clientapp", "serverapp"]

serverapp = make_server_app(run_job)
clientapp = make_client_app(load_client_file)
