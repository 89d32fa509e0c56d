"""Stores, datasets and ragged batches, as numpy arrays."""

import os

import numpy as np

from . import _zrecord
from ._dtypes import NAMES, from_numpy, little_endian, to_numpy


def is_url(path):
    """Whether `path` names object storage (`s3://…`) rather than a folder."""
    return isinstance(path, str) and "://" in path


def _indices(indices):
    """Indices as the uint64 bytes the native calls take; negative indices
    are refused rather than wrapped."""
    array = np.asarray(indices)
    if array.ndim != 1:
        array = array.reshape(-1)
    if array.size and array.dtype.kind == "i" and array.min() < 0:
        raise IndexError(f"negative index {int(array.min())}")
    if array.size and array.dtype.kind not in "iu":
        raise TypeError(f"indices must be integers, not {array.dtype}")
    return array.astype("<u8", copy=False).tobytes()


class Ragged:
    """Variable-shape records gathered in packed form: every record's
    values end to end in `values`, record `k` at `offsets[k]:offsets[k+1]`
    with shape `shapes[k]`. `batch[k]` is record `k` as an array view."""

    def __init__(self, values, offsets, dims=None, ranks=None):
        self.values = values
        self.offsets = offsets
        # Every record's dimensions end to end and each one's count; None
        # when every record is 1-D (its length is its shape).
        self._dims = dims
        self._ranks = ranks

    @classmethod
    def _from_parts(cls, dtype, parts):
        values, offsets, dims, ranks = parts
        if dims is None:
            return cls(_lent(values, dtype), np.frombuffer(offsets, dtype="<u8"))
        return cls(
            _lent(values, dtype),
            np.frombuffer(offsets, dtype="<u8"),
            np.frombuffer(dims, dtype="<u8"),
            np.frombuffer(ranks, dtype="<u8"),
        )

    def __len__(self):
        return len(self.offsets) - 1

    @property
    def lengths(self):
        """Elements per record."""
        return np.diff(self.offsets)

    @property
    def shapes(self):
        """Every record's shape, as tuples."""
        if self._dims is None:
            return [(int(n),) for n in self.lengths]
        ends = np.cumsum(self._ranks)
        starts = ends - self._ranks
        return [tuple(int(d) for d in self._dims[s:e]) for s, e in zip(starts, ends)]

    def __getitem__(self, k):
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(f"record {k} of a batch of {len(self)}")
        values = self.values[int(self.offsets[k]) : int(self.offsets[k + 1])]
        if self._dims is None:
            return values
        start = int(np.sum(self._ranks[:k]))
        shape = tuple(int(d) for d in self._dims[start : start + int(self._ranks[k])])
        return values.reshape(shape)

    def __iter__(self):
        return (self[k] for k in range(len(self)))

    def _shape_bytes(self):
        """Dims and ranks as the native appends take them."""
        if self._dims is None:
            lengths = self.lengths.astype("<u8")
            return lengths.tobytes(), np.ones(len(lengths), "<u8").tobytes()
        return self._dims.astype("<u8").tobytes(), self._ranks.astype("<u8").tobytes()

    def __repr__(self):
        return f"Ragged({len(self)} records, {len(self.values)} {self.values.dtype} values)"


class _Out:
    """The `out=` array of a store's last gather, checked once: its address
    and size stay valid while this holds a reference (numpy refuses to
    resize or free an array another reference holds), so later gathers
    into the same array repeat only the cheap checks. Looking the address
    up again costs more than gathering a small batch."""

    def __init__(self):
        self.array, self.address, self.nbytes = None, 0, 0

    def check(self, out, dtype, shape):
        """The address and size of `out`, once it is checked to be an
        array the native gather may write: of `dtype` and `shape`,
        C-contiguous, aligned, writeable and little-endian."""
        if not isinstance(out, np.ndarray):
            raise TypeError(f"out must be a numpy array, not {type(out).__name__}")
        if out.dtype != dtype or out.shape != shape:
            raise ValueError(f"out is {out.dtype} {out.shape}; this gather needs {dtype} {shape}")
        flags = out.flags
        if not flags.writeable:
            raise ValueError("out must be C-contiguous, aligned and writeable")
        if out is not self.array:
            if not (flags.c_contiguous and flags.aligned):
                raise ValueError("out must be C-contiguous, aligned and writeable")
            if out.dtype.byteorder == ">":
                raise ValueError("out must be little-endian")
            self.array = None  # until the new one is checked whole
            self.address, self.nbytes = out.__array_interface__["data"][0], out.nbytes
            self.array = out
        return self.address, self.nbytes


