//! The cold table: random batches read from disk, not from the page cache.
//! Before every timed round the store's pages are evicted (as `zrecord bench
//! --cold` does), then batches are gathered through the memory-mapped
//! backend and through explicit reads, in independent (`iid`) and
//! block-shuffled (`block`, runs of 64 records) order. The limit is `fio` on
//! the store's own data file in the same run: 4 KiB random reads for (b)
//! and (c), 256 KiB for (a), iodepth 32, `O_DIRECT`. In `iid` order the
//! loader (default workers and prefetch, explicit reads) is timed too,
//! against the bare gather loop.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use zrecord::storage::{Io, page_cache};
use zrecord::{AnyStore, Codec, OpenOptions};
use zrecord_loader::{Loader, Mode, Stream};

use super::Result;
use super::report::{Report, Table, fmt_num, fmt_ratio};
use super::store_table::{Workload, records};
use super::systems::{Source, System, Zrecord};
use crate::plans::{BATCH, plan};
use crate::workloads::{DENSE_A, DENSE_B};

/// Records per run of the block-shuffled order.
const BLOCK: u64 = 64;

/// Above this resident share after eviction a figure would not be cold.
const COLD_LIMIT: f64 = 0.01;

/// Builds a raw store of each workload and times cold gathers of it.
pub fn run(quick: bool, report: &mut Report) -> Result<Table> {
    #[rustfmt::skip]
    let columns = [
        "workload", "order", "fio limit", "mapped", "direct",
        "direct / fio", "direct / mapped", "loader / direct",
    ];
    let mut table = Table::new(
        "Cold reads: random batches of 256 from disk (pages evicted before each round)",
        &columns,
    );
    for workload in [
        Workload::Dense(DENSE_A),
        Workload::Dense(DENSE_B),
        Workload::Ragged,
    ] {
        let (letter, full, seed) = workload.spec();
        let n = records(letter, full, quick);
        let (source, _) = workload.generate(n)?;
        // On the disk the other stores use: a temporary folder of the system's.
        let dir = tempfile::Builder::new().prefix("zrecord-cold").tempdir()?;
        let path = dir.path().join("store");
        drop(Zrecord::write(&path, &source, Codec::Raw)?);
        let large = letter == 'a';
        let bs = if large { "256k" } else { "4k" };
        let limit = fio(&path.join("0.chunk"), bs, quick);
        let batches = match (quick, large) {
            (true, _) => 2,
            (false, true) => 6,
            (false, false) => 40,
        };
        for (order, block) in [("iid", 1), ("block", BLOCK)] {
            let plan = indices(seed, batches, n as u64, block);
            let loader = match order {
                "iid" => cold(&path, || loader_rate(&path, seed, batches))?,
                _ => Some(0.0),
            };
            let gather = |io| cold(&path, || gather_rates(&path, &source, io, &plan));
            let (Some(loader), Some(mapped), Some(direct)) =
                (loader, gather(Io::Mapped)?, gather(Io::Direct)?)
            else {
                table.note(format!(
                    "({letter}) skipped: its pages stay in memory after eviction (a store on tmpfs?)."
                ));
                break;
            };
            // (a) is limited by bandwidth, (b) and (c) by reads.
            let unit = if large { "MB/s" } else { "k records/s" };
            let rate = |(records, bytes): (f64, f64)| {
                if large { bytes / 1e6 } else { records / 1e3 }
            };
            let (fio_rate, direct_rate, mapped_rate) =
                (limit.map(rate), rate(direct), rate(mapped));
            for (system, rate) in [
                ("zrecord mapped, cold", mapped_rate),
                ("zrecord direct, cold", direct_rate),
            ] {
                report.push(letter, &format!("{system} {order}"), "rate", rate, unit);
            }
            table.rows.push(vec![
                format!("({letter})"),
                order.into(),
                fio_rate.map_or("no fio".into(), |r| format!("{} {unit}", fmt_num(r))),
                format!("{} {unit}", fmt_num(mapped_rate)),
                format!("{} {unit}", fmt_num(direct_rate)),
                fio_rate.map_or("-".into(), |r| fmt_ratio(direct_rate / r)),
                fmt_ratio(direct_rate / mapped_rate),
                if order == "iid" {
                    fmt_ratio(loader / direct.0)
                } else {
                    "-".into()
                },
            ]);
        }
    }
    let fio_runs = Command::new("fio").arg("--version").output();
    if !fio_runs.is_ok_and(|o| o.status.success()) {
        table.note("fio is not installed here: no limits measured (Debian package `fio`).");
    }
    table.note(format!(
        "Stores of raw records; {} batches per round ((a): 6); block order: runs of {BLOCK} consecutive records.",
        if quick { 2 } else { 40 }
    ));
    Ok(table)
}

