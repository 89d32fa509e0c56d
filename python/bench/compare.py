"""zrecord from Python, side by side: against the same gathers from Rust
(`zrecord bench`), against loaderx 2.8.19 (the Python tool zrecord
succeeds) on the workloads (a), (b), (c) and the loader (e) of
benches/DATA.md, and the Ray sink's write rate against
`zrecord import parquet` on the same files.

    pip install ./python loaderx==2.8.19 ray pandas pyarrow
    cargo build --release -p zrecord-cli --features parquet
    python python/bench/compare.py --zrecord target/release/zrecord

Systems are timed in interleaved rounds (a rotating order); the tables give
medians over rounds and the median of per-round ratios. Every system's
first batches are checked against the source arrays before timing.
"""

import os

# numpy's OpenBLAS starts a thread per core that spins for a while after
# any call; on a small machine it takes cores from the gathers (every
# system alike). No workload here uses BLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads  # noqa: E402

import zrecord  # noqa: E402

MIB = 1 << 20
BATCH = 256


def loaderx():
    try:
        import loaderx
        from loaderx import Allocator
        from loaderx.zrecord import DenseStore, DenseWriter, RaggedBatch, RaggedStore, RaggedWriter
    except ImportError:
        return None
    return dict(
        version=loaderx.__version__, Allocator=Allocator, DenseStore=DenseStore,
        DenseWriter=DenseWriter, RaggedBatch=RaggedBatch, RaggedStore=RaggedStore,
        RaggedWriter=RaggedWriter,
    )  # fmt: skip


def timed(f):
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


# --- writing ---------------------------------------------------------------


def chunks(n, size):
    return [(s, min(s + size, n)) for s in range(0, n, size)]


