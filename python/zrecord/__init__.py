"""zrecord from Python: typed record stores read and written as numpy
arrays, the deterministic prefetching loader, and sharded writers for Ray
Data, Daft and Spark — to a folder or to object storage — whose datasets
the Rust loader reads unchanged.

>>> import numpy as np, zrecord
>>> with zrecord.create("/tmp/doctest-labels", np.int64, shape=()) as labels:  # doctest: +SKIP
...     labels.append(np.arange(10))
...     labels.gather([3, 1])
array([3, 1])
"""

from ._store import Dataset, Ragged, Store, create, join, open, push  # noqa: A004
from ._zrecord import FORMAT_VERSION, ZrecordError
from .loader import Batch, Loader

__all__ = [
    "FORMAT_VERSION",
    "Batch",
    "Dataset",
    "Loader",
    "Ragged",
    "Store",
    "ZrecordError",
    "create",
    "join",
    "open",
    "push",
]
