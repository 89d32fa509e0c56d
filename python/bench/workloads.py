"""The benchmark workloads (a), (b), (c), generated bit-exactly from
benches/DATA.md with numpy and checked against its SHA-256 values."""

import hashlib

import numpy as np

GAMMA = np.uint64(0x9E3779B97F4A7C15)
M1 = np.uint64(0xBF58476D1CE4E5B9)
M2 = np.uint64(0x94D049BB133111EB)

SHA = {
    "a": "cf5586a5bec2c5512f16c7618855fb544a1ae4acbfdff03c0b15da6100f4a312",
    "b": "37786006361af24bbdb54624a3dcdbfc044779471d63cb4c1af24d0993e3c7de",
    "c_lengths": "74913d40453bdcf6883a300aa238702225bf9bf82e06ffa795cc55ff697fde14",
    "c_tokens": "0824ae5d3fa248bef141a7951e2f2bce63f77159668f3c92a7b2908919559987",
}


def splitmix(seed, start, count):
    """Outputs `start .. start + count` of SplitMix64 `S(seed)`."""
    with np.errstate(over="ignore"):
        k = np.arange(start + 1, start + count + 1, dtype=np.uint64)
        z = np.uint64(seed) + k * GAMMA
        z = (z ^ (z >> np.uint64(30))) * M1
        z = (z ^ (z >> np.uint64(27))) * M2
        return z ^ (z >> np.uint64(31))


def stream_bytes(seed, start, count):
    """Bytes `start .. start + count` of `bytes(seed)`."""
    first = start // 8
    words = splitmix(seed, first, (start + count + 7) // 8 - first)
    return words.astype("<u8").view(np.uint8)[start - first * 8 :][:count]


def dense_large(n=2500):
    """(a): n records of u8[512][512]."""
    y, x = np.mgrid[0:512, 0:512]
    base = ((x >> 1) + (y >> 1)).astype(np.int64)
    out = np.empty((n, 512, 512), np.uint8)
    for r in range(n):
        noise = stream_bytes(1, r * 512 * 512, 512 * 512).reshape(512, 512) & 3
        out[r] = (base + 3 * r + noise) % 256
    return out


def dense_small(n=200_000):
    """(b): n records of u8[28][28], a noisy disc on black."""
    r = np.arange(n)[:, None, None]
    y = np.arange(28)[None, :, None]
    x = np.arange(28)[None, None, :]
    radius, cx, cy = 6 + r % 7, 12 + r % 5, 13 + r % 3
    noise = stream_bytes(2, 0, n * 784).reshape(n, 28, 28) & 127
    inside = (x - cx) ** 2 + (y - cy) ** 2 < radius**2
    return np.where(inside, 128 + noise, 0).astype(np.uint8)


def ragged_tokens(n=100_000):
    """(c): n i32 token sequences, as (lengths, tokens)."""
    o = splitmix(3, 0, 2 * n)
    a, b = o[0::2], o[1::2]
    u1 = ((a >> np.uint64(11)) + np.uint64(1)).astype(np.float64) * 2.0**-53
    u2 = (b >> np.uint64(11)).astype(np.float64) * 2.0**-53
    z = np.sqrt(-2.0 * np.log(u1)) * np.cos(6.283185307179586 * u2)
    lengths = np.clip(np.floor(np.exp(5.3 + 0.9 * z)), 16, 2048).astype(np.int64)
    total = int(lengths.sum())
    with np.errstate(over="ignore"):
        u = splitmix(4, 0, total) >> np.uint64(32)
        t = ((((u * u) >> np.uint64(32)) * u >> np.uint64(32)) * np.uint64(50257)) >> np.uint64(32)
    return lengths, t.astype(np.int32)


def plan(seed, batches, batch, n):
    """`plan(seed, nb, B, N)[b][k] = S(seed).o_{b*B + k} mod N`."""
    return (splitmix(seed, 0, batches * batch) % np.uint64(n)).reshape(batches, batch)


def sha(array):
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def check(name, array):
    got = sha(array)
    if got != SHA[name]:
        raise SystemExit(f"workload {name}: SHA-256 {got} is not BENCH-DATA's {SHA[name]}")
