"""Arrow columns into streams: every mappable type of the Parquet fixture
round trips, and what cannot map is an error naming the column."""

import os

import numpy as np
import pytest

import zrecord
from conftest import PARQUET, module
from zrecord.arrow import ShardWriter, abort, commit, prepare, write_table


@pytest.fixture
def types():
    module("pyarrow")
    import pyarrow.parquet as pq

    return pq.read_table(PARQUET / "types.parquet")


def test_every_mappable_type_round_trips(tmp_path, types):
    columns = ["b", "i8", "u16", "i64", "f32", "f64", "vec3", "tokens", "s", "bin"]
    shards = write_table(types, tmp_path / "d", columns=columns, rows_per_shard=4)
    assert [r for _, r in shards] == [4, 4, 2]
    d = zrecord.open(tmp_path / "d")
    kinds = {name: (kind, dtype.name, shape) for name, (kind, dtype, shape) in d.streams.items()}
    assert kinds == {
        "b": ("dense", "bool", ()),
        "i8": ("dense", "int8", ()),
        "u16": ("dense", "uint16", ()),
        "i64": ("dense", "int64", ()),
        "f32": ("dense", "float32", ()),
        "f64": ("dense", "float64", ()),
        "vec3": ("dense", "float32", (3,)),
        "tokens": ("ragged", "int32", None),
        "s": ("ragged", "uint8", None),
        "bin": ("ragged", "uint8", None),
    }
    everything = np.arange(len(types))
    for name in ["b", "i8", "u16", "i64", "f32", "f64", "vec3"]:
        expected = np.array(types.column(name).to_pylist())
        np.testing.assert_array_equal(d.gather(name, everything), expected, err_msg=name)
    # into a reused array, across the three shards, in any order
    out = np.empty((6, 3), np.float32)
    picks = [9, 0, 4, 8, 5, 1]
    assert d.gather("vec3", picks, out=out) is out
    np.testing.assert_array_equal(out, np.array(types.column("vec3").to_pylist())[picks])
    with pytest.raises(ValueError, match="this gather needs float32"):
        d.gather("vec3", picks[:2], out=out)
    tokens = d.gather("tokens", everything)
    assert [t.tolist() for t in tokens] == types.column("tokens").to_pylist()
    strings = d.gather("s", everything)
    assert [bytes(t).decode() for t in strings] == types.column("s").to_pylist()
    blobs = d.gather("bin", everything)
    assert [bytes(t) for t in blobs] == types.column("bin").to_pylist()


def test_a_sliced_batch_maps_its_own_rows(tmp_path, types):
    """Arrow slices share buffers with an offset: strings and lists must
    start at the slice's first row, not the buffer's."""
    write_table(types.slice(3, 5), tmp_path / "d", columns=["tokens", "s", "vec3"])
    d = zrecord.open(tmp_path / "d")
    rows = np.arange(5)
    assert [t.tolist() for t in d.gather("tokens", rows)] == types.column("tokens").to_pylist()[3:8]
    assert [bytes(t).decode() for t in d.gather("s", rows)] == types.column("s").to_pylist()[3:8]


def test_unmappable_columns_and_nulls_name_the_column(tmp_path, types):
    with pytest.raises(TypeError, match="column 'nested'"):
        write_table(types, tmp_path / "a", columns=["nested"])
    with pytest.raises(ValueError, match="column 'maybe': 2 null values cannot be stored"):
        write_table(types, tmp_path / "b", columns=["maybe"])
    with pytest.raises(KeyError, match="'nope'"):
        write_table(types, tmp_path / "c", columns=["nope"])
    # nothing half-written opens: no manifest, no shard folders left
    for folder in ("a", "b", "c"):
        assert not (tmp_path / folder / "dataset.zr").exists()
        assert [e for e in os.listdir(tmp_path / folder)] == []


def test_renamed_columns_and_a_failed_task_leave_no_dataset(tmp_path, types):
    path = tmp_path / "d"
    prepare(path)
    ok = ShardWriter(path, "part-00000", columns={"i64": "label"})
    ok.write(types.slice(0, 5))
    done = ok.close()
    failing = ShardWriter(path, "part-00001", columns={"i64": "label"})
    failing.write(types.slice(5, 3))
    # the task dies here: its pending folder stays, no dataset.zr exists
    assert not (path / "dataset.zr").exists()
    with pytest.raises(zrecord.ZrecordError):
        zrecord.open(path)
    # a retry of the task writes another shard; commit keeps what was reported
    retry = ShardWriter(path, "part-00001-retry", columns={"i64": "label"})
    retry.write(types.slice(5, 5))
    shards = commit(path, [done[0], retry.close()[0]])
    assert shards == [("part-00000", 5), ("part-00001-retry", 5)]
    assert sorted(os.listdir(path)) == ["dataset.zr", "part-00000", "part-00001-retry"]
    labels = zrecord.open(path).gather("label", np.arange(10))
    assert labels.tolist() == types.column("i64").to_pylist()
    del failing


def test_a_sink_refuses_a_folder_that_holds_a_dataset(tmp_path, types):
    write_table(types, tmp_path / "d", columns=["i8"])
    with pytest.raises(FileExistsError, match="a sink writes a new dataset"):
        prepare(tmp_path / "d")
    abort(tmp_path / "d")  # what an engine calls after a refused job: the dataset stays whole
    assert len(zrecord.open(tmp_path / "d").gather("i8", np.arange(len(types)))) == len(types)
    # what a failed job left is cleared by the next job
    prepare(tmp_path / "e")
    ShardWriter(tmp_path / "e", "part-00000", columns=["i8"]).write(types.slice(0, 1))
    prepare(tmp_path / "e")
    assert os.listdir(tmp_path / "e") == []
    abort(tmp_path / "missing")  # nothing to do, no error


def test_overwrite_replaces_a_dataset_and_nothing_else(tmp_path, types):
    write_table(types, tmp_path / "d", columns=["i8"], rows_per_shard=3)
    write_table(types.slice(0, 2), tmp_path / "d", columns=["u16"], overwrite=True)
    d = zrecord.open(tmp_path / "d")
    assert list(d.streams) == ["u16"] and len(d) == 2
    assert sorted(os.listdir(tmp_path / "d")) == ["dataset.zr", "part-00000"]

    # a file that is not the dataset's stops the overwrite before anything is removed
    (tmp_path / "d" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="notes.txt"):
        write_table(types, tmp_path / "d", columns=["i8"], overwrite=True)
    assert len(zrecord.open(tmp_path / "d")) == 2


def test_a_store_appends_arrow_arrays(tmp_path, types):
    with zrecord.create(tmp_path / "s", np.uint8, ragged=True) as text:
        text.append(types.column("s"))
        text.append(types.column("bin").combine_chunks().slice(2, 3))
        got = [bytes(t) for t in text.gather(np.arange(13))]
        expected = [v.encode() for v in types.column("s").to_pylist()]
        assert got == expected + types.column("bin").to_pylist()[2:5]
    with zrecord.create(tmp_path / "v", np.float32, shape=(3,)) as vec3:
        vec3.append(types.column("vec3"))
        np.testing.assert_array_equal(vec3.gather(np.arange(10)), np.array(types.column("vec3").to_pylist()))
        with pytest.raises(ValueError, match="2 null values"):
            vec3.append(types.column("maybe"))