def _gather(native, args, stream, out_cache, indices, out):
    """Records `indices` of a store or dataset stream (`native`'s gathers,
    called with `args` first): see `Store.gather`."""
    kind, dtype, shape = stream
    raw = _indices(indices)
    if kind == "dense":
        if out is None:
            return _lent(native.gather_dense(*args, raw), dtype)
        address, nbytes = out_cache.check(out, to_numpy(dtype), (len(raw) // 8, *shape))
        native.gather_dense_into(*args, raw, address, nbytes)
        return out
    if out is not None:
        raise TypeError("out= is for dense records: a ragged batch's size is known only after it is read")
    return Ragged._from_parts(dtype, native.gather_ragged(*args, raw))


def _lent(array, dtype):
    """A numpy array over a buffer Rust lends (`_zrecord.Array`), of zrecord
    dtype `dtype`; it keeps the buffer alive."""
    values = np.asarray(array)
    want = to_numpy(dtype)
    return values if values.dtype == want else values.view(want)


class Store:
    """A zrecord store: dense (every record one shape) or ragged (each
    record its own), of one dtype. Open one with `zrecord.open`, make one
    with `zrecord.create`. A store is a context manager; leaving it closes
    the store and releases its lock."""

    def __init__(self, native):
        self._native = native
        # What a store holds never changes: read once, not per gather.
        self._kind, self._dtype = native.kind, native.dtype
        self._shape = None if native.shape is None else tuple(native.shape)
        self._out = _Out()

    def __len__(self):
        return len(self._native)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        n = self._native
        shape = "" if n.shape is None else f" {tuple(n.shape)}"
        return f"Store({str(n.path)!r}, {n.kind} {n.dtype}{shape}, {len(n)} records)"

    @property
    def path(self):
        return self._native.path

    @property
    def kind(self):
        """`"dense"` or `"ragged"`."""
        return self._native.kind

    @property
    def dtype(self):
        """The records' numpy dtype."""
        return to_numpy(self._native.dtype)

    @property
    def shape(self):
        """A dense record's shape; `None` for a ragged store."""
        shape = self._native.shape
        return None if shape is None else tuple(shape)

    def info(self):
        """Records, sizes, codec and format, as a dict."""
        return self._native.info()

    def gather(self, indices, out=None):
        """Records `indices` (any order, repeats allowed): one array of
        shape `(len(indices), *shape)` for a dense store, decoded straight
        into the array's buffer with the GIL released; a `Ragged` batch
        for a ragged store.

        `out` (dense only): an array of that shape and the store's dtype,
        C-contiguous and writeable, to gather into instead of a new one —
        a loop that reuses one batch buffer allocates nothing."""
        stream = (self._kind, self._dtype, self._shape)
        return _gather(self._native, (), stream, self._out, indices, out)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.gather(np.arange(*index.indices(len(self))))
        if index < 0:
            index += len(self)
        records = self.gather([index])
        return records[0]

    def append(self, records):
        """Appends records; returns the index of the first.

        A dense store takes an array of shape `(n, *shape)` (or one record
        of `shape`); a ragged store takes a sequence of arrays, or a
        `Ragged` batch. Either takes a pyarrow array, mapped as
        `zrecord.arrow` maps a column (strings and binary as `u8` records).
        Records of another dtype are cast where no value changes, else
        refused."""
        if type(records).__module__.startswith("pyarrow"):
            from .arrow import records_of

            records = records_of("(the array)", records, (self._kind, self._dtype, self._shape))
        n = self._native
        dtype = to_numpy(n.dtype)
        if n.kind == "dense":
            array = np.asarray(records)
            shape = tuple(n.shape)
            if array.shape == shape:
                array = array.reshape((1, *shape))
            if array.shape[1:] != shape:
                raise ValueError(
                    f"records of shape {array.shape[1:]} for a store of shape {shape}"
                )
            array = little_endian(_cast(array, dtype))
            return n.append_dense(n.dtype, array.tobytes())
        if isinstance(records, Ragged):  # already packed: no concatenation
            values = little_endian(_cast(records.values, dtype))
            return n.append_ragged(
                n.dtype,
                values.tobytes(),
                *records._shape_bytes(),
            )
        arrays = [np.asarray(r) for r in records]
        values = np.concatenate([a.reshape(-1) for a in arrays]) if arrays else np.zeros(0, dtype)
        values = little_endian(_cast(values, dtype))
        dims = np.array([d for a in arrays for d in a.shape], dtype="<u8")
        ranks = np.array([a.ndim for a in arrays], dtype="<u8")
        return n.append_ragged(n.dtype, values.tobytes(), dims.tobytes(), ranks.tobytes())

    def sync(self):
        """Makes every record appended so far durable."""
        self._native.sync()

    def delete(self, indices):
        """Deletes records `indices` (numbered as before the call) by moving
        the last live records into the holes, so the records stay
        `0..len`. Returns how many were deleted; `compact` reclaims the
        space."""
        return self._native.delete(_indices(indices))

    def compact(self):
        """Rewrites the store without its deleted records' bytes."""
        return self._native.compact()

    def verify(self):
        """Reads and checks every record; raises on the first bad one."""
        return self._native.verify()

    def close(self):
        """Closes the store and releases its lock."""
        self._native.close()


def _cast(array, dtype):
    """`array` as `dtype`: a safe cast, or one whose values all survive it
    (`np.arange(3)` into an int32 store); anything else is refused."""
    if array.dtype == dtype:
        return array
    if np.can_cast(array.dtype, dtype, "safe") or array.size == 0:
        return array.astype(dtype)
    if np.can_cast(array.dtype, dtype, "same_kind") or (
        array.dtype.kind in "iub" and dtype.kind in "iu"
    ):
        cast = array.astype(dtype)
        if np.array_equal(cast.astype(array.dtype), array):
            return cast
    raise TypeError(f"cannot cast {array.dtype} to the store's {dtype} without loss")


class Dataset:
    """A sharded dataset folder (shards and their `dataset.zr`), read-only:
    its streams read as one index space."""

    def __init__(self, native):
        self._native = native
        self._streams = {
            name: (kind, dtype, None if shape is None else tuple(shape))
            for name, kind, dtype, shape in native.streams()
        }
        self._out = _Out()

    def __len__(self):
        return len(self._native)

    def __repr__(self):
        return f"Dataset({len(self)} records, streams {list(self._streams)})"

    @property
    def streams(self):
        """`{name: (kind, numpy dtype, shape or None)}`."""
        return {name: (k, to_numpy(d), s) for name, (k, d, s) in self._streams.items()}

    @property
    def shards(self):
        """`[(folder, records)]` in index order."""
        return self._native.shards()

    def gather(self, stream, indices, out=None):
        """Records `indices` of `stream`: as `Store.gather`."""
        if stream not in self._streams:
            raise KeyError(f"no stream {stream!r}: the dataset has {', '.join(self._streams)}")
        return _gather(self._native, (stream,), self._streams[stream], self._out, indices, out)


def open(path, read_only=False, *, cache=None, cache_limit=0, pin=False, options=None):  # noqa: A001
    """Opens a store folder (holding `store.zr`) as a `Store`, or a dataset
    folder (holding `dataset.zr`) as a read-only `Dataset`.

    `path` may be an object-storage URL (`s3://bucket/train`, or an
    S3-compatible server through `AWS_ENDPOINT_URL`): it opens read-only,
    through a node cache when `cache` names a folder (`cache_limit` bytes,
    shared by the node's processes; `pin` keeps it from eviction).
    `options` are object-store settings beside the environment's
    (`{"aws_region": "eu-west-1"}`)."""
    if is_url(path):
        native = _zrecord.open_url(
            path, None if cache is None else os.fspath(cache), cache_limit, pin, options
        )
        return Dataset(native) if isinstance(native, _zrecord.Dataset) else Store(native)
    path = os.fspath(path)
    if os.path.exists(os.path.join(path, "dataset.zr")):
        return Dataset(_zrecord.Dataset.open(path))
    return Store(_zrecord.Store.open(path, read_only))


def create(path, dtype, shape=None, *, ragged=False, codec="zstd", zstd_level=None):
    """Creates an empty store at `path` (a folder that must not exist or be
    empty): dense with records of `shape`, or ragged with `ragged=True`.
    `dtype` is a numpy dtype (or a zrecord name: `"u8"`, `"f32"`, …);
    `codec` is `"zstd"` (the default) or `"raw"`."""
    if ragged == (shape is not None):
        raise ValueError("give a dense store's shape, or ragged=True, not both")
    name = dtype if isinstance(dtype, str) and dtype in NAMES else from_numpy(dtype)
    native = _zrecord.Store.create(
        os.fspath(path),
        name,
        None if shape is None else [int(d) for d in shape],
        codec,
        zstd_level,
    )
    return Store(native)


def join(path, options=None):
    """Checks the shard folders of the dataset folder or object-storage URL
    `path` and writes its `dataset.zr` (for a URL: uploads it, `options` as
    in `open`); returns `[(shard folder, records)]`."""
    if is_url(path):
        return _zrecord.join_url(path, options)
    return _zrecord.join(os.fspath(path))


def push(local, url, options=None):
    """Uploads the store, folder of stores or dataset at `local` into the
    empty object-storage folder `url`, each header last (so an interrupted
    push never opens); returns the bytes uploaded."""
    return _zrecord.push(os.fspath(local), url, options)
