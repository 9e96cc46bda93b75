"""Datasets: bundled real data, the HuGaDB folder reader, partitions, synthetic data.

``load(name)`` returns a :class:`Dataset` with X as a DataFrame (categorical columns
typed), y, the feature kinds, and the natural client column where one exists.

Examples
--------
>>> from fedtrees import datasets
>>> heart = datasets.load("heart_disease", flamby=True)
>>> heart.client_table()["rows"].to_dict()
{'Cleveland': 303, 'Hungary': 261, 'Switzerland': 46, 'Long Beach VA': 130}
"""

from fedtrees.datasets import partition, synthetic
from fedtrees.datasets._bundled import verify_bundled
from fedtrees.datasets._client_files import load_client_file, save_client_file
from fedtrees.datasets._dataset import Dataset, FeatureKind
from fedtrees.datasets._declaration import categories_of_files, declaration_text
from fedtrees.datasets._fedga import FEDGA_DATASETS, load_fedga
from fedtrees.datasets._hugadb import ACTIVITIES, load_hugadb
from fedtrees.datasets._registry import BUNDLED, available, load
from fedtrees.datasets._site_cache import load_site_data
from fedtrees.datasets._site_file import MAX_COLUMNS, MAX_FILE_BYTES, MAX_HEADER_BYTES

__all__ = [
    "ACTIVITIES",
    "BUNDLED",
    "FEDGA_DATASETS",
    "MAX_COLUMNS",
    "MAX_FILE_BYTES",
    "MAX_HEADER_BYTES",
    "Dataset",
    "FeatureKind",
    "available",
    "categories_of_files",
    "declaration_text",
    "load",
    "load_client_file",
    "load_fedga",
    "load_hugadb",
    "load_site_data",
    "partition",
    "save_client_file",
    "synthetic",
    "verify_bundled",
]
