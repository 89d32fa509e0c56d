#!/usr/bin/env python3
"""An independent reference implementation of zsampler's streams.

Written from "The streams, exactly" in zsampler/README.md — not from the
Rust code — in plain Python (standard library only), as directly as the text
reads: block mode is built by laying out a whole cycle, window by window.

    python3 sampler.py            # print the golden values (golden.txt)
    python3 sampler.py --check    # also check the reference against itself

`tests/golden.rs` checks the sampler against golden.txt, and regenerates it
with this script (where python3 is installed) to check that the file is what
the reference says.
"""

import sys

M64 = (1 << 64) - 1
M32 = (1 << 32) - 1
GAMMA = 0x9E3779B97F4A7C15


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def word(key, i):
    return mix64((key + (i + 1) * GAMMA) & M64)


def tag(text):
    return int.from_bytes(text.encode("ascii"), "little")


IID, RETRY, CYCLE = tag("zs:iid\0\0"), tag("zs:retry"), tag("zs:cycle")
BLOCK, ORDER, WINDOW = tag("zs:block"), tag("zs:order"), tag("zs:windw")
USER, PRINT = tag("zs:user\0"), tag("zs:fprnt")


def base(seed, t):
    return mix64(seed ^ t)


def lemire(x, bound):
    """The Lemire draw of `bound` from word `x`, or None when rejected."""
    m = x * bound
    return m >> 64 if (m & M64) >= (1 << 64) % bound else None


class Permutation:
    """The keyed permutation of 0..n: a Fisher-Yates table up to 256, a
    cycle-walked Feistel network above."""

    def __init__(self, n, key):
        self.n = n
        if n <= 256:
            t = list(range(n))
            c = 0
            for i in range(n - 1, 0, -1):
                while True:
                    j = lemire(word(key, c), i + 1)
                    c += 1
                    if j is not None:
                        break
                t[i], t[j] = t[j], t[i]
            self.table = t
            self.where = {v: x for x, v in enumerate(t)}
        else:
            self.table = None
            bits = (n - 1).bit_length()  # ceil(log2 n) for n > 1
            self.b = bits // 2
            self.a = bits - self.b
            self.narrow = bits <= 32
            self.keys = [word(key, i) for i in range(8)]

    def f(self, h, k, m):
        if self.narrow:
            h = ((h ^ (k >> 32)) * 0x7FEB352D) & M32
            h ^= h >> 15
            h = (h * 0x846CA68B) & M32
            return h >> (32 - m)
        h = ((h ^ k) * 0x9E3779B97F4A7C15) & M64
        h ^= h >> 32
        h = (h * 0xD6E8FEB86659FD93) & M64
        return h >> (64 - m)

    def p(self, x):
        hi, lo = x >> self.b, x & ((1 << self.b) - 1)
        for i in (0, 2, 4, 6):
            hi ^= self.f(lo, self.keys[i], self.a)
            lo ^= self.f(hi, self.keys[i + 1], self.b)
        return (hi << self.b) | lo

    def p_inverse(self, y):
        hi, lo = y >> self.b, y & ((1 << self.b) - 1)
        for i in (6, 4, 2, 0):
            lo ^= self.f(hi, self.keys[i + 1], self.b)
            hi ^= self.f(lo, self.keys[i], self.a)
        return (hi << self.b) | lo

    def image(self, x):
        if self.table is not None:
            return self.table[x]
        y = self.p(x)
        while y >= self.n:
            y = self.p(y)
        return y

    def preimage(self, y):
        if self.table is not None:
            return self.where[y]
        x = self.p_inverse(y)
        while x >= self.n:
            x = self.p_inverse(x)
        return x


class Config:
    def __init__(self, mode, length, batch, seed, rank=0, world=1,
                 block_size=None, window_blocks=None, subset=None):
        self.mode, self.length, self.batch, self.seed = mode, length, batch, seed
        self.rank, self.world = rank, world
        self.q, self.w = block_size, window_blocks
        self.subset = subset
        if subset is not None:
            self.length = len(subset)

    def batch_at(self, step):
        local = self.batch // self.world
        first = self.rank * local
        positions = range(first, first + local)
        n, b = self.length, self.batch
        if self.mode == "sequential":
            out = [(step * b + k) % n for k in positions]
        elif self.mode == "iid":
            key = word(base(self.seed, IID), step)
            out = [iid(key, n, k) for k in positions]
        else:
            per_cycle = n // b
            cycle, within = divmod(step, per_cycle)
            if self.mode == "cyclic":
                perm = Permutation(n, word(base(self.seed, CYCLE), cycle))
                out = [perm.image(within * b + k) for k in positions]
            else:
                out = [block_index(self, cycle, within * b + k) for k in positions]
        if self.subset is not None:
            out = [self.subset[i] for i in out]
        return out


