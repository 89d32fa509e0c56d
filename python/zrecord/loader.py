"""The loader: endless, prefetching, deterministic batches — the Rust
loader's, index for index."""

import json
import os

import numpy as np

from . import _zrecord
from ._store import Dataset, Ragged, _indices, _lent
from ._store import open as open_


class Batch(dict):
    """One batch: `{stream name: array}` — a numpy array of shape
    `(batch, *shape)` for a dense stream, a `Ragged` batch for a ragged one
    — with the `step` it belongs to and the dataset `indices` it holds."""

    def __init__(self, step, indices, columns):
        super().__init__(columns)
        self.step = step
        self.indices = indices


class Loader:
    """Batches of a dataset folder (or `Dataset`, or a dataset's URL —
    `zrecord.open(url, cache=…)` for a node cache) or of named stores
    (`{name: store folder}`), read by Rust worker threads ahead of the
    consumer.

    `batch_size` is the global batch: with `rank` and `world_size` (taken
    from the launcher's `RANK` and `WORLD_SIZE` when not given) each rank
    gets its share of every global batch. `mode` is `"cyclic"` (a fresh
    permutation each epoch, the default), `"iid"`, `"sequential"` or
    `"block"` (with `block_size` and `window_blocks`); `seed` keys the
    order. The same configuration gives the same indices at every step as
    the Rust loader, on any number of workers. `subset` samples only those
    record indices.

    `state()` is a small dict; `Loader(..., state=s)` continues with exactly
    the next batch, on any world size.

    >>> loader = Loader("data/mnist", batch_size=256, seed=7)  # doctest: +SKIP
    >>> batch = next(loader)                                     # doctest: +SKIP
    >>> batch["images"].shape, batch.step                        # doctest: +SKIP
    ((256, 28, 28), 0)
    """

    def __init__(
        self,
        source,
        batch_size,
        *,
        mode="cyclic",
        seed=0,
        rank=None,
        world_size=None,
        workers=None,
        prefetch=None,
        start_step=None,
        state=None,
        last_batch="wrap",
        block_size=None,
        window_blocks=None,
        subset=None,
    ):
        dataset, stores = None, None
        if isinstance(source, Dataset):
            dataset = source._native
        elif isinstance(source, dict):
            stores = {name: os.fspath(path) for name, path in source.items()}
        elif isinstance(source, str) and "://" in source:
            opened = open_(source)
            if not isinstance(opened, Dataset):
                raise ValueError(f"{source}: a store, not a dataset; give {{name: store}} folders")
            dataset = opened._native
        else:
            dataset = _zrecord.Dataset.open(os.fspath(source))
        self._native = _zrecord.Loader(
            batch_size,
            dataset=dataset,
            stores=stores,
            mode=mode,
            block_size=block_size,
            window_blocks=window_blocks,
            seed=seed,
            rank=rank,
            world_size=world_size,
            workers=workers,
            prefetch=prefetch,
            start_step=start_step,
            state=None if state is None else json.dumps(state),
            last_batch=last_batch,
            subset=None if subset is None else _indices(subset),
        )

    def __iter__(self):
        return self

    def __next__(self):
        step, indices, columns = self._native.next_batch()
        batch = {}
        for name, (kind, dtype, parts) in columns:
            if kind == "dense":
                batch[name] = _lent(parts[0], dtype)
            else:
                batch[name] = Ragged._from_parts(dtype, parts)
        return Batch(step, np.frombuffer(indices, dtype="<u8"), batch)

    def state(self):
        """Where the loader is: resume with `Loader(..., state=...)`."""
        return json.loads(self._native.state())

    @property
    def step(self):
        """The step of the next batch."""
        return self._native.step

    @property
    def batch_size(self):
        """Records in this rank's batches."""
        return self._native.batch_size

    @property
    def steps_per_epoch(self):
        """Steps in one epoch of global batches."""
        return self._native.steps_per_epoch
