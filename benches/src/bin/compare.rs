//! zrecord side by side with the physical limits and the stores a Rust user
//! would otherwise pick, on the workloads of BENCH-DATA.md: one markdown
//! table per workload, then the issues' targets, reached or not.
//!
//! ```text
//! cargo run --release -p zrecord-benches --bin compare -- [--quick] [--only a,b,c,d,e] [--json PATH]
//! ```
//!
//! - (a) dense 256 KiB, (b) dense 784 B, (c) ragged tokens: in-memory gather,
//!   memcpy and zstd frames decoded from memory (limits); zrecord raw, zstd and
//!   zstd_dict; memory-mapped `.npy`, Arrow IPC (`take`), safetensors (and HDF5
//!   with `--features hdf5`); a grouped-zstd compression ratio.
//! - (d) sampler index rates against `SmallRng` and Fisher–Yates.
//! - (e) the loader end to end, each configuration in a child process.
//!
//! `--quick` shrinks every workload (a smoke test, well under a minute);
//! `--json PATH` writes `{"machine": {...}, "rows": [...]}`.

use std::process::ExitCode;
use std::time::Instant;

use zrecord::DictTier;
use zrecord_benches::compare::loader_child::{self, CHILD_FLAG};
use zrecord_benches::compare::machine::{self, Machine};
use zrecord_benches::compare::options::Options;
use zrecord_benches::compare::report::{Report, Table};
use zrecord_benches::compare::{dense_run, loader_table, ragged_run, sampler_table, summary};
use zrecord_benches::{DENSE_A, DENSE_B};

const TIERS: [DictTier; 3] = [DictTier::Fast, DictTier::Balanced, DictTier::Max];

fn show(table: &Table) {
    println!("{}", table.to_markdown());
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

fn run(options: &Options) -> Result<(), Failure> {
    let machine = Machine::probe();
    println!("Machine: {}\n", machine.summary());
    let start = Instant::now();
    let mut report = Report::new(machine);
    let quick = options.quick;
    if options.wants('a') {
        // No zstd_dict for (a): level 19 on 256 KiB records writes at about
        // 1.5 MB/s on this machine (minutes for 655 MB), and a dictionary
        // serves small records.
        let mut table = dense_run::run(&DENSE_A, &[], quick, &mut report)?;
        table.note(
            "zstd_dict not built for (a): dictionaries serve small records, and level 19 on \
             256 KiB records would take minutes to write 655 MB here.",
        );
        show(&table);
    }
    if options.wants('b') {
        show(&dense_run::run(&DENSE_B, &TIERS, quick, &mut report)?);
    }
    if options.wants('c') {
        show(&ragged_run::run(&TIERS, quick, &mut report)?);
    }
    if options.wants('d') {
        show(&sampler_table::run(quick, &mut report));
    }
    let mut loader_targets = Vec::new();
    if options.wants('e') {
        let (table, targets) = loader_table::run(quick, &mut report)?;
        show(&table);
        loader_targets = targets;
    }
    show(&summary::targets(&report, &loader_targets));
    report.machine.load_average_end = machine::load_average().unwrap_or_default();
    println!(
        "Ran in {:.0} s; load average at the end: {}.",
        start.elapsed().as_secs_f64(),
        report.machine.load_average_end
    );
    if let Some(path) = &options.json {
        report.write_json(path)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(CHILD_FLAG) {
        return match loader_child::main(args.get(1).map_or("", String::as_str)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("loader child: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let options = match Options::parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