def iid(key, n, k):
    x = lemire(word(key, k), n)
    if x is not None:
        return x
    stream = word(mix64(key ^ RETRY), k)
    attempt = 0
    while True:
        x = lemire(word(stream, attempt), n)
        if x is not None:
            return x
        attempt += 1


def block_cycle(config, cycle):
    """Block mode, as the README reads: the whole cycle laid out."""
    n, q, w = config.length, config.q, config.w
    key = word(base(config.seed, BLOCK), cycle)
    m = -(-n // q)
    order = Permutation(m, mix64(key ^ ORDER))
    slots = [order.image(i) for i in range(m)]
    window_key = mix64(key ^ WINDOW)
    out = []
    for wi, first in enumerate(range(0, m, w)):
        blocks = slots[first:first + w]
        short = [j for j in blocks if j == m - 1 and n % q]
        blocks = [j for j in blocks if j not in short] + short
        indices = [i for j in blocks for i in range(j * q, min((j + 1) * q, n))]
        sigma = Permutation(len(indices), word(window_key, wi))
        out.extend(indices[sigma.image(o)] for o in range(len(indices)))
    return out


def block_index(config, cycle, p):
    """Position `p` of a block-mode cycle without laying the cycle out (for
    index spaces too large for that): the same definitions, with the window
    of `p` found from the window lengths."""
    n, q, w = config.length, config.q, config.w
    key = word(base(config.seed, BLOCK), cycle)
    m = -(-n // q)
    order = Permutation(m, mix64(key ^ ORDER))
    deficit = (-n) % q  # indices the short block lacks
    short_window = order.preimage(m - 1) // w if deficit else None
    span = w * q
    # Windows before the short one are `span` long; from it on, every
    # window starts `deficit` indices earlier.
    if short_window is None or p < short_window * span:
        wi, start = p // span, (p // span) * span
    else:
        wi = (p + deficit) // span
        start = wi * span - (deficit if wi > short_window else 0)
    first = wi * w
    blocks = [order.image(i) for i in range(first, min(first + w, m))]
    if wi == short_window:
        blocks = [j for j in blocks if j != m - 1] + [m - 1]
    length = sum(min((j + 1) * q, n) - j * q for j in blocks)
    sigma = Permutation(length, word(mix64(key ^ WINDOW), wi))
    j, offset = divmod(sigma.image(p - start), q)
    return blocks[j] * q + offset


def counter_words(seed, stream, count):
    key = word(base(seed, USER), stream)
    return [word(key, i) for i in range(count)]


def fingerprint(xs):
    k = mix64(PRINT)
    total = sum(word(mix64(x ^ k), i) for i, x in enumerate(xs)) & M64
    return mix64(total ^ word(k, len(xs)))


# ---------------------------------------------------------------------------
# The golden cases: (kind, parameters, steps).

def ap(start, step, count):
    return list(range(start, start + step * count, step))


SUBSETS = {
    "ap:0,3,100": ap(0, 3, 100),
    "ap:5,13,777": ap(5, 13, 777),
    "list:3,1,2,1,9": [3, 1, 2, 1, 9],
}

BIG = (1 << 40) + 7

SAMPLES = [
    # mode, len, batch, seed, rank, world, block_size, window_blocks, subset, steps
    ("sequential", 10, 4, 42, 0, 1, None, None, None, [0, 1, 2, 3]),
    ("sequential", 20, 8, 5, 1, 4, None, None, None, [0, 3, 10**12]),
    ("iid", 1000, 8, 42, 0, 1, None, None, None, [0, 1, 1_000_000]),
    ("iid", 1000, 8, 42, 1, 2, None, None, None, [0, 1]),
    ("iid", BIG, 4, 7, 0, 1, None, None, None, [0, 3]),
    ("iid", (1 << 63) + 1, 4, 7, 0, 1, None, None, None, [0, 1]),
    ("iid", (1 << 64) - 1, 4, 9, 0, 1, None, None, None, [1 << 33]),
    ("cyclic", 10, 3, 42, 0, 1, None, None, None, [0, 1, 2, 3]),
    ("cyclic", 256, 10, 2, 0, 1, None, None, None, [0, 25]),
    ("cyclic", 257, 10, 3, 0, 1, None, None, None, [0, 25]),
    ("cyclic", 1000, 8, 42, 0, 1, None, None, None, [0, 1, 125]),
    ("cyclic", 1000, 8, 42, 3, 4, None, None, None, [0, 125]),
    ("cyclic", (1 << 32) + 1, 16, 7, 0, 1, None, None, None, [0, 5]),
    ("cyclic", BIG, 4, 1, 0, 1, None, None, None, [0, 1 << 30]),
    ("block", 1000, 8, 42, 0, 1, 16, 4, None, [0, 1, 124]),
    ("block", 95, 5, 9, 0, 1, 10, 3, None, list(range(0, 40))),
    ("block", 1003, 17, 5, 0, 1, 10, 4, None, [0, 7, 58, 59]),
    ("block", 1003, 16, 5, 1, 2, 10, 4, None, [0, 62, 63]),
    ("block", 3000, 64, 3, 0, 1, 7, 5, None, [0, 1, 46, 47]),
    ("block", 5000, 32, 8, 0, 1, 1, 1, None, [0, 156]),
    ("block", 2000, 40, 4, 0, 1, 100, 4, None, [0, 49, 50]),
    ("block", BIG, 4, 1, 0, 1, 16, 4, None, [0, 1 << 30]),
    ("block", BIG, 8, 2, 0, 1, 100_003, 3, None, [0, 1 << 35]),
    ("cyclic", None, 6, 9, 1, 2, None, None, "ap:0,3,100", [0, 1]),
    ("iid", None, 6, 9, 0, 1, None, None, "ap:0,3,100", [0, 7]),
    ("sequential", None, 5, 9, 0, 1, None, None, "list:3,1,2,1,9", [0, 1, 2]),
    ("block", None, 30, 5, 2, 3, 8, 3, "ap:5,13,777", [0, 25, 26]),
]

COUNTERS = [(5, 6, 2), (0, 0, 3), (M64, 1 << 40, 2), (42, 3, 4)]


def cases():
    for mode, n, b, seed, rank, world, q, w, subset, steps in SAMPLES:
        config = Config(mode, n, b, seed, rank, world, q, w,
                        SUBSETS[subset] if subset else None)
        if mode == "block" and config.length <= 5000:
            # Small enough to lay whole cycles out: use the plain definition.
            per_cycle = config.length // b
            cycles = {}
            def at(step):
                cycle, within = divmod(step, per_cycle)
                if cycle not in cycles:
                    cycles[cycle] = block_cycle(config, cycle)
                local = b // world
                first = within * b + rank * local
                out = cycles[cycle][first:first + local]
                return [config.subset[i] for i in out] if config.subset else out
        else:
            at = config.batch_at
        params = (f"mode={mode} len={config.length} batch={b} seed={seed} "
                  f"rank={rank} world={world} block_size={q or 0} "
                  f"window_blocks={w or 0} subset={subset or '-'}")
        for step in steps:
            yield f"sample {params} step={step}", at(step)
    for name, xs in SUBSETS.items():
        yield f"fingerprint subset={name}", [fingerprint(xs)]
    for seed, stream, count in COUNTERS:
        yield f"counter seed={seed} stream={stream}", counter_words(seed, stream, count)


def golden():
    lines = ["# zsampler's golden values: the output of tests/reference/sampler.py",
             "# (regenerate with `python3 sampler.py > golden.txt`)."]
    for name, values in cases():
        lines.append(f"{name} : {' '.join(str(v) for v in values)}")
    return "\n".join(lines) + "\n"


def check():
    """The reference against itself: the two block-mode forms agree, every
    cycle is a permutation, permutations invert."""
    for n in list(range(1, 300)) + [1000, 4097]:
        perm = Permutation(n, n * 0x9E37)
        image = [perm.image(x) for x in range(n)]
        assert sorted(image) == list(range(n)), n
        assert all(perm.preimage(y) == x for x, y in enumerate(image)), n
    for n, q, w in [(95, 10, 3), (1003, 10, 4), (300, 7, 2), (64, 64, 1),
                    (1000, 1, 1), (777, 13, 100), (2000, 100, 4)]:
        config = Config("block", n, 1, n ^ q, block_size=q, window_blocks=w)
        for cycle in range(4):
            laid = block_cycle(config, cycle)
            assert sorted(laid) == list(range(n)), (n, q, w, cycle)
            direct = [block_index(config, cycle, p) for p in range(n)]
            assert laid == direct, (n, q, w, cycle)
    assert word(0, 0) == 0xE220A8397B1DCDAF  # SplitMix64(0)'s first output
    print("reference checks passed", file=sys.stderr)


if __name__ == "__main__":
    if "--check" in sys.argv:
        check()
    sys.stdout.write(golden())
