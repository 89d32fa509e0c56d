"""Arrow tables into dataset shards: the per-task writer and the driver's
commit that every engine sink (Ray Data, Daft) is built on.

A column maps to a stream by its Arrow type:

=====================================  =====================================
Arrow type                             stream
=====================================  =====================================
bool, integers, floats (half too)      dense, one value per record
fixed_size_list of those (nested),     dense, records of the list's shape
fixed_shape_tensor
list / large_list of a numeric type    ragged, 1-D records (2-D for a list
                                       of fixed-size lists)
string, binary (large too)             ragged ``u8``: the bytes (encoded
                                       images stay encoded)
=====================================  =====================================

Anything else, and any null, is a ``TypeError``/``ValueError`` naming the
column. ``decode={column: S}`` turns a binary column of encoded images
(JPEG, PNG) into a dense ``u8`` stream of ``[S, S, 3]`` RGB records instead
— shorter side scaled to ``S``, then the centre ``S × S``, as ``zrecord
import images --resize S`` does — decoded in parallel; an image that does
not decode stops the task with an error naming its row.

Each stream's codec is ``codec`` when given; by default ``raw`` for a
binary column of encoded images kept as bytes (JPEG, PNG, WebP and GIF are
compressed already: zstd makes them larger and slower to read) and
``zstd`` for everything else.

A job writes each task's rows with a ``ShardWriter`` into a hidden
``.pending-…`` folder that becomes a shard folder only when the task
finishes; ``commit`` then removes what failed attempts left and writes
``dataset.zr`` (``zrecord.join``). A failed job never writes
``dataset.zr``, so nothing half-written ever opens as a dataset.

The dataset may be an object-storage URL (``s3://bucket/train``): each
task then writes its shard in a local staging folder and pushes it to
``URL/part-…`` when it finishes (headers last), and ``commit`` joins the
shards in place and uploads ``dataset.zr`` last of all. ``options`` are the
object store's settings (``{"aws_endpoint": …}``) beside the environment's
``AWS_*`` variables, which every worker must see.
"""

import os
import shutil
import tempfile
import time
import uuid

import numpy as np

from . import _zrecord
from ._dtypes import from_numpy
from ._store import Ragged, Store, is_url, join

PENDING = ".pending-"
PART = "part-"
MANIFEST = "dataset.zr"


def _pa():
    try:
        import pyarrow as pa
    except ImportError as e:  # pragma: no cover - pyarrow is the arrow extra
        raise ImportError("zrecord.arrow needs pyarrow: pip install pyarrow") from e
    return pa


def stream_of(column, arrow_type):
    """The stream column `column` of `arrow_type` maps to, as
    `(kind, dtype name, shape)`: `shape` is a dense record's shape, `None`
    for a ragged stream."""
    pa = _pa()
    t = arrow_type
    if isinstance(t, pa.ExtensionType) and hasattr(t, "shape"):
        shape = tuple(int(d) for d in t.shape)
        return ("dense", _numeric(column, t.value_type), shape)
    if _is_scalar(t):
        return ("dense", _numeric(column, t), ())
    if pa.types.is_fixed_size_list(t):
        shape = []
        while pa.types.is_fixed_size_list(t):
            shape.append(t.list_size)
            t = t.value_type
        return ("dense", _numeric(column, t), tuple(shape))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = t.value_type
        if pa.types.is_fixed_size_list(inner) and _is_scalar(inner.value_type):
            return ("ragged", _numeric(column, inner.value_type), None)
        return ("ragged", _numeric(column, inner), None)
    if any(
        f(t)
        for f in (
            pa.types.is_string,
            pa.types.is_large_string,
            pa.types.is_binary,
            pa.types.is_large_binary,
        )
    ):
        return ("ragged", "u8", None)
    raise TypeError(
        f"column {column!r}: Arrow type {t} has no zrecord stream (numbers, fixed-size "
        "lists and tensors of numbers are dense; lists of numbers, strings and binary are ragged)"
    )


