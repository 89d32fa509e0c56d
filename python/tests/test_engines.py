"""Ray Data and Daft write datasets the Rust loader reads: 4 write tasks
over the Parquet fixtures give records equal to the source rows; a task
that raises mid-write leaves no manifest, and the retry succeeds."""


import numpy as np
import pytest

import zrecord
from conftest import PARQUET, centre_crops, module, png, sample_pixels


@pytest.fixture(scope="module")
def ray():
    ray = module("ray")
    module("pandas")  # Ray Data's own dependency
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    yield ray
    ray.shutdown()


def source():
    import pyarrow.parquet as pq

    return pq.read_table(PARQUET / "digits.parquet"), pq.read_table(PARQUET / "kjv_genesis.parquet")


def check_digits(path, table, options=None):
    d = zrecord.open(path, options=options)
    assert len(d) == table.num_rows == 1797
    everything = np.arange(len(d))
    images = np.array(table.column("image").to_pylist(), dtype=np.uint8)
    np.testing.assert_array_equal(d.gather("image", everything), images)
    np.testing.assert_array_equal(d.gather("label", everything), table.column("label").to_numpy())
    # the Rust loader reads it as it is
    loader = zrecord.Loader(d, 64, seed=1, rank=0, world_size=1)
    batch = next(loader)
    np.testing.assert_array_equal(batch["image"], images[batch.indices])


def test_ray_writes_four_shards_equal_to_the_source_rows(ray, tmp_path):
    import zrecord.ray

    digits, genesis = source()
    sink = zrecord.ray.Datasink(tmp_path / "digits")
    ray.data.read_parquet(str(PARQUET / "digits.parquet")).repartition(4).write_datasink(sink)
    assert len(sink.shards) == 4
    check_digits(tmp_path / "digits", digits)

    sink = zrecord.ray.Datasink(tmp_path / "genesis", columns={"text": "text", "verse": "verse"})
    ray.data.read_parquet(str(PARQUET / "kjv_genesis.parquet")).repartition(4).write_datasink(sink)
    d = zrecord.open(tmp_path / "genesis")
    assert set(d.streams) == {"text", "verse"} and len(d.shards) == 4
    texts = [bytes(t).decode() for t in d.gather("text", np.arange(len(d)))]
    assert texts == genesis.column("text").to_pylist()


def test_ray_a_task_that_raises_leaves_no_dataset_and_the_retry_succeeds(ray, tmp_path):
    import zrecord.ray

    class Failing(zrecord.ray.Datasink):
        def write(self, blocks, ctx):
            def fail_midway():
                for k, block in enumerate(blocks):
                    if ctx.task_idx == 2 and k == 0:
                        yield block
                        raise RuntimeError("the task dies mid-write")
                    yield block

            return super().write(fail_midway(), ctx)

    path = tmp_path / "digits"
    ds = ray.data.read_parquet(str(PARQUET / "digits.parquet")).repartition(4)
    with pytest.raises(Exception, match="the task dies mid-write"):
        ds.write_datasink(Failing(path))
    assert not (path / "dataset.zr").exists()
    # Tasks still running when the job fails may finish their shards after
    # the driver's cleanup: whatever is left never opens as a dataset, and
    # the next job clears it.
    with pytest.raises(zrecord.ZrecordError):
        zrecord.open(path)
    ds.write_datasink(zrecord.ray.Datasink(path))
    check_digits(path, source()[0])


def test_ray_writes_straight_to_object_storage_and_a_failed_job_leaves_no_dataset(ray, server):
    import zrecord.ray

    _, bucket, options = server
    url = f"s3://{bucket}/digits"
    ds = ray.data.read_parquet(str(PARQUET / "digits.parquet")).repartition(4)

    class Failing(zrecord.ray.Datasink):
        def write(self, blocks, ctx):
            if ctx.task_idx == 1:
                raise RuntimeError("the task dies before its push")
            return super().write(blocks, ctx)

    with pytest.raises(Exception, match="the task dies before its push"):
        ds.write_datasink(Failing(url, options=options))
    names = {name for name, _ in zrecord._zrecord.list_url(url, options)}
    assert "dataset.zr" not in names

    sink = zrecord.ray.Datasink(url, options=options)
    ds.write_datasink(sink)
    assert len(sink.shards) == 4
    check_digits(url, source()[0], options)

    # again over it: refused, unless the job overwrites
    with pytest.raises(Exception, match="a sink writes a new dataset"):
        ds.write_datasink(zrecord.ray.Datasink(url, options=options))
    sink = zrecord.ray.Datasink(url, options=options, overwrite=True)
    ds.write_datasink(sink)
    check_digits(url, source()[0], options)
    assert {name.split("/")[0] for name, _ in zrecord._zrecord.list_url(url, options)} == {
        "dataset.zr",
        *(folder for folder, _ in sink.shards),
    }


