"""Encoded images in the engine sinks: kept as bytes (raw, not zstd) or
decoded into fixed-size RGB records, and a corrupt one named."""

import struct
import zlib

import numpy as np
import pytest

import zrecord
from conftest import module
from zrecord.arrow import write_table


def png(pixels):
    """An 8-bit RGB PNG of `pixels` (height × width × 3 `uint8`)."""
    height, width, _ = pixels.shape

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@pytest.fixture
def images():
    module("pyarrow")
    import pyarrow as pa

    rng = np.random.default_rng(5)
    pixels = [rng.integers(0, 256, (8, 8 + 8 * (k % 2), 3), dtype=np.uint8) for k in range(6)]
    table = pa.table({
        "image": pa.array([png(p) for p in pixels], type=pa.binary()),
        "caption": pa.array([f"image {k} " * 20 for k in range(6)]),
    })  # fmt: skip
    return pixels, table


def test_encoded_images_stay_raw_and_text_is_compressed(tmp_path, images):
    pixels, table = images
    write_table(table, tmp_path / "d")
    d = zrecord.open(tmp_path / "d")
    assert zrecord.open(tmp_path / "d" / "part-00000" / "image", read_only=True).info()["codec"] == "raw"
    assert zrecord.open(tmp_path / "d" / "part-00000" / "caption", read_only=True).info()["codec"] == "zstd"
    assert [bytes(r) for r in d.gather("image", np.arange(6))] == table.column("image").to_pylist()

    write_table(table, tmp_path / "z", codec="zstd")  # a codec given is every stream's
    assert zrecord.open(tmp_path / "z" / "part-00000" / "image", read_only=True).info()["codec"] == "zstd"


def test_decoded_images_are_dense_rgb_records(tmp_path, images):
    pixels, table = images
    write_table(table, tmp_path / "d", decode={"image": 8}, rows_per_shard=4)
    d = zrecord.open(tmp_path / "d")
    assert d.streams["image"][0] == "dense" and d.streams["image"][2] == (8, 8, 3)
    assert zrecord.open(tmp_path / "d" / "part-00000" / "image", read_only=True).info()["codec"] == "zstd"
    decoded = d.gather("image", np.arange(6))
    for k, p in enumerate(pixels):
        # 8 × 8 as it is; 8 × 16 already 8 on its shorter side: its centre 8 columns
        expected = p if p.shape[1] == 8 else p[:, 4:12]
        np.testing.assert_array_equal(decoded[k], expected)


def test_an_image_that_does_not_decode_is_named_and_nothing_is_written(tmp_path, images):
    import pyarrow as pa

    _, table = images
    cut = table.column("image").to_pylist()
    cut[3] = cut[3][:40]
    table = table.set_column(0, "image", pa.array(cut, type=pa.binary()))
    with pytest.raises(ValueError, match=r"column 'image': image 3 \(40 bytes\) does not decode"):
        write_table(table, tmp_path / "d", decode={"image": 8})
    assert not (tmp_path / "d" / "dataset.zr").exists()
    with pytest.raises(TypeError, match="column 'caption': only binary columns"):
        write_table(table, tmp_path / "e", decode={"caption": 8})
    with pytest.raises(KeyError, match="missing"):
        write_table(table, tmp_path / "f", decode={"missing": 8})


def test_daft_decodes_images_in_its_tasks(tmp_path, images):
    daft = module("daft")
    import zrecord.daft

    pixels, table = images
    daft.from_arrow(table).write_sink(zrecord.daft.DataSink(tmp_path / "d", decode={"image": 8}))
    d = zrecord.open(tmp_path / "d")
    decoded = d.gather("image", np.arange(len(d)))
    expected = {(p if p.shape[1] == 8 else p[:, 4:12]).tobytes() for p in pixels}
    assert {image.tobytes() for image in decoded} == expected
