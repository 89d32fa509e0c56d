"""Stores from Python: numpy round trips of every dtype, dense and ragged,
errors as exceptions with the Rust message, gathers without the GIL."""

import threading
import time

import numpy as np
import pytest

import zrecord

DTYPES = [
    np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32,
    np.uint64, np.int64, np.float16, np.float32, np.float64,
]  # fmt: skip


def values(dtype, n):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.arange(n) % 3 == 0
    if dtype.kind == "f":
        return (np.arange(n) / 7 - 3).astype(dtype)
    info = np.iinfo(dtype)
    span = int(info.max) - int(info.min) + 1
    spread = [int(info.min) + (k * 7919 * 1_000_003) % span for k in range(n)]
    return np.array([int(info.min), int(info.max), *spread][:n], dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("codec", ["zstd", "raw"])
def test_dense_round_trip_every_dtype(tmp_path, dtype, codec):
    records = values(dtype, 5 * 2 * 3).reshape(5, 2, 3)
    with zrecord.create(tmp_path / "s", dtype, shape=(2, 3), codec=codec) as store:
        assert store.append(records) == 0
        assert store.append(records[1]) == 5  # one record alone
        assert len(store) == 6 and store.shape == (2, 3) and store.dtype == np.dtype(dtype)
        got = store.gather([4, 0, 4, 5])
        assert got.dtype == np.dtype(dtype) and got.shape == (4, 2, 3)
        np.testing.assert_array_equal(got, records[[4, 0, 4, 1]])
        np.testing.assert_array_equal(store[-1], records[1])
        np.testing.assert_array_equal(store[1:3], records[1:3])
    with zrecord.open(tmp_path / "s", read_only=True) as again:
        np.testing.assert_array_equal(again.gather(np.arange(5)), records)
        assert again.info()["read_only"] and again.info()["codec"] == codec


@pytest.mark.parametrize("dtype", DTYPES)
def test_ragged_round_trip_every_dtype(tmp_path, dtype):
    records = [values(dtype, n) for n in (3, 0, 7, 1)] + [values(dtype, 6).reshape(2, 3)]
    with zrecord.create(tmp_path / "r", dtype, ragged=True) as store:
        store.append(records)
        got = store.gather([4, 2, 1, 0, 3])
        assert len(got) == 5 and got.values.dtype == np.dtype(dtype)
        assert got.shapes == [(2, 3), (7,), (0,), (3,), (1,)]
        for k, i in enumerate([4, 2, 1, 0, 3]):
            np.testing.assert_array_equal(got[k], records[i])
        # a gathered batch appends back as it is
        store.append(got)
        np.testing.assert_array_equal(store[5], records[4])
        assert len(store) == 10


def test_bfloat16_round_trips_as_its_bits(tmp_path):
    with zrecord.create(tmp_path / "b", "bf16", shape=(2,)) as store:
        bits = np.array([[0x3F80, 0xC000]], dtype=np.uint16)  # 1.0, -2.0
        if store.dtype == np.uint16:  # without ml_dtypes: the bits
            store.append(bits)
            np.testing.assert_array_equal(store.gather([0]), bits)
        else:
            store.append(np.array([[1.0, -2.0]], dtype=store.dtype))
            assert store.gather([0]).view(np.uint16).tolist() == bits.tolist()


def test_delete_compact_verify_and_info(tmp_path):
    with zrecord.create(tmp_path / "s", np.int64, shape=()) as store:
        store.append(np.arange(100))
        store.sync()
        assert store.delete([0, 10, 99]) == 3
        assert len(store) == 97
        assert store.info()["reclaimable_bytes"] > 0
        assert store.compact()["visited"] == 97
        assert store.verify()["records"] == 97
        # the last live records moved into the holes
        kept = sorted(store.gather(np.arange(97)).tolist())
        assert kept == [i for i in range(100) if i not in (0, 10, 99)]


def test_errors_carry_the_rust_message(tmp_path):
    store = zrecord.create(tmp_path / "s", np.float32, shape=(4,))
    store.append(np.zeros((3, 4), np.float32))
    with pytest.raises(IndexError, match="index 3 is out of range for a store of 3 records"):
        store.gather([0, 3])
    with pytest.raises(IndexError, match="negative index -1"):
        store.gather([-1])
    with pytest.raises(ValueError, match=r"records of shape \(5,\) for a store of shape \(4,\)"):
        store.append(np.zeros((2, 5), np.float32))
    with pytest.raises(TypeError, match="cannot cast float64 to the store's float32"):
        store.append(np.full((1, 4), 0.1))
    with pytest.raises(zrecord.ZrecordError, match="busy|lock|open"):
        zrecord.open(tmp_path / "s")  # a second writer while the first holds it
    store.close()
    with pytest.raises(ValueError, match="the store is closed"):
        store.gather([0])
    with pytest.raises(zrecord.ZrecordError, match="is not a zrecord store: no such folder"):
        zrecord.open(tmp_path / "nothing")
    with pytest.raises(TypeError, match="dtype 'q9' is neither a numpy dtype nor one of zrecord's"):
        zrecord.create(tmp_path / "q", "q9", shape=(1,))
    with pytest.raises(zrecord.ZrecordError, match="exists|not empty"):
        zrecord.create(tmp_path / "s", np.uint8, shape=(1,))


def test_a_gather_releases_the_gil(tmp_path):
    """While one thread is inside a long gather, another runs Python."""
    rng = np.random.default_rng(1)
    with zrecord.create(tmp_path / "s", np.uint8, shape=(4096,)) as store:
        store.append(rng.integers(0, 8, size=(2000, 4096), dtype=np.uint8))
        indices = np.tile(np.arange(2000), 25)  # 200 MB of zstd records in one call
        window = {}

        def gather():
            window["start"] = time.perf_counter()
            store.gather(indices)
            window["end"] = time.perf_counter()

        ticks = []
        thread = threading.Thread(target=gather)
        thread.start()
        while thread.is_alive():
            ticks.append(time.perf_counter())
        thread.join()
        start, end = window["start"], window["end"]
        inside = sum(start < t < end for t in ticks)
        # Holding the GIL, the gather would leave this thread no turn at all
        # between entering and leaving the call.
        assert end - start > 0.02, "the gather is too short to tell"
        assert inside > 1000, f"{inside} turns of the other thread in {end - start:.3f} s"


def test_gather_into_a_reused_array(tmp_path):
    records = np.arange(10 * 6, dtype=np.float32).reshape(10, 2, 3)
    with zrecord.create(tmp_path / "s", np.float32, shape=(2, 3)) as store:
        store.append(records)
        out = np.empty((3, 2, 3), np.float32)
        assert store.gather([9, 0, 4], out=out) is out
        np.testing.assert_array_equal(out, records[[9, 0, 4]])
        store.gather([1, 1, 1], out=out)
        np.testing.assert_array_equal(out, records[[1, 1, 1]])
        with pytest.raises(ValueError, match=r"out is float32 \(3, 2, 3\); this gather needs float32 \(2, 2, 3\)"):
            store.gather([0, 1], out=out)
        with pytest.raises(ValueError, match="out is float64"):
            store.gather([0, 1, 2], out=np.empty((3, 2, 3)))
        with pytest.raises(ValueError, match="C-contiguous"):
            store.gather([0, 1, 2], out=np.empty((3, 2, 6), np.float32)[:, :, ::2])
        read_only = np.empty((3, 2, 3), np.float32)
        read_only.flags.writeable = False
        with pytest.raises(ValueError, match="writeable"):
            store.gather([0, 1, 2], out=read_only)
        with pytest.raises(TypeError, match="numpy array"):
            store.gather([0, 1, 2], out=bytearray(72))
        with pytest.raises(IndexError):  # a failed gather still raises, out untouched in size
            store.gather([0, 1, 10], out=out)


def test_gathered_arrays_keep_their_values_while_buffers_are_recycled(tmp_path):
    """New arrays reuse the buffers of arrays Python dropped — never of
    one still held."""
    data = np.arange(200 * 8, dtype=np.int32).reshape(200, 8)
    with zrecord.create(tmp_path / "d", np.int32, shape=(8,)) as dense, \
            zrecord.create(tmp_path / "r", np.int32, ragged=True) as ragged:  # fmt: skip
        dense.append(data)
        ragged.append([row[: 1 + i % 8] for i, row in enumerate(data)])
        rng = np.random.default_rng(3)
        held = []
        for k in range(30):
            idx = rng.integers(0, 200, 16)
            batch, tokens = dense.gather(idx), ragged.gather(idx)
            if k % 7 == 0:
                held.append((idx, batch, tokens))
            else:  # used, scribbled on (they are writeable), dropped
                batch[:] = -1
                tokens.values[:] = -1
        for idx, batch, tokens in held:
            np.testing.assert_array_equal(batch, data[idx])
            assert [t.tolist() for t in tokens] == [data[i, : 1 + i % 8].tolist() for i in idx]