def test_daft_writes_a_dataset_equal_to_the_source_rows(tmp_path):
    daft = module("daft")
    import zrecord.daft

    digits, genesis = source()
    df = daft.read_parquet(str(PARQUET / "digits.parquet"))
    result = df.write_sink(zrecord.daft.DataSink(tmp_path / "digits")).to_pydict()
    assert sum(result["records"]) == 1797
    d = zrecord.open(tmp_path / "digits")
    # Daft's tasks may finish in any order: compare the rows as a set
    images = d.gather("image", np.arange(len(d))).reshape(len(d), -1)
    rows = {(bytes(i), int(lab)) for i, lab in zip(images, d.gather("label", np.arange(len(d))))}
    expected = np.array(digits.column("image").to_pylist(), dtype=np.uint8).reshape(len(d), -1)
    assert rows == {(bytes(i), int(lab)) for i, lab in zip(expected, digits.column("label").to_pylist())}
    assert len(d) == len(rows) == 1797

    df = daft.read_parquet(str(PARQUET / "kjv_genesis.parquet"))
    df.write_sink(zrecord.daft.DataSink(tmp_path / "genesis", columns=["text"]))
    texts = [bytes(t).decode() for t in zrecord.open(tmp_path / "genesis").gather("text", np.arange(1533))]
    assert sorted(texts) == sorted(genesis.column("text").to_pylist())


def test_daft_a_task_that_raises_leaves_no_dataset_and_the_retry_succeeds(tmp_path):
    daft = module("daft")
    import zrecord.daft

    class Failing(zrecord.daft.DataSink):
        def write(self, micropartitions):
            def fail_midway():
                for part in micropartitions:
                    yield part
                    raise RuntimeError("the task dies mid-write")

            return super().write(fail_midway())

    path = tmp_path / "digits"
    df = daft.read_parquet(str(PARQUET / "digits.parquet"))
    with pytest.raises(Exception, match="the task dies mid-write"):
        df.write_sink(Failing(path))
    assert not (path / "dataset.zr").exists()
    # Tasks still running when the job fails may finish their shards after
    # the driver's cleanup: whatever is left never opens as a dataset, and
    # the next job clears it.
    with pytest.raises(zrecord.ZrecordError):
        zrecord.open(path)
    df.write_sink(zrecord.daft.DataSink(path))
    assert len(zrecord.open(path)) == 1797
    df.limit(100).write_sink(zrecord.daft.DataSink(path, overwrite=True))
    assert len(zrecord.open(path)) == 100


def test_daft_writes_straight_to_object_storage(server):
    daft = module("daft")
    import zrecord.daft

    _, bucket, options = server
    url = f"s3://{bucket}/genesis"
    df = daft.read_parquet(str(PARQUET / "kjv_genesis.parquet"))
    result = df.write_sink(zrecord.daft.DataSink(url, columns=["text"], options=options)).to_pydict()
    assert sum(result["records"]) == 1533
    d = zrecord.open(url, options=options)
    texts = [bytes(t).decode() for t in d.gather("text", np.arange(len(d)))]
    assert sorted(texts) == sorted(source()[1].column("text").to_pylist())


def test_daft_decodes_images_in_its_tasks(tmp_path):
    daft = module("daft")
    import pyarrow as pa

    import zrecord.daft

    pixels = sample_pixels()
    table = pa.table({"image": pa.array([png(p) for p in pixels], type=pa.binary())})
    daft.from_arrow(table).write_sink(zrecord.daft.DataSink(tmp_path / "d", decode={"image": 8}))
    d = zrecord.open(tmp_path / "d")
    decoded = d.gather("image", np.arange(len(d)))
    # Daft's tasks may finish in any order: compare as a set
    assert {image.tobytes() for image in decoded} == {p.tobytes() for p in centre_crops(pixels)}
