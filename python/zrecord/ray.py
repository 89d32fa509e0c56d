"""A Ray Data sink: ``dataset.write_datasink(zrecord.ray.Datasink(path))``
writes one shard per write task and commits the dataset on the driver.

>>> import ray, zrecord.ray                                     # doctest: +SKIP
>>> ds = ray.data.read_parquet("s3://bucket/table/")            # doctest: +SKIP
>>> ds.write_datasink(zrecord.ray.Datasink("/data/table"))      # doctest: +SKIP
"""

import os
import uuid

from ray.data import Datasink as _RayDatasink
from ray.data.block import BlockAccessor

from ._store import is_url
from .arrow import PART, ShardWriter, abort, commit, prepare


class Datasink(_RayDatasink):
    """Writes a Ray dataset as a zrecord dataset at `path`: a new or empty
    folder every worker and the driver share, or an object-storage URL
    (`s3://bucket/train`; `options` are the object store's settings beside
    the workers' `AWS_*` variables). `columns` picks and renames columns
    (`{column: stream}` or a list); by default every column becomes a
    stream of its name, mapped by its Arrow type as `zrecord.arrow` says.
    `decode={column: S}` decodes a binary column of encoded images into
    `[S, S, 3]` RGB records; `codec` is each stream's codec (by default raw
    for encoded images kept as bytes, zstd otherwise); `staging` is where a
    task builds its shard before pushing it to a URL; `overwrite=True`
    replaces a dataset already there (its `dataset.zr` first, then its
    shards) instead of refusing it. Shards follow the write tasks' order;
    after the job, `shards` lists them as `(folder, records)`."""

    def __init__(self, path, columns=None, codec=None, options=None, decode=None, staging=None, overwrite=False):
        self.path = path if is_url(path) else os.fspath(path)
        self.columns = columns
        self.codec = codec
        self.options = options
        self.decode = decode
        self.staging = staging
        self.overwrite = overwrite
        self.shards = None

    def get_name(self):
        return "zrecord"

    def on_write_start(self, schema=None):
        prepare(self.path, self.options, self.overwrite)

    def write(self, blocks, ctx):
        name = f"{PART}{ctx.task_idx:05d}-{uuid.uuid4().hex[:12]}"
        writer = ShardWriter(
            self.path, name, self.columns, self.codec, self.options, self.staging, self.decode
        )
        try:
            for block in blocks:
                writer.write(BlockAccessor.for_block(block).to_arrow())
            part = writer.close()
        except BaseException:
            writer.abort()
            raise
        return None if part is None else part[0]

    def on_write_complete(self, write_result):
        self.shards = commit(self.path, write_result.write_returns, self.options)

    def on_write_failed(self, error):
        abort(self.path, self.options)