/// `batches` batches of 256 indices below `n`: independent draws of the
/// workload's plan (`block` 1), or runs of `block` consecutive records
/// starting at block-aligned draws.
fn indices(seed: u64, batches: usize, n: u64, block: u64) -> Vec<Vec<u64>> {
    let blocks = n.div_ceil(block);
    plan(seed, batches, BATCH, n)
        .into_iter()
        .map(|draws| {
            draws
                .chunks(block as usize)
                .flat_map(|run| {
                    let first = run[0] % blocks * block;
                    (0..run.len() as u64).map(move |k| (first + k) % n)
                })
                .collect()
        })
        .collect()
}

/// Evicts the store's pages and runs `f`: `None` when the pages could not be
/// evicted (a file system in memory, such as tmpfs).
fn cold<T>(path: &Path, f: impl FnOnce() -> Result<T>) -> Result<Option<T>> {
    if page_cache::evict(path)?.share() > COLD_LIMIT {
        return Ok(None);
    }
    f().map(Some)
}

/// A loader's records/s over `batches` steps of explicit reads, start-up included.
fn loader_rate(path: &Path, seed: u64, batches: usize) -> Result<f64> {
    let options = OpenOptions::new().read_only(true).io(Io::Direct);
    let start = Instant::now();
    let stream = Stream::from(options.open::<AnyStore>(path)?);
    let mut loader = Loader::builder(BATCH as u64)
        .stream("x", stream)
        .mode(Mode::Iid)
        .seed(seed)
        .build()?;
    let mut records = 0;
    for batch in loader.steps(batches as u64) {
        records += batch?.len();
    }
    Ok(records as f64 / start.elapsed().as_secs_f64())
}

/// Opens the store with `io` and gathers `plan`: records/s and bytes/s.
fn gather_rates(path: &Path, source: &Source, io: Io, plan: &[Vec<u64>]) -> Result<(f64, f64)> {
    let mut store = Zrecord::open(path, source, OpenOptions::new().read_only(true).io(io))?;
    let start = Instant::now();
    let mut bytes = 0usize;
    for batch in plan {
        bytes += store.gather(batch).bytes.len();
    }
    let secs = start.elapsed().as_secs_f64();
    let records = plan.iter().map(Vec::len).sum::<usize>();
    Ok((records as f64 / secs, bytes as f64 / secs))
}

/// `fio`'s random reads of `bs` at iodepth 32 on `file` (`O_DIRECT`):
/// io_uring, or 32 `psync` jobs where io_uring is refused. Reads/s and bytes/s.
fn fio(file: &Path, bs: &str, quick: bool) -> Option<(f64, f64)> {
    let engines = [
        "--ioengine=io_uring --iodepth=32",
        "--ioengine=psync --iodepth=1 --numjobs=32",
    ];
    engines.iter().find_map(|engine| {
        let out = Command::new("fio")
            .arg("--name=cold")
            .arg(format!("--filename={}", file.display()))
            .args(["--rw=randread", &format!("--bs={bs}"), "--direct=1"])
            .arg(format!("--runtime={}", if quick { 1 } else { 8 }))
            .args(["--time_based", "--group_reporting", "--output-format=json"])
            .args(engine.split(' '))
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        let read = &json["jobs"][0]["read"];
        Some((read["iops"].as_f64()?, read["bw_bytes"].as_f64()?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_order_reads_runs_of_consecutive_records() {
        for batch in &indices(6, 3, 1000, 64) {
            assert_eq!(batch.len(), BATCH);
            for run in batch.chunks(64) {
                assert_eq!(run[0] % 64, 0);
                assert!(run.windows(2).all(|w| w[1] == (w[0] + 1) % 1000));
            }
        }
        assert_eq!(indices(6, 3, 1000, 1), plan(6, 3, BATCH, 1000));
    }
}
