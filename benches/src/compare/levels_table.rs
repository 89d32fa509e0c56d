//! The zstd_dict levels table: for the small records of (b) and (c), the
//! write speed and ratio of every zstd level against a `Balanced`
//! dictionary, as a store's append compresses them (one frame per record,
//! content size and checksum on), on one thread. `zrecord::ZSTD_DICT_LEVEL`
//! is the fastest level whose ratio is within 3 % of level 19's on both.

use std::time::Instant;

use zrecord::{DictTier, ZSTD_DICT_LEVEL, train_dict};
use zstd::bulk::Compressor;
use zstd::dict::EncoderDictionary;

use super::Result;
use super::report::{MIB, Report, Table, fmt_num};
use super::store_table::{Workload, records};
use crate::workloads::DENSE_B;

/// The levels timed; 19 is the reference.
const LEVELS: [i32; 11] = [1, 2, 3, 4, 5, 6, 7, 9, 12, 15, 19];

/// Times every level on (b) and (c).
pub fn run(quick: bool, report: &mut Report) -> Result<Table> {
    let b = Workload::Dense(DENSE_B)
        .generate(records('b', DENSE_B.records, quick))?
        .0;
    let c = Workload::Ragged.generate(records('c', 20_000, quick))?.0;
    let workloads = [('b', b.records()), ('c', c.records())];
    let mut table = Table::new(
        "zstd_dict levels: write speed and ratio, one thread, Balanced dictionary",
        &["workload", "level", "MiB/s", "ratio", "ratio / level 19"],
    );
    for (letter, records) in &workloads {
        let dict = train_dict(records, DictTier::Balanced)?;
        let rows: Vec<(i32, f64, f64)> = LEVELS
            .iter()
            .map(|&level| compress_all(records, dict.as_bytes(), level).map(|(s, r)| (level, s, r)))
            .collect::<Result<_>>()?;
        let reference = rows.last().map_or(1.0, |r| r.2);
        for (level, speed, ratio) in rows {
            let system = format!("zstd_dict level {level}");
            report.push(*letter, &system, "write", speed, "MiB/s");
            let mark = (level == ZSTD_DICT_LEVEL).then_some(" (default)");
            let mark = mark.unwrap_or_default();
            table.rows.push(vec![
                format!("({letter})"),
                format!("{level}{mark}"),
                fmt_num(speed),
                format!("{ratio:.3}"),
                format!("{:.3}", ratio / reference),
            ]);
        }
    }
    table.note(format!(
        "(b): {} records of 784 B; (c): {} token sequences. Ratio: raw bytes / frame bytes.",
        workloads[0].1.len(),
        workloads[1].1.len()
    ));
    Ok(table)
}

/// Compresses every record at `level` against `dict`, one frame each into
/// a reused buffer: MiB/s and ratio.
fn compress_all(records: &[&[u8]], dict: &[u8], level: i32) -> Result<(f64, f64)> {
    let dict = EncoderDictionary::copy(dict, level);
    let mut compressor = Compressor::with_prepared_dictionary(&dict)?;
    compressor.include_checksum(true)?;
    let raw: usize = records.iter().map(|r| r.len()).sum();
    let longest = records.iter().map(|r| r.len()).max().unwrap_or(0);
    let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(longest));
    let start = Instant::now();
    let mut stored = 0;
    for record in records {
        stored += compressor.compress_to_buffer(record, &mut out)?;
    }
    let secs = start.elapsed().as_secs_f64();
    Ok((raw as f64 / secs / MIB, raw as f64 / stored as f64))
}
