#!/usr/bin/env python3
"""An independent reference for the benchmark workload generators.

Plain Python (standard library only), transcribed from the workload
definitions restated below — not from the Rust generators — and slow on
purpose: one formula per value. It prints the golden values of small
prefixes of every workload and of the index plans (golden.txt); the full
workloads' SHA-256 values are part of the definitions themselves.

    python3 bench_data.py > golden.txt

`tests/reference.rs` checks the Rust generators against golden.txt and, where
python3 is installed, that golden.txt is what this script prints.

The definitions
---------------
S(seed): SplitMix64 with state starting at `seed`; output k (k = 0, 1, ...):
    z = seed + (k + 1) * 0x9E3779B97F4A7C15             (wrapping u64)
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9            (wrapping)
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB            (wrapping)
    o_k = z ^ (z >> 31)
bytes(seed) = o_0 as 8 little-endian bytes, then o_1, ...; B_s[n] is byte n.

(a) dense large, 2,500 records of u8[512][512]: record r, row y, column x,
    i = (r*512 + y)*512 + x:  v = ((x >> 1) + (y >> 1) + 3*r + (B_1[i] & 3)) mod 256.
(b) dense small, 200,000 records of u8[28][28]: i = (r*28 + y)*28 + x,
    R = 6 + r % 7, cx = 12 + r % 5, cy = 13 + r % 3:
    v = 128 + (B_2[i] & 127) if (x-cx)^2 + (y-cy)^2 < R^2 else 0.
(c) ragged tokens, 100,000 i32 sequences. Length of record r from S(3),
    a = o_{2r}, b = o_{2r+1}:
    u1 = ((a >> 11) + 1) * 2^-53,  u2 = (b >> 11) * 2^-53
    z = sqrt(-2 ln u1) * cos(6.283185307179586 * u2)        (plain f64)
    L = clamp(floor(exp(5.3 + 0.9 z)), 16, 2048)
    Tokens: all records end to end; token j is, with u = S(4).o_j >> 32,
    t = ((((u*u) >> 32) * u >> 32) * 50257) >> 32            (u64 arithmetic)
Index plans: plan(seed, nb, B, N)[b][k] = S(seed).o_{b*B + k} mod N.
"""

import hashlib
import math
import struct

M64 = (1 << 64) - 1


def o(seed, k):
    z = (seed + (k + 1) * 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def byte_stream(seed, n):
    """The first n bytes of bytes(seed)."""
    out = bytearray()
    k = 0
    while len(out) < n:
        out += o(seed, k).to_bytes(8, "little")
        k += 1
    return bytes(out[:n])


def dense_a(records):
    b1 = byte_stream(1, records * 512 * 512)
    out = bytearray(records * 512 * 512)
    for r in range(records):
        for y in range(512):
            for x in range(512):
                i = (r * 512 + y) * 512 + x
                out[i] = ((x >> 1) + (y >> 1) + 3 * r + (b1[i] & 3)) % 256
    return bytes(out)


def dense_b(records):
    b2 = byte_stream(2, records * 28 * 28)
    out = bytearray(records * 28 * 28)
    for r in range(records):
        radius, cx, cy = 6 + r % 7, 12 + r % 5, 13 + r % 3
        for y in range(28):
            for x in range(28):
                i = (r * 28 + y) * 28 + x
                if (x - cx) ** 2 + (y - cy) ** 2 < radius ** 2:
                    out[i] = 128 + (b2[i] & 127)
    return bytes(out)


def ragged_lengths(records):
    lengths = []
    for r in range(records):
        a, b = o(3, 2 * r), o(3, 2 * r + 1)
        u1 = ((a >> 11) + 1) * 2.0 ** -53
        u2 = (b >> 11) * 2.0 ** -53
        z = math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)
        lengths.append(min(max(math.floor(math.exp(5.3 + 0.9 * z)), 16), 2048))
    return lengths


def token(j):
    u = o(4, j) >> 32
    return (((((u * u) >> 32) * u) >> 32) * 50257) >> 32


def plan(seed, nb, batch, n):
    return [[o(seed, b * batch + k) % n for k in range(batch)] for b in range(nb)]


def sha(data):
    return hashlib.sha256(data).hexdigest()


def golden():
    a = dense_a(2)
    b = dense_b(1000)
    lengths = ragged_lengths(1000)
    tokens = [token(j) for j in range(sum(lengths))]
    values = [
        ("S(1) first outputs", [o(1, k) for k in range(3)]),
        ("plan(5, 1, 8, 2500)", plan(5, 1, 8, 2_500)[0]),
        ("plan(6, 1, 8, 200000)", plan(6, 1, 8, 200_000)[0]),
        ("plan(7, 1, 8, 100000)", plan(7, 1, 8, 100_000)[0]),
        ("a: first 16 bytes", list(a[:16])),
        ("a: sha256 of 2 records", [sha(a)]),
        ("b: sha256 of 1000 records", [sha(b)]),
        ("c: first 12 lengths", lengths[:12]),
        ("c: first 12 tokens", tokens[:12]),
        ("c: tokens in 1000 records", [len(tokens)]),
        ("c: sha256 of 1000 lengths as u32 LE",
         [sha(struct.pack(f"<{len(lengths)}I", *lengths))]),
        ("c: sha256 of their tokens as i32 LE",
         [sha(struct.pack(f"<{len(tokens)}i", *tokens))]),
    ]
    lines = ["# Golden values of the benchmark generators: the output of bench_data.py."]
    lines += [f"{name} : {' '.join(str(v) for v in vals)}" for name, vals in values]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(golden(), end="")