def _is_scalar(t):
    pa = _pa()
    return pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t)


def _numeric(column, t):
    pa = _pa()
    if not _is_scalar(t):
        raise TypeError(f"column {column!r}: elements of Arrow type {t} have no zrecord dtype")
    if pa.types.is_boolean(t):
        return "bool"
    return from_numpy(t.to_pandas_dtype())


def _no_nulls(column, array):
    if array.null_count:
        raise ValueError(f"column {column!r}: {array.null_count} null values cannot be stored")


def records_of(column, array, stream):
    """The records of Arrow `array` (column `column`) for `stream`, as
    `Store.append` takes them."""
    pa = _pa()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    _no_nulls(column, array)
    kind, dtype, shape = stream
    if kind == "dense":
        if isinstance(array.type, pa.ExtensionType):
            array = array.storage
        values = array
        while pa.types.is_fixed_size_list(values.type):
            _no_nulls(column, values)
            values = values.flatten()
        _no_nulls(column, values)
        flat = values.to_numpy(zero_copy_only=False)
        return flat.reshape((len(array), *shape))
    t = array.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        offsets = array.offsets.to_numpy()
        lengths = np.diff(offsets).astype("<u8")
        values = array.flatten()
        _no_nulls(column, values)
        if pa.types.is_fixed_size_list(values.type):
            width = values.type.list_size
            values = values.flatten()
            dims = np.stack([lengths, np.full_like(lengths, width)], axis=1).reshape(-1)
            ranks = np.full(len(array), 2, dtype="<u8")
        else:
            dims = lengths
            ranks = np.ones(len(array), dtype="<u8")
        flat = values.to_numpy(zero_copy_only=False)
        return Ragged(flat, None, dims, ranks)
    flat, lengths = _bytes_of(array)
    return Ragged(flat, None, lengths, np.ones(len(array), dtype="<u8"))


