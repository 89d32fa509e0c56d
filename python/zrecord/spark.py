"""A Spark 4 data source that writes zrecord datasets: each task writes
one shard (its rows arrive as Arrow record batches), and the driver
commits the dataset when every task succeeded.

>>> import zrecord.spark                                          # doctest: +SKIP
>>> spark.dataSource.register(zrecord.spark.DataSource)           # doctest: +SKIP
>>> df.write.format("zrecord").mode("append").save("/data/train")  # doctest: +SKIP

`mode("append")` writes a new dataset (into a new or empty folder);
`mode("overwrite")` first removes the dataset there: its `dataset.zr`,
then the shard folders it lists.

Options: `columns` picks and renames columns (`"image:images,label:labels"`
or `"image,label"`), `decode` decodes binary columns of encoded images into
`[S, S, 3]` RGB records (`"image:224"`), `codec` is `zstd` or `raw` for
every stream (by default raw for encoded images kept as bytes, zstd
otherwise). The target is a new or empty folder every executor and the
driver share, or an object-storage URL (`s3://bucket/train`); options named
`storage.KEY` are the object store's settings (`storage.aws_endpoint`),
beside the executors' `AWS_*` variables.
"""

import uuid
from dataclasses import dataclass
from typing import Optional

from pyspark.sql.datasource import DataSource as _SparkDataSource
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from .arrow import PART, ShardWriter, abort, commit, prepare


# Options with this prefix are the object store's settings.
STORAGE = "storage."


@dataclass
class ShardWritten(WriterCommitMessage):
    """A task's shard: its folder (None when the task had no rows)."""

    folder: Optional[str]
    rows: int


def _columns(option):
    if not option:
        return None
    mapping = {}
    for item in option.split(","):
        column, _, stream = item.strip().partition(":")
        mapping[column] = stream or column
    return mapping


def _sizes(option):
    """`"image:224,thumb:64"` as `{"image": 224, "thumb": 64}`."""
    if not option:
        return {}
    sizes = {}
    for item in option.split(","):
        column, _, size = item.strip().partition(":")
        if not size.isdigit() or int(size) == 0:
            raise ValueError(f"zrecord: decode wants column:size, such as image:224, not {item!r}")
        sizes[column] = int(size)
    return sizes


class DataSource(_SparkDataSource):
    """`format("zrecord")`: writes a DataFrame as a zrecord dataset."""

    @classmethod
    def name(cls):
        return "zrecord"

    def writer(self, schema, overwrite):
        return _Writer(self.options, overwrite)


class _Writer(DataSourceArrowWriter):
    def __init__(self, options, overwrite=False):
        self.path = options.get("path") or ""
        if not self.path:
            raise ValueError("zrecord: save(path) names the dataset folder to write")
        self.columns = _columns(options.get("columns"))
        self.codec = options.get("codec")
        self.decode = _sizes(options.get("decode"))
        self.storage = {
            key[len(STORAGE) :]: value
            for key, value in options.items()
            if key.lower().startswith(STORAGE)
        } or None
        prepare(self.path, self.storage, overwrite)  # on the driver, before any task

    def write(self, iterator):
        from pyspark import TaskContext

        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        name = f"{PART}{task:05d}-{uuid.uuid4().hex[:12]}"
        writer = ShardWriter(
            self.path, name, self.columns, self.codec, self.storage, decode=self.decode
        )
        try:
            for batch in iterator:
                writer.write(batch)
            part = writer.close()
        except BaseException:
            writer.abort()
            raise
        return ShardWritten(None if part is None else part[0], 0 if part is None else part[1])

    def commit(self, messages):
        commit(self.path, [m.folder for m in messages if m is not None], self.storage)

    def abort(self, messages):
        abort(self.path, self.storage)
