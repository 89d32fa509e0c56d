"""Stores and datasets in object storage, from Python: pushed to an
S3-compatible server on loopback (the one `ZRECORD_S3_ENDPOINT` names; CI
starts moto), opened through a node cache, gathered and loaded."""

import os
import urllib.request
import uuid

import numpy as np
import pytest

import zrecord
from conftest import need, module


@pytest.fixture
def server():
    endpoint = os.environ.get("ZRECORD_S3_ENDPOINT")
    need(endpoint, "no S3-compatible server: set ZRECORD_S3_ENDPOINT (CI starts moto)")
    endpoint = endpoint.rstrip("/")
    bucket = f"py-{uuid.uuid4().hex[:12]}"
    put(f"{endpoint}/{bucket}", b"")
    options = {
        "aws_endpoint": endpoint,
        "aws_allow_http": "true",
        "aws_access_key_id": "test",
        "aws_secret_access_key": "test",
        "aws_region": "us-east-1",
    }
    return endpoint, bucket, options


# Straight to the server on loopback, never through a proxy the environment names.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def put(url, data):
    headers = {"Content-Type": "application/octet-stream"}
    request = urllib.request.Request(url, data=data, method="PUT", headers=headers)
    with DIRECT.open(request, timeout=30) as response:
        assert response.status in (200, 201, 204), response.status


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
