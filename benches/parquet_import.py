"""Parquet import against pyarrow, side by side in one run.

Scales a Parquet file up (its rows repeated --scale times, written with the
same compression and --row-group rows per row group), then times, alternately,
--runs times each:

  pyarrow:  pq.read_table(file), then every column's buffers (values, offsets)
            written raw to one file per column -- the same bytes a raw store holds;
  zrecord:  zrecord import parquet FILE OUT --codec raw

and prints the medians and their ratio (zrecord / pyarrow).

    pip install pyarrow
    cargo build --release -p zrecord --features parquet
    python3 benches/parquet_import.py target/release/zrecord FIXTURE.parquet [--scale 200] [--runs 5]
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

import pyarrow as pa
import pyarrow.parquet as pq


def scaled(fixture, scale, row_group, out):
    table = pq.read_table(fixture)
    codec = pq.ParquetFile(fixture).metadata.row_group(0).column(0).compression.lower()
    big = pa.concat_tables([table] * scale)
    pq.write_table(big, out, row_group_size=row_group, compression=codec)
    return big.num_rows, codec


def pyarrow_import(path, out):
    """read_table, then each column's buffers to a file of its own."""
    table = pq.read_table(path)
    os.makedirs(out)
    for name in table.column_names:
        with open(os.path.join(out, name), "wb") as f:
            for chunk in table.column(name).chunks:
                for buf in chunk.buffers():
                    if buf is not None:
                        f.write(buf)
        # the same durability as the store's sync
        with open(os.path.join(out, name), "rb+") as f:
            os.fsync(f.fileno())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("zrecord")
    p.add_argument("fixture")
    p.add_argument("--scale", type=int, default=200)
    p.add_argument("--row-group", type=int, default=65536)
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="parquet-bench-")
    try:
        big = os.path.join(work, "big.parquet")
        rows, codec = scaled(a.fixture, a.scale, a.row_group, big)
        print(f"{os.path.basename(a.fixture)} x {a.scale}: {rows} rows, {os.path.getsize(big) / 1e6:.1f} MB "
              f"({codec}, {a.row_group} rows per row group); pyarrow {pa.__version__}, {os.cpu_count()} cores")
        times = {"pyarrow": [], "zrecord": []}
        for run in range(a.runs + 1):  # the first run warms the page cache
            for name in times:
                out = os.path.join(work, name)
                shutil.rmtree(out, ignore_errors=True)
                start = time.perf_counter()
                if name == "pyarrow":
                    pyarrow_import(big, out)
                else:
                    subprocess.run([a.zrecord, "import", "parquet", big, out, "--codec", "raw", "--quiet"],
                                   check=True)
                if run > 0:
                    times[name].append(time.perf_counter() - start)
        med = {k: statistics.median(v) for k, v in times.items()}
        for k, v in times.items():
            print(f"  {k:8} median {med[k]:.3f} s  (min {min(v):.3f}, max {max(v):.3f})")
        print(f"  zrecord / pyarrow = {med['zrecord'] / med['pyarrow']:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
