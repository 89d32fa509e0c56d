"""Shared test helpers: the repository's fixtures, and skips that fail
instead under CI's `ZRECORD_NO_SKIP=1`."""

import os
import pathlib
import struct
import urllib.request
import uuid
import zlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PARQUET = REPO / "cli" / "tests" / "fixtures" / "parquet"
GOLDEN = REPO / "zsampler" / "tests" / "reference" / "golden.txt"


def need(condition, reason):
    """Skips the test without `condition` — or fails it when CI promises
    everything (`ZRECORD_NO_SKIP=1`)."""
    if condition:
        return
    if os.environ.get("ZRECORD_NO_SKIP") == "1":
        pytest.fail(f"ZRECORD_NO_SKIP=1 but {reason}")
    pytest.skip(reason)


def module(name):
    """Imports `name`, or skips (fails under ZRECORD_NO_SKIP) without it."""
    try:
        return __import__(name)
    except ImportError:
        need(False, f"{name} is not installed")


@pytest.fixture(autouse=True)
def watchdog():
    """A test that hangs (a request that never returns, a lock never
    released) ends the run with every thread's traceback instead of
    stalling it."""
    import faulthandler

    faulthandler.dump_traceback_later(600, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture
def server():
    """A new bucket on the S3-compatible server `ZRECORD_S3_ENDPOINT` names:
    `(endpoint, bucket, options)`."""
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


def png(pixels):
    """An 8-bit RGB PNG of `pixels` (height × width × 3 `uint8`)."""
    height, width, _ = pixels.shape

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def sample_pixels(n=6):
    """`n` random RGB images, 8 × 8 and 8 × 16 in turn."""
    import numpy as np

    rng = np.random.default_rng(5)
    return [rng.integers(0, 256, (8, 8 + 8 * (k % 2), 3), dtype=np.uint8) for k in range(n)]


def centre_crops(pixels):
    """What `decode={column: 8}` makes of `sample_pixels`: an 8 × 8 image as
    it is, an 8 × 16 one (8 on its shorter side already) its centre."""
    return [p if p.shape[1] == 8 else p[:, 4:12] for p in pixels]
