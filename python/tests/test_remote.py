"""Stores and datasets in object storage, from Python: written to an
S3-compatible server on loopback (the one `ZRECORD_S3_ENDPOINT` names; CI
starts moto), opened through a node cache, gathered and loaded."""

import os
import uuid

import numpy as np
import pytest

import zrecord
from conftest import module, put


def upload(folder, endpoint, bucket, prefix):
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            key = os.path.relpath(path, folder).replace(os.sep, "/")
            with open(path, "rb") as f:
                put(f"{endpoint}/{bucket}/{prefix}/{key}", f.read())


def test_a_dataset_in_object_storage_reads_and_loads(tmp_path, server):
    module("pyarrow")
    import pyarrow as pa

    from zrecord.arrow import write_table

    endpoint, bucket, options = server
    images = np.arange(50 * 12, dtype=np.uint8).reshape(50, 3, 4)
    table = pa.table({
        "image": pa.FixedSizeListArray.from_arrays(
            pa.FixedSizeListArray.from_arrays(pa.array(images.reshape(-1)), 4), 3),
        "text": pa.array([f"record {i}" * (1 + i % 3) for i in range(50)]),
    })  # fmt: skip
    write_table(table, tmp_path / "local", rows_per_shard=20)
    upload(tmp_path / "local", endpoint, bucket, "train")

    url = f"s3://{bucket}/train"
    dataset = zrecord.open(url, cache=tmp_path / "cache", cache_limit=64 << 20, options=options)
    assert isinstance(dataset, zrecord.Dataset) and len(dataset) == 50
    assert len(dataset.shards) == 3
    np.testing.assert_array_equal(dataset.gather("image", [49, 0, 21]), images[[49, 0, 21]])
    texts = [bytes(t).decode() for t in dataset.gather("text", [7, 8])]
    assert texts == [f"record {i}" * (1 + i % 3) for i in (7, 8)]
    assert any(os.scandir(tmp_path / "cache")), "the node cache holds what was read"

    loader = zrecord.Loader(dataset, 10, seed=3, rank=0, world_size=1)
    for _ in range(6):  # more than an epoch
        batch = next(loader)
        np.testing.assert_array_equal(batch["image"], images[batch.indices])

    store = zrecord.open(f"{url}/part-00001/image", options=options)
    assert isinstance(store, zrecord.Store) and len(store) == 20
    np.testing.assert_array_equal(store.gather([0]), images[[20]])


def test_what_is_not_there_says_so(server):
    _, bucket, options = server
    with pytest.raises(zrecord.ZrecordError, match="nothing there"):
        zrecord.open(f"s3://{bucket}/missing", options=options)
    with pytest.raises(zrecord.ZrecordError, match="bucket|Bucket"):
        zrecord.open(f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/x", options=options)


def digits_table(n=50):
    import pyarrow as pa

    images = np.arange(n * 12, dtype=np.uint8).reshape(n, 3, 4)
    table = pa.table({
        "image": pa.FixedSizeListArray.from_arrays(
            pa.FixedSizeListArray.from_arrays(pa.array(images.reshape(-1)), 4), 3),
        "label": pa.array(np.arange(n) % 10),
    })  # fmt: skip
    return images, table


def test_a_table_written_straight_to_object_storage_opens_there(tmp_path, server):
    module("pyarrow")
    from zrecord.arrow import PART, ShardWriter, write_table

    _, bucket, options = server
    images, table = digits_table()
    url = f"s3://{bucket}/written"
    shards = write_table(table, url, rows_per_shard=20, options=options)
    assert shards == [(f"{PART}{k:05d}", n) for k, n in enumerate([20, 20, 10])]
    dataset = zrecord.open(url, options=options)
    np.testing.assert_array_equal(dataset.gather("image", np.arange(50)), images)
    np.testing.assert_array_equal(dataset.gather("label", [13, 47]), [3, 7])

    # a dataset is never overwritten unless asked
    with pytest.raises(FileExistsError, match="dataset.zr"):
        write_table(table, url, options=options)
    assert len(zrecord.open(url, options=options)) == 50
    write_table(table.slice(0, 7), url, options=options, overwrite=True)
    assert len(zrecord.open(url, options=options)) == 7
    names = {name.split("/")[0] for name, _ in zrecord._zrecord.list_url(url, options)}
    assert names == {"dataset.zr", f"{PART}00000"}

    # a writer that fails after its push began leaves no objects
    writer = ShardWriter(f"s3://{bucket}/aborted", None, None, "zstd", options)
    writer.write(table)
    writer._pushing = True
    writer.abort()
    assert zrecord._zrecord.list_url(f"s3://{bucket}/aborted", options) == []


def test_a_failed_write_to_object_storage_leaves_no_dataset_and_the_next_succeeds(tmp_path, server):
    module("pyarrow")
    from zrecord import arrow

    _, bucket, options = server
    images, table = digits_table()
    url = f"s3://{bucket}/retried"
    arrow.prepare(url, options)
    done = arrow.ShardWriter(url, "part-00000", None, "zstd", options)
    done.write(table.slice(0, 30))
    assert done.close() == ("part-00000", 30)
    left = arrow.ShardWriter(url, "part-00001", None, "zstd", options)
    left.write(table.slice(30))
    left.close()  # a task whose attempt the engine gave up on
    with pytest.raises(zrecord.ZrecordError, match="dataset.zr|unfinished"):
        zrecord.open(url, options=options)

    arrow.prepare(url, options)  # the next job clears what the failed one left
    assert zrecord._zrecord.list_url(url, options) == []
    shards = arrow.write_table(table, url, rows_per_shard=25, options=options)
    assert [n for _, n in shards] == [25, 25]
    np.testing.assert_array_equal(zrecord.open(url, options=options).gather("image", [49]), images[[49]])


def test_every_backend_is_in_the_wheel_and_names_what_it_needs(monkeypatch):
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_SERVICE_ACCOUNT", "GOOGLE_SERVICE_ACCOUNT_KEY",
                 "AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(zrecord.ZrecordError, match="GOOGLE_APPLICATION_CREDENTIALS"):
        zrecord.open("gs://bucket/train")
    with pytest.raises(zrecord.ZrecordError, match="AZURE_STORAGE_ACCOUNT_NAME"):
        zrecord.open("az://container/train")
