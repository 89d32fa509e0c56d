"""A Daft sink: ``df.write_sink(zrecord.daft.DataSink(path))`` writes one
shard per write task and commits the dataset when every task is done.

>>> import daft, zrecord.daft                                   # doctest: +SKIP
>>> df = daft.read_parquet("s3://bucket/table/")                # doctest: +SKIP
>>> df.write_sink(zrecord.daft.DataSink("/data/table"))         # doctest: +SKIP
"""

import os

from daft.datatype import DataType
from daft.io.sink import DataSink as _DaftDataSink
from daft.io.sink import WriteResult
from daft.recordbatch.micropartition import MicroPartition
from daft.schema import Schema

from ._store import is_url
from .arrow import ShardWriter, abort, commit, prepare


class DataSink(_DaftDataSink):
    """Writes a Daft DataFrame as a zrecord dataset at `path` (a new or
    empty folder, or an object-storage URL): `columns`, `codec`, `options`,
    `decode`, `staging`, `overwrite` and the type mapping as in
    `zrecord.ray.Datasink`.
    The result is one row per shard: its folder and records."""

    def __init__(self, path, columns=None, codec=None, options=None, decode=None, staging=None, overwrite=False):
        self.path = path if is_url(path) else os.fspath(path)
        self.columns = columns
        self.codec = codec
        self.options = options
        self.decode = decode
        self.staging = staging
        self.overwrite = overwrite

    def name(self):
        return "zrecord"

    def schema(self):
        return Schema._from_field_name_and_types(
            [("shard", DataType.string()), ("records", DataType.int64())]
        )

    def start(self):
        prepare(self.path, self.options, self.overwrite)

    def write(self, micropartitions):
        writer = ShardWriter(
            self.path, None, self.columns, self.codec, self.options, self.staging, self.decode
        )
        try:
            for part in micropartitions:
                writer.write(part.to_arrow())
            part = writer.close()
        except BaseException:
            writer.abort()
            raise
        if part is not None:
            yield WriteResult(result=part[0], bytes_written=0, rows_written=part[1])

    def finalize(self, write_results):
        try:
            shards = commit(self.path, [r.result for r in write_results], self.options)
        except BaseException:
            abort(self.path, self.options)
            raise
        return MicroPartition.from_pydict(
            {"shard": [s for s, _ in shards], "records": [r for _, r in shards]}
        )