def write_zrecord(path, data, codec):
    if isinstance(data, tuple):  # ragged: (lengths, tokens)
        lengths, tokens = data
        offsets = np.concatenate([[0], np.cumsum(lengths)])

        def run():
            with zrecord.create(path, np.int32, ragged=True, codec=codec) as s:
                for a, b in chunks(len(lengths), 4096):
                    flat = tokens[offsets[a] : offsets[b]]
                    s.append(zrecord.Ragged(flat, None, lengths[a:b].astype("<u8"),
                                            np.ones(b - a, "<u8")))  # fmt: skip
                s.sync()

    else:

        def run():
            with zrecord.create(path, data.dtype, shape=data.shape[1:], codec=codec) as s:
                for a, b in chunks(len(data), max(1, (16 * MIB) // data[0].nbytes)):
                    s.append(data[a:b])
                s.sync()

    return timed(run)


def write_loaderx(lx, path, data, codec):
    if isinstance(data, tuple):
        lengths, tokens = data
        offsets = np.concatenate([[0], np.cumsum(lengths)])

        def run():
            with lx["RaggedWriter"](path, np.int32, 1, codec=codec) as w:
                for a, b in chunks(len(lengths), 4096):
                    recs = [tokens[offsets[i] : offsets[i + 1]] for i in range(a, b)]
                    w.append(lx["RaggedBatch"].from_records(recs))

    else:

        def run():
            with lx["DenseWriter"](path, data.dtype, data.shape[1:], codec=codec) as w:
                for a, b in chunks(len(data), max(1, (16 * MIB) // data[0].nbytes)):
                    w.append(np.ascontiguousarray(data[a:b]))

    return timed(run)


# --- gathering -------------------------------------------------------------


def expected(data, idx):
    if isinstance(data, tuple):
        lengths, tokens = data
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        return [tokens[offsets[i] : offsets[i + 1]] for i in idx]
    return data[idx]


def same(got, want):
    if isinstance(want, list):
        return len(got) == len(want) and all(np.array_equal(g, w) for g, w in zip(got, want))
    return np.array_equal(got, want)


class ZrecordPython:
    def __init__(self, path, reuse):
        self.store = zrecord.open(path, read_only=True)
        self.reuse = reuse and self.store.kind == "dense"
        self.out = np.empty((BATCH, *self.store.shape), self.store.dtype) if self.reuse else None

    def batch(self, idx):
        if self.reuse:
            return self.store.gather(idx, out=self.out)
        return self.store.gather(idx)

    def records(self, idx):
        got = self.batch(idx)
        return list(got) if isinstance(got, zrecord.Ragged) else got.copy()

    def nbytes(self, got):
        return got.values.nbytes if isinstance(got, zrecord.Ragged) else got.nbytes


class Loaderx:
    def __init__(self, lx, path, ragged):
        self.store = (lx["RaggedStore"] if ragged else lx["DenseStore"])(path)
        self.alloc = lx["Allocator"]("cpu")
        self.view = self.store.bind(self.alloc)
        self.ragged = ragged

    def batch(self, idx):
        got = self.view[idx]
        if self.ragged:
            return np.from_dlpack(got.values), got
        return np.from_dlpack(got), got

    def records(self, idx):
        arr, got = self.batch(idx)
        if self.ragged:
            return [np.array(np.from_dlpack(t), copy=True) for t in got.to_tensors()]
        return np.array(arr, copy=True)

    def nbytes(self, got):
        return got[0].nbytes


def gather_rate(system, plan):
    total = 0
    start = time.perf_counter()
    for idx in plan:
        total += system.nbytes(system.batch(idx))
    return total / (time.perf_counter() - start) / MIB


def rust_rate(cli, path, batches):
    out = subprocess.run(
        [cli, "bench", path, "--batch", str(BATCH), "--batches", str(batches)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return float(re.search(r"([0-9.]+) MiB/s", out).group(1))


# --- the tables ------------------------------------------------------------


def median_ratio(rounds, a, b):
    return statistics.median(r[a] / r[b] for r in rounds)


def store_rows(name, data, plan, args, lx, dirs):
    rows = []
    ragged = isinstance(data, tuple)
    logical = int(data[1].nbytes) if ragged else int(data.nbytes)
    for codec in ("raw", "zstd"):
        zpath = os.path.join(dirs, f"{name}-{codec}.zr")
        lpath = os.path.join(dirs, f"{name}-{codec}.lx")
        writes = {"zrecord": logical / write_zrecord(zpath, data, codec) / MIB}
        if lx:
            writes["loaderx"] = logical / write_loaderx(lx, lpath, data, codec) / MIB
        systems = {
            "zrecord, Python, into one array": ZrecordPython(zpath, reuse=True),
            "zrecord, Python, new arrays": ZrecordPython(zpath, reuse=False),
        }
        if ragged:
            del systems["zrecord, Python, into one array"]
        if lx:
            systems[f"loaderx {lx['version']}"] = Loaderx(lx, lpath, ragged)
        for label, system in systems.items():
            for idx in plan[:2]:
                if not same(system.records(idx), expected(data, idx)):
                    raise SystemExit(f"{name} {codec} {label}: a batch differs from the source")
        for idx in plan:  # warm-up: the page cache and the maps
            for system in systems.values():
                system.batch(idx)
        rounds = []
        order = list(systems) + ["zrecord, Rust (`zrecord bench`)"]
        for r in range(args.rounds):
            measured = {}
            for label in order[r % len(order) :] + order[: r % len(order)]:
                if label in systems:
                    measured[label] = gather_rate(systems[label], plan)
                else:
                    measured[label] = rust_rate(args.zrecord, zpath, len(plan))
            rounds.append(measured)
        rust = "zrecord, Rust (`zrecord bench`)"
        best_python = next(iter(systems))
        for label in order:
            row = {
                "workload": name, "codec": codec, "system": label,
                "gather_mib_s": statistics.median(r[label] for r in rounds),
                "x_rust": median_ratio(rounds, label, rust),
            }  # fmt: skip
            if lx and label != f"loaderx {lx['version']}":
                row["x_loaderx"] = median_ratio(rounds, label, f"loaderx {lx['version']}")
            if label == best_python:
                row["write_mib_s"] = writes["zrecord"]
                if lx:
                    row["write_x_loaderx"] = writes["zrecord"] / writes["loaderx"]
            if lx and label.startswith("loaderx"):
                row["write_mib_s"] = writes["loaderx"]
            rows.append(row)
        for system in systems.values():
            if isinstance(system, ZrecordPython):
                system.store.close()
            else:
                system.store.close()
                system.alloc.close()
        shutil.rmtree(zpath, ignore_errors=True)
        shutil.rmtree(lpath, ignore_errors=True)
    return rows


def loader_rows(data, args, lx, dirs):
    """(e): data (a) raw and an i64 label per record, batch 256, iid."""
    images, labels = os.path.join(dirs, "e-images.zr"), os.path.join(dirs, "e-labels.zr")
    write_zrecord(images, data, "raw")
    label = np.arange(len(data), dtype=np.int64)
    write_zrecord(labels, label, "raw")
    runs = {}

    def zrecord_run():
        loader = zrecord.Loader({"images": images, "labels": labels}, BATCH, mode="iid", seed=5)
        for _ in range(args.warmup):
            b = next(loader)
        assert np.array_equal(b["images"], data[b.indices]) and np.array_equal(b["labels"], b.indices)
        start = time.perf_counter()
        for _ in range(args.loader_batches):
            next(loader)
        return args.loader_batches / (time.perf_counter() - start)

    runs["zrecord, Python (2 workers)"] = zrecord_run
    if lx:
        from loaderx import Loader
        from loaderx.sampler import Sampler

        limages, llabels = os.path.join(dirs, "e-images.lx"), os.path.join(dirs, "e-labels.lx")
        write_loaderx(lx, limages, data, "raw")
        write_loaderx(lx, llabels, label, "raw")

        def loaderx_run():
            with lx["DenseStore"](limages) as si, lx["DenseStore"](llabels) as sl, \
                    lx["Allocator"]("cpu") as alloc:  # fmt: skip
                sampler = Sampler(len(data), BATCH, Sampler.Mode.IID, seed=5)
                loader = Loader({"images": [si.bind(alloc)], "labels": [sl.bind(alloc)]},
                                sampler, workers=2, prefetch=4)  # fmt: skip
                with loader:
                    for _ in range(args.warmup):
                        shard = next(loader)[0]
                    got = np.from_dlpack(shard["labels"])
                    assert np.array_equal(np.from_dlpack(shard["images"]), data[got])
                    start = time.perf_counter()
                    for _ in range(args.loader_batches):
                        next(loader)
                    return args.loader_batches / (time.perf_counter() - start)

        runs[f"loaderx {lx['version']} (2 workers)"] = loaderx_run
    rounds = []
    order = list(runs)
    for r in range(args.rounds):
        rounds.append({k: runs[k]() for k in order[r % len(order) :] + order[: r % len(order)]})
    first = order[0]
    return [
        {
            "system": k,
            "batches_s": statistics.median(r[k] for r in rounds),
            "x_loaderx": median_ratio(rounds, first, order[-1]) if lx and k == first else None,
        }
        for k in order
    ]


RAY_SYSTEMS = {
    "cli": "`zrecord import parquet`",
    "ray": "Ray job: `read_parquet` + the sink, Ray's default reader",
    "ray-bins": "the same, read tasks of 32 MiB (`RAY_DATA_PARQUET_BIN_PACKING_BYTES`)",
    "ray-v1": "the same, Ray's older reader (`use_datasource_v2 = False`), a task per file",
    "read": "Ray's read alone: the older reader and a sink that writes nothing",
    "sink": "the sink alone: the tables already in Ray's object store",
}
BIN_BYTES = "RAY_DATA_PARQUET_BIN_PACKING_BYTES"


def busy_cpu_s():
    """CPU seconds the whole machine has been busy (every process: Ray's
    driver, workers and daemons, or the command), from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:]]
    except OSError:
        return None
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


def ray_rows(data, args, dirs):
    """Ray Data jobs with the sink on 2 workers against `zrecord import
    parquet`, on the same Parquet files of (b) with labels: 4 files, and 16
    (the 4 four times over, so that Ray's fixed costs per job weigh less).
    Every system's time is its whole job, Ray's planning included."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import ray

    import zrecord.ray

    class Discard(ray.data.Datasink):
        def write(self, blocks, ctx):
            for _ in blocks:
                pass

    n = len(data)
    logical = data.nbytes + 8 * n
    tables = []
    for a, b in chunks(n, (n + 3) // 4):
        flat = pa.array(data[a:b].reshape(-1))
        image = pa.FixedSizeListArray.from_arrays(pa.FixedSizeListArray.from_arrays(flat, 28), 28)
        tables.append(pa.table({"image": image, "label": pa.array(np.arange(a, b, dtype=np.int64))}))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    default_bins = os.environ.get(BIN_BYTES)
    results = []
    for copies in [1] if args.quick else [1, 4]:
        folder = os.path.join(dirs, f"parquet-{copies}")
        os.makedirs(folder)
        for c in range(copies):
            for k, table in enumerate(tables):
                pq.write_table(table, os.path.join(folder, f"c{c}-b{k}.parquet"), compression="zstd")
        files = 4 * copies
        systems = list(RAY_SYSTEMS)
        rates, cpus = [], []  # per round: {system: MiB/s}, {system: CPU s}
        for r in range(args.rounds + 1):  # the first round warms Ray's workers up
            rate, cpu = {}, {}
            for system in systems[r % len(systems) :] + systems[: r % len(systems)]:
                out = os.path.join(dirs, f"out-{system}")
                shutil.rmtree(out, ignore_errors=True)
                context.use_datasource_v2 = system in ("ray", "ray-bins")
                if system == "ray-bins":
                    os.environ[BIN_BYTES] = str(32 * MIB)
                elif default_bins is None:
                    os.environ.pop(BIN_BYTES, None)
                else:
                    os.environ[BIN_BYTES] = default_bins
                # The sink's tables enter the object store, untimed, for its
                # own run only: every other job starts with the store empty.
                held = None
                if system == "sink":
                    held = [ray.put(pq.read_table(os.path.join(folder, f))) for f in sorted(os.listdir(folder))]

                def run():
                    if system == "cli":
                        subprocess.run([args.zrecord, "import", "parquet", folder, out, "-q"], check=True)
                    elif system == "sink":
                        ray.data.from_arrow_refs(held).write_datasink(zrecord.ray.Datasink(out))
                    else:
                        # The older reader splits a read into 200 tasks unless told.
                        split = {} if context.use_datasource_v2 else {"override_num_blocks": files}
                        ds = ray.data.read_parquet(folder, **split)
                        ds.write_datasink(Discard() if system == "read" else zrecord.ray.Datasink(out))

                busy = busy_cpu_s()
                secs = timed(run)
                if busy is not None:
                    cpu[system] = busy_cpu_s() - busy
                if system != "read":  # the command writes a store per column, a job a dataset
                    written = os.path.join(out, "label") if system == "cli" else out
                    assert len(zrecord.open(written)) == n * copies
                del held
                rate[system] = logical * copies / secs / MIB
            if r:
                rates.append(rate)
                cpus.append(cpu)
        results.append({
            "files": files,
            "mib": logical * copies / MIB,
            "systems": {
                s: {
                    "mib_s": statistics.median(r[s] for r in rates),
                    "x_cli": median_ratio(rates, s, "cli"),
                    "cpu_s": statistics.median(c[s] for c in cpus) if all(s in c for c in cpus) else None,
                }
                for s in systems
            },
        })  # fmt: skip
        shutil.rmtree(folder)
    ray.shutdown()
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--zrecord", required=True, help="the zrecord command (a release build)")
    p.add_argument("--only", default="a,b,c,e,ray")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="small workloads: a smoke test")
    p.add_argument("--dir", default=None, help="where the stores go (default: a temporary folder)")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    args.warmup, args.loader_batches = (2, 5) if args.quick else (5, 60)
    only = set(args.only.split(","))
    lx = loaderx()
    if lx is None:
        print("loaderx is not installed: its rows are left out (pip install loaderx==2.8.19)")
    dirs = tempfile.mkdtemp(prefix="zrecord-pybench-", dir=args.dir)
    results = {"loaderx": lx and lx["version"], "rows": [], "loader": [], "ray": None}
    try:
        a = b = None
        if "a" in only or "e" in only:
            a = workloads.dense_large(40 if args.quick else 2500)
            if not args.quick:
                workloads.check("a", a)
        if "b" in only or "ray" in only:
            b = workloads.dense_small(2000 if args.quick else 200_000)
            if not args.quick:
                workloads.check("b", b)
        if "a" in only:
            results["rows"] += store_rows("(a)", a, workloads.plan(5, 4 if args.quick else 40, BATCH, len(a)), args, lx, dirs)
        if "b" in only:
            results["rows"] += store_rows("(b)", b, workloads.plan(6, 4 if args.quick else 400, BATCH, len(b)), args, lx, dirs)
        if "c" in only:
            c = workloads.ragged_tokens(2000 if args.quick else 100_000)
            if not args.quick:
                workloads.check("c_lengths", c[0].astype("<u4"))
                workloads.check("c_tokens", c[1])
            results["rows"] += store_rows("(c)", c, workloads.plan(7, 4 if args.quick else 200, BATCH, len(c[0])), args, lx, dirs)
        if "e" in only:
            results["loader"] = loader_rows(a, args, lx, dirs)
        if "ray" in only:
            results["ray"] = ray_rows(b, args, dirs)
    finally:
        shutil.rmtree(dirs, ignore_errors=True)
    report(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def report(results):
    fmt = lambda v, suffix="×": "—" if v is None else f"{v:.2f}{suffix}"  # noqa: E731
    print("| workload | codec | system | write MiB/s | write × loaderx | gather MiB/s | × Rust | × loaderx |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for r in results["rows"]:
        write = r.get("write_mib_s")
        print(f"| {r['workload']} | {r['codec']} | {r['system']} | {'—' if write is None else f'{write:.0f}'} "
              f"| {fmt(r.get('write_x_loaderx'))} | {r['gather_mib_s']:.0f} | {fmt(r['x_rust'])} "
              f"| {fmt(r.get('x_loaderx'))} |")  # fmt: skip
    if results["loader"]:
        print("\n| loader (e), batch 256 | batches/s | × loaderx |\n|---|---:|---:|")
        for r in results["loader"]:
            print(f"| {r['system']} | {r['batches_s']:.1f} | {fmt(r['x_loaderx'])} |")
    if results["ray"]:
        sizes = results["ray"]
        cpu = lambda v: "—" if v is None else f"{v:.1f}"  # noqa: E731
        head = " | ".join(f"{r['files']} files, {r['mib']:.0f} MiB: MiB/s | × command | CPU s" for r in sizes)
        print(f"\n| writer, (b) + labels from Parquet, 2 workers | {head} |")
        print("|---|" + "---:|---:|---:|" * len(sizes))
        for s, name in RAY_SYSTEMS.items():
            cells = " | ".join(
                f"{r['systems'][s]['mib_s']:.0f} | {r['systems'][s]['x_cli']:.2f}× | {cpu(r['systems'][s]['cpu_s'])}"
                for r in sizes
            )
            print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()
