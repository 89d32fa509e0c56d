"""Encoded images in the engine sinks: kept as bytes (raw, not zstd) or
decoded into fixed-size RGB records, and a corrupt one named."""

import numpy as np
import pytest

import zrecord
from conftest import centre_crops, module, png, sample_pixels
from zrecord.arrow import write_table


@pytest.fixture
def images():
    module("pyarrow")
    import pyarrow as pa

    pixels = sample_pixels()
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
    np.testing.assert_array_equal(d.gather("image", np.arange(6)), np.stack(centre_crops(pixels)))


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