def _bytes_of(array):
    """A string or binary array's records end to end, and their lengths
    (`uint64`): its offsets and data buffers, as they are."""
    pa = _pa()
    t = array.type
    wide = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype="<i8" if wide else "<i4")
    offsets = offsets[array.offset : array.offset + len(array) + 1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else None
    flat = (
        data[offsets[0] : offsets[-1]] if data is not None and len(offsets) else np.zeros(0, np.uint8)
    )
    return flat, np.diff(offsets).astype("<u8")


def _streams(schema, columns):
    """`{column: stream name}` for `columns` (None: every column, a list of
    names, or a dict column → stream)."""
    if columns is None:
        return {name: name for name in schema.names}
    if isinstance(columns, dict):
        mapping = dict(columns)
    else:
        mapping = {name: name for name in columns}
    missing = [c for c in mapping if c not in schema.names]
    if missing:
        raise KeyError(f"columns {missing} are not in the data, which has {schema.names}")
    return mapping


def _is_binary(t):
    pa = _pa()
    return pa.types.is_binary(t) or pa.types.is_large_binary(t)


# The first bytes of image formats that are compressed already.
_IMAGE_MAGIC = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a")


def _encoded_image(array):
    """Whether the first non-empty record of binary `array` is an encoded
    image (JPEG, PNG, WebP, GIF)."""
    for k in range(len(array)):
        head = array[k].as_py()[:12]
        if head:
            webp = head[:4] == b"RIFF" and head[8:12] == b"WEBP"
            return webp or head.startswith(_IMAGE_MAGIC)
    return False


def _check_images(column, arrow_type):
    if not _is_binary(arrow_type):
        raise TypeError(
            f"column {column!r}: only binary columns hold encoded images to decode, not {arrow_type}"
        )


def decoded_images(column, array, size):
    """The encoded images of binary `array` (column `column`) decoded into
    an `(n, size, size, 3)` `uint8` array: shorter side scaled to `size`,
    then the centre `size × size`."""
    _check_images(column, array.type)
    pa = _pa()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    _no_nulls(column, array)
    flat, lengths = _bytes_of(array)
    try:
        pixels = _zrecord.decode_images(flat.tobytes(), lengths.tobytes(), size)
    except ValueError as e:
        raise ValueError(f"column {column!r}: {e}") from None
    return np.frombuffer(pixels, dtype=np.uint8).reshape(len(array), size, size, 3)


class ShardWriter:
    """Writes Arrow tables or record batches into one new shard of the
    dataset folder or URL `path`: one store per mapped column, created from
    the first batch's types. `decode` and `codec` as the module says.
    `close()` makes the shard appear whole; `abort()` removes it. For a URL
    the shard is built under `staging` (a local folder; the system's
    temporary folder by default) and pushed by `close()`."""

    def __init__(
        self, path, name=None, columns=None, codec=None, options=None, staging=None, decode=None
    ):
        self.path = path if is_url(path) else os.fspath(path)
        # Unnamed shards sort by when their writer started: a job that
        # writes its parts one after another keeps its rows' order.
        self.name = name or f"{PART}{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"
        self._options = options
        if is_url(self.path):
            self._staging = tempfile.mkdtemp(prefix=".zrecord-shard-", dir=staging)
            self._pending = os.path.join(self._staging, self.name)
        else:
            self._staging = None
            self._pending = os.path.join(self.path, PENDING + self.name)
        self._columns = columns
        self._codec = codec
        self._decode = {column: int(size) for column, size in (decode or {}).items()}
        self._stores = None
        self._pushing = False
        self.rows = 0
        os.makedirs(self._pending)

    def write(self, data):
        """Appends the rows of a pyarrow `Table` or `RecordBatch`."""
        if self._stores is None:
            self._open(data)
        for column, (stream, store) in self._stores.items():
            array = data.column(column)
            if column in self._decode:
                store.append(decoded_images(column, array, self._decode[column]))
            else:
                store.append(records_of(column, array, stream))
        self.rows += data.num_rows

    def _open(self, data):
        schema = data.schema
        mapping = _streams(schema, self._columns)
        unknown = [c for c in self._decode if c not in mapping]
        if unknown:
            raise KeyError(f"decode names columns {unknown} that are not written ({list(mapping)})")
        stores = {}
        for column, name in mapping.items():
            arrow_type = schema.field(column).type
            if column in self._decode:
                _check_images(column, arrow_type)
                size = self._decode[column]
                stream = ("dense", "u8", (size, size, 3))
            else:
                stream = stream_of(column, arrow_type)
            kind, dtype, shape = stream
            codec = self._codec
            if codec is None:
                kept_encoded = column not in self._decode and _is_binary(arrow_type)
                image = kept_encoded and _encoded_image(data.column(column))
                codec = "raw" if image else "zstd"
            native = _zrecord.Store.create(
                os.path.join(self._pending, name),
                dtype,
                None if kind == "ragged" else list(shape),
                codec,
                None,
            )
            stores[column] = (stream, Store(native))
        self._stores = stores

    def close(self):
        """Syncs the stores and moves (or pushes) the shard into place:
        returns `(folder, rows)`, or `None` (and leaves nothing) when no
        row came."""
        if not self.rows:
            self.abort()
            return None
        for _, store in self._stores.values():
            store.sync()
            store.close()
        if self._staging is None:
            os.rename(self._pending, os.path.join(self.path, self.name))
            _sync_dir(self.path)
        else:
            self._pushing = True
            _zrecord.push(self._pending, _child(self.path, self.name), self._options)
            shutil.rmtree(self._staging, ignore_errors=True)
        return (self.name, self.rows)

    def abort(self):
        """Removes everything this writer wrote."""
        for _, store in (self._stores or {}).values():
            store.close()
        shutil.rmtree(self._staging or self._pending, ignore_errors=True)
        if self._pushing:  # a push that failed part way: its objects go too
            try:
                _zrecord.remove_url(_child(self.path, self.name), self._options)
            except Exception:  # noqa: BLE001 - the driver's commit or abort clears it
                pass


def _child(url, name):
    return f"{url.rstrip('/')}/{name}"


def _sync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _entries(path, options):
    """The names directly in the folder or URL `path` (none if missing)."""
    if is_url(path):
        listing = _zrecord.list_url(path, options)
        return sorted({name.split("/", 1)[0] for name, _ in listing})
    return os.listdir(path) if os.path.isdir(path) else []


def _remove(path, entry, options):
    """Removes the file or folder `entry` of the folder or URL `path`."""
    if is_url(path):
        _zrecord.remove_url(_child(path, entry), options)
    elif os.path.isdir(os.path.join(path, entry)):
        shutil.rmtree(os.path.join(path, entry), ignore_errors=True)
    else:
        os.remove(os.path.join(path, entry))


def _listed_shards(path, options):
    """The shard folders the `dataset.zr` at `path` lists (read alone)."""
    return [folder for folder, _ in _zrecord.manifest_shards(os.fspath(path), options)]


def _location(path):
    return path if is_url(path) else os.fspath(path)


def prepare(path, options=None, overwrite=False):
    """Driver side, before any task: makes the dataset folder or URL `path`,
    which must not exist, be empty or hold only what a failed job left
    (shard and pending folders without `dataset.zr`, removed here). With
    `overwrite`, a dataset there is removed first: its `dataset.zr` (so it
    no longer opens), then the shard folders it lists."""
    path = _location(path)
    if not is_url(path):
        os.makedirs(path, exist_ok=True)
    entries = _entries(path, options)
    replaced = []
    if overwrite and MANIFEST in entries:
        replaced = [MANIFEST] + _listed_shards(path, options)
    others = [e for e in entries if not e.startswith((PENDING, PART)) and e not in replaced]
    if others:
        hint = "" if overwrite else "; overwrite replaces a dataset"
        raise FileExistsError(
            f"{path}: the folder holds {sorted(others)[:3]}; a sink writes a new dataset{hint}"
        )
    for entry in replaced:  # dataset.zr first: what is left never opens
        _remove(path, entry, options)
    abort(path, options)


def commit(path, parts, options=None):
    """Driver side, after every task succeeded: keeps exactly the shard
    folders `parts` (the names the tasks reported), removes what failed
    attempts left, and writes `dataset.zr`. Returns `[(folder, records)]`."""
    path = _location(path)
    keep = {p for p in parts if p}
    if not keep:
        raise ValueError(f"{path}: the job wrote no rows, so there is no dataset to commit")
    for entry in _entries(path, options):
        if entry.startswith(PENDING) or (entry.startswith(PART) and entry not in keep):
            _remove(path, entry, options)
    return join(path, options)


def abort(path, options=None):
    """Driver side, after a failed job: removes the shard and pending
    folders it left. A dataset already there (a job refused by `prepare`)
    keeps every shard its `dataset.zr` lists."""
    path = _location(path)
    entries = _entries(path, options)
    kept = set()
    if MANIFEST in entries:
        kept = set(_listed_shards(path, options))
    for entry in entries:
        if entry.startswith((PENDING, PART)) and entry not in kept:
            _remove(path, entry, options)


def write_table(
    table,
    path,
    columns=None,
    codec=None,
    rows_per_shard=None,
    options=None,
    decode=None,
    overwrite=False,
):
    """Writes a pyarrow `Table` as a new dataset at the folder or URL
    `path` in one process: shards of `rows_per_shard` rows (one shard by
    default); `columns`, `codec` and `decode` as `ShardWriter` takes them;
    `overwrite` replaces a dataset there (see `prepare`)."""
    prepare(path, options, overwrite)
    parts = []
    try:
        step = rows_per_shard or max(table.num_rows, 1)
        for k, start in enumerate(range(0, table.num_rows, step)):
            writer = ShardWriter(path, f"{PART}{k:05d}", columns, codec, options, decode=decode)
            try:
                writer.write(table.slice(start, step))
                parts.append(writer.close()[0])
            except BaseException:
                writer.abort()
                raise
        return commit(path, parts, options)
    except BaseException:
        abort(path, options)
        raise
