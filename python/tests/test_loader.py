"""The Python loader delivers the Rust loader's batches: index for index
the golden values of zsampler's independent reference, which the Rust
loader's own golden test checks too, fresh and resumed on other world
sizes."""

import json

import numpy as np
import pytest

import zrecord

from conftest import GOLDEN

MAX_RECORDS = 20_000


def cases():
    for line in GOLDEN.read_text().splitlines():
        if not line.startswith("sample "):
            continue
        fields, values = line.split(" : ")
        field = dict(kv.split("=") for kv in fields.split(" ")[1:])
        subset = None
        if field["subset"] != "-":
            kind, args = field["subset"].split(":")
            n = [int(v) for v in args.split(",")]
            subset = [n[0] + k * n[1] for k in range(n[2])] if kind == "ap" else n
        records = max(subset) + 1 if subset else int(field["len"])
        if records > MAX_RECORDS:
            continue
        yield {
            "mode": field["mode"],
            "len": records,
            "batch": int(field["batch"]),
            "seed": int(field["seed"]),
            "rank": int(field["rank"]),
            "world": int(field["world"]),
            "block": (int(field["block_size"]), int(field["window_blocks"])),
            "subset": subset,
            "step": int(field["step"]),
            "indices": [int(v) for v in values.split(" ")],
            "line": line,
        }


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """Store `n` holds `n` u64 records, record `i` holding `i`."""
    root = tmp_path_factory.mktemp("golden")
    made = {}

    def store(n):
        if n not in made:
            with zrecord.create(root / str(n), np.uint64, shape=(), codec="raw") as s:
                s.append(np.arange(n, dtype=np.uint64))
            made[n] = str(root / str(n))
        return made[n]

    return store


def loader(store, case, **kw):
    block = {}
    if case["mode"] == "block":
        block = {"block_size": case["block"][0], "window_blocks": case["block"][1]}
    return zrecord.Loader(
        {"i": store},
        case["batch"],
        mode=case["mode"],
        seed=case["seed"],
        workers=1,
        subset=case["subset"],
        **block,
        **kw,
    )


def delivered(loader, case):
    batch = next(loader)
    assert batch.step == case["step"], case["line"]
    assert batch["i"].tolist() == batch.indices.tolist(), case["line"]
    return batch.indices.tolist()


def test_the_loader_delivers_the_references_batches_fresh_and_resumed(stores):
    all_cases = list(cases())
    assert len(all_cases) >= 80 and {c["mode"] for c in all_cases} == {
        "sequential", "iid", "cyclic", "block",
    }  # fmt: skip
    for case in all_cases:
        store = stores(case["len"])
        fresh = loader(store, case, rank=case["rank"], world_size=case["world"],
                       start_step=case["step"])  # fmt: skip
        assert delivered(fresh, case) == case["indices"], case["line"]
        state = loader(store, case, rank=0, world_size=1, start_step=case["step"]).state()
        resumed = loader(store, case, rank=case["rank"], world_size=case["world"], state=state)
        assert delivered(resumed, case) == case["indices"], case["line"]


def test_batches_are_dicts_of_arrays_and_resume_exactly(tmp_path):
    images = zrecord.create(tmp_path / "images", np.uint8, shape=(2, 2))
    images.append(np.arange(40 * 4, dtype=np.uint8).reshape(40, 2, 2) % 251)
    images.close()
    tokens = zrecord.create(tmp_path / "tokens", np.int32, ragged=True)
    tokens.append([np.full(1 + i % 5, i, np.int32) for i in range(40)])
    tokens.close()
    streams = {"images": tmp_path / "images", "tokens": tmp_path / "tokens"}
    first = zrecord.Loader(streams, 8, seed=3, rank=0, world_size=1)
    assert first.steps_per_epoch == 5 and first.batch_size == 8
    batches = [next(first) for _ in range(3)]
    state = first.state()
    json.dumps(state)  # a state is plain JSON
    later = [next(first) for _ in range(4)]
    for b in batches + later:
        assert set(b) == {"images", "tokens"}
        assert b["images"].shape == (8, 2, 2)
        idx = b.indices.astype(np.int64)
        np.testing.assert_array_equal(b["images"][:, 0, 0], (idx * 4) % 251)
        assert [int(t[0]) for t in b["tokens"]] == idx.tolist()
        assert [len(t) for t in b["tokens"]] == (1 + idx % 5).tolist()
    # resumed on two ranks: the same global batches, split
    halves = [zrecord.Loader(streams, 8, seed=3, rank=r, world_size=2, state=state) for r in (0, 1)]
    for b in later:
        got = sorted(np.concatenate([next(h).indices for h in halves]).tolist())
        assert got == sorted(b.indices.tolist())


def test_a_dataset_folder_and_ranks_from_the_environment(tmp_path, monkeypatch):
    import pyarrow as pa

    from zrecord.arrow import write_table

    table = pa.table({"label": pa.array(np.arange(30), pa.int64())})
    write_table(table, tmp_path / "d", rows_per_shard=7)
    assert len(zrecord.open(tmp_path / "d").shards) == 5
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "3")
    ranked = zrecord.Loader(tmp_path / "d", 6, mode="sequential")
    assert ranked.batch_size == 2
    assert next(ranked)["label"].tolist() == [2, 3]
    monkeypatch.setenv("WORLD_SIZE", "x")
    with pytest.raises(zrecord.ZrecordError, match="WORLD_SIZE"):
        zrecord.Loader(tmp_path / "d", 6)


def test_bad_configurations_are_clear_errors(tmp_path):
    with zrecord.create(tmp_path / "s", np.int64, shape=()) as s:
        s.append(np.arange(10))
    streams = {"s": tmp_path / "s"}
    with pytest.raises(ValueError, match="mode 'shuffle'|mode \"shuffle\""):
        zrecord.Loader(streams, 4, mode="shuffle")
    with pytest.raises(ValueError, match="block_size and window_blocks"):
        zrecord.Loader(streams, 4, mode="block")
    with pytest.raises(ValueError, match="rank and world_size together"):
        zrecord.Loader(streams, 4, rank=0)
    with pytest.raises(ValueError, match="not a loader state"):
        zrecord.Loader(streams, 4, state={"nonsense": 1})
    with pytest.raises(zrecord.ZrecordError):
        zrecord.Loader(streams, 4, rank=5, world_size=2)
    with pytest.raises(zrecord.ZrecordError):
        zrecord.Loader({"s": tmp_path / "missing"}, 4)


def test_a_kept_batch_is_never_overwritten_by_later_ones(tmp_path):
    """Batches lend the loader's own buffers to numpy: a batch still held
    keeps its buffers; dropped ones go back to the loader's pool."""
    data = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    with zrecord.create(tmp_path / "x", np.float32, shape=(16,)) as x:
        x.append(data)
    with zrecord.create(tmp_path / "t", np.int64, ragged=True) as t:
        t.append([np.full(1 + i % 3, i) for i in range(64)])
    loader = zrecord.Loader({"x": tmp_path / "x", "t": tmp_path / "t"}, 8, seed=1,
                            rank=0, world_size=1, workers=2, prefetch=2)  # fmt: skip
    kept = next(loader)
    x_view, tokens, indices = kept["x"], kept["t"], kept.indices.copy()
    del kept
    for _ in range(20):
        b = next(loader)
        np.testing.assert_array_equal(b["x"], data[b.indices])
        b["x"] *= 0  # writeable, and changes only this batch
    np.testing.assert_array_equal(x_view, data[indices])
    assert [t.tolist() for t in tokens] == [[i] * (1 + i % 3) for i in indices.tolist()]
