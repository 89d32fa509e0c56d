"""Spark 4 writes datasets through zrecord's Python data source: 4 tasks
over the Parquet fixtures give records equal to the source rows; a task
that raises leaves no manifest, and the next job succeeds."""

import os
import shutil

import numpy as np
import pytest

import zrecord
from conftest import PARQUET, module, need


@pytest.fixture(scope="module")
def spark():
    module("pyspark")
    need(shutil.which("java"), "no Java runtime for Spark (Debian: openjdk-17-jre-headless)")
    import sys

    from pyspark.sql import SparkSession

    # Spark's Python workers must import this zrecord: this interpreter.
    os.environ["PYSPARK_PYTHON"] = sys.executable

    import zrecord.spark

    session = (
        SparkSession.builder.master("local[2]")
        .appName("zrecord-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(zrecord.spark.DataSource)
    yield session
    session.stop()


def test_spark_writes_four_shards_equal_to_the_source_rows(spark, tmp_path):
    import pyarrow.parquet as pq

    table = pq.read_table(PARQUET / "kjv_genesis.parquet")
    df = spark.read.parquet(str(PARQUET / "kjv_genesis.parquet")).repartition(4, "verse")
    df = df.sortWithinPartitions("chapter", "verse")
    path = tmp_path / "genesis"
    df.write.format("zrecord").mode("append").option("columns", "text,verse:verses").save(str(path))
    d = zrecord.open(path)
    assert len(d) == 1533 and len(d.shards) == 4
    assert set(d.streams) == {"text", "verses"}
    rows = sorted(
        zip(
            d.gather("verses", np.arange(len(d))).tolist(),
            [bytes(t).decode() for t in d.gather("text", np.arange(len(d)))],
        )
    )
    assert rows == sorted(zip(table.column("verse").to_pylist(), table.column("text").to_pylist()))


def test_spark_a_failed_task_leaves_no_dataset_and_the_next_job_succeeds(spark, tmp_path):
    from pyspark.sql.functions import col, udf

    @udf("int")
    def explode_on(v):
        if v == 1000:
            raise RuntimeError("the task dies mid-write")
        return v

    df = spark.range(0, 2000, numPartitions=4).withColumn("x", col("id").cast("int"))
    path = tmp_path / "ids"
    with pytest.raises(Exception, match="the task dies mid-write"):
        df.withColumn("x", explode_on(col("x"))).write.format("zrecord").mode("append").save(str(path))
    assert not (path / "dataset.zr").exists()
    # Tasks still running when the job fails may finish their shards after
    # the driver's cleanup: whatever is left never opens as a dataset, and
    # the next job clears it.
    with pytest.raises(zrecord.ZrecordError):
        zrecord.open(path)
    df.write.format("zrecord").mode("append").save(str(path))
    d = zrecord.open(path)
    assert sorted(d.gather("id", np.arange(2000)).tolist()) == list(range(2000))


def test_spark_writes_straight_to_object_storage(spark, server):
    _, bucket, options = server
    url = f"s3://{bucket}/ids"
    df = spark.range(0, 1000, numPartitions=4)
    writer = df.write.format("zrecord").mode("append")
    for key, value in options.items():
        writer = writer.option(f"storage.{key}", value)
    writer.save(url)
    d = zrecord.open(url, options=options)
    assert len(d) == 1000 and len(d.shards) == 4
    assert sorted(d.gather("id", np.arange(1000)).tolist()) == list(range(1000))


def test_spark_overwrite_replaces_the_dataset(spark, tmp_path):
    path = str(tmp_path / "ids")
    spark.range(0, 100, numPartitions=4).write.format("zrecord").mode("append").save(path)
    spark.range(0, 10, numPartitions=2).write.format("zrecord").mode("overwrite").save(path)
    d = zrecord.open(path)
    assert len(d) == 10 and len(d.shards) == 2
    assert sorted(d.gather("id", np.arange(10)).tolist()) == list(range(10))
