#!/usr/bin/env python3
"""`zrecord import parquet` against pyarrow's `read_table` + writing the same
bytes raw, on a Parquet file scaled up.

    python3 benches/parquet_vs_pyarrow.py ZRECORD_BINARY FILE.parquet [--scale 200] [--rounds 3]

The file is scaled up by concatenating its table `--scale` times and writing
it again with pyarrow, with the source's compression and row-group size.
Then, alternately, `--rounds` times each: the zrecord command imports every
column (one store per column, each synced), and pyarrow reads the whole table
(`pyarrow.parquet.read_table`) and writes every column's Arrow buffers
(validity, offsets, values) to a file per column, fsynced: the same bytes a
raw import holds, written the cheapest way. Prints the median wall seconds of
each and their ratio. Needs `pip install pyarrow`; build the binary with
`cargo build --release -p zrecord --features cli`.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq


def scaled(src, scale, dst):
    meta = pq.ParquetFile(src).metadata
    table = pq.read_table(src)
    big = pa.concat_tables([table] * scale)
    column = meta.row_group(0).column(0)
    rows_per_group = max(1, meta.row_group(0).num_rows) * scale // max(1, meta.num_row_groups)
    pq.write_table(
        big,
        dst,
        compression=column.compression.lower(),
        row_group_size=rows_per_group,
    )
    return big.num_rows, os.path.getsize(dst)


def write_raw(table, out):
    """Every column's Arrow buffers, end to end, one fsynced file per column."""
    written = 0
    for name in table.column_names:
        array = table.column(name).combine_chunks()
        with open(os.path.join(out, name), "wb") as f:
            for buf in array.buffers():
                if buf is not None:
                    f.write(buf)
                    written += buf.size
            f.flush()
            os.fsync(f.fileno())
    return written


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("zrecord")
    p.add_argument("file")
    p.add_argument("--scale", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="parquet-vs-pyarrow-")
    try:
        big = os.path.join(work, "big.parquet")
        rows, size = scaled(a.file, a.scale, big)
        print(f"{a.file} × {a.scale}: {rows} rows, {size / 2**20:.1f} MiB of Parquet")
        ours, theirs = [], []
        for r in range(a.rounds):
            out = os.path.join(work, f"zr{r}")
            t = time.perf_counter()
            subprocess.run(
                [a.zrecord, "--quiet", "import", "parquet", big, out, "--codec", "raw"],
                check=True,
            )
            ours.append(time.perf_counter() - t)
            shutil.rmtree(out)

            out = os.path.join(work, f"pa{r}")
            os.mkdir(out)
            t = time.perf_counter()
            written = write_raw(pq.read_table(big), out)
            theirs.append(time.perf_counter() - t)
            shutil.rmtree(out)
        zr, pa_s = statistics.median(ours), statistics.median(theirs)
        print(f"zrecord import parquet: {zr:.2f} s (runs {', '.join(f'{x:.2f}' for x in ours)})")
        print(
            f"pyarrow read_table + raw write of {written / 2**20:.1f} MiB: {pa_s:.2f} s "
            f"(runs {', '.join(f'{x:.2f}' for x in theirs)})"
        )
        print(f"zrecord / pyarrow: {zr / pa_s:.2f}× the time (pyarrow {pa.__version__})")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
