//! zrecord side by side with the physical limits and the stores a Rust user
//! would otherwise pick, on the workloads of `benches/DATA.md`: a markdown
//! table per workload ((a)–(c) the stores, (d) the sampler, (e) the loader,
//! `cold` reads from disk, `levels` zstd_dict per level), then the targets.
//!
//! ```text
//! cargo run --release -p zrecord-benches --bin compare -- [--quick] [--only a,b,c,d,e,cold,levels] [--json PATH]
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use zrecord::DictTier;
use zrecord_benches::compare::machine::{self, Machine};
use zrecord_benches::compare::report::{Report, Table};
use zrecord_benches::compare::store_table::Workload;
use zrecord_benches::compare::{
    Result, cold_table, levels_table, loader_child, loader_table, sampler_table, store_table,
    summary,
};
use zrecord_benches::{DENSE_A, DENSE_B};

/// zrecord side by side with the limits and the other stores, on the
/// workloads of benches/DATA.md.
#[derive(Parser)]
struct Args {
    /// Shrunk workloads and short timing: a smoke test.
    #[arg(long)]
    quick: bool,
    /// Workloads to run.
    #[arg(long, value_delimiter = ',', default_value = "a,b,c,d,e,cold,levels")]
    only: Vec<Letter>,
    /// Write every measured value as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Run one loader configuration of (e) in this process (JSON) and print
    /// its result: the harness re-executes itself so peak RSS is the run's own.
    #[arg(long, hide = true)]
    loader_child: Option<String>,
}

/// A workload of benches/DATA.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Letter {
    A,
    B,
    C,
    D,
    E,
    Cold,
    Levels,
}

const TIERS: [DictTier; 3] = [DictTier::Fast, DictTier::Balanced, DictTier::Max];

fn show(table: &Table) {
    println!("{}", table.to_markdown());
}

fn run(args: &Args) -> Result<()> {
    let machine = Machine::probe();
    println!("Machine: {}\n", machine.summary());
    let start = Instant::now();
    let mut report = Report::new(machine);
    let (quick, wants) = (args.quick, |l| args.only.contains(&l));
    for (letter, workload, tiers) in [
        (Letter::A, Workload::Dense(DENSE_A), &[][..]),
        (Letter::B, Workload::Dense(DENSE_B), &TIERS[..]),
        (Letter::C, Workload::Ragged, &TIERS[..]),
    ] {
        if wants(letter) {
            let mut table = store_table::run(workload, tiers, quick, &mut report)?;
            if letter == Letter::A {
                table.note("zstd_dict not built for (a): dictionaries serve small records.");
            }
            show(&table);
        }
    }
    if wants(Letter::D) {
        show(&sampler_table::run(quick, &mut report)?);
    }
    let mut loader_targets = Vec::new();
    if wants(Letter::E) {
        let table;
        (table, loader_targets) = loader_table::run(quick, &mut report)?;
        show(&table);
    }
    if wants(Letter::Cold) {
        show(&cold_table::run(quick, &mut report)?);
    }
    if wants(Letter::Levels) {
        show(&levels_table::run(quick, &mut report)?);
    }
    show(&summary::targets(&report, &loader_targets));
    report.machine.load_average_end = machine::load_average().unwrap_or_default();
    println!(
        "Ran in {:.0} s; load average at the end: {}.",
        start.elapsed().as_secs_f64(),
        report.machine.load_average_end
    );
    if let Some(path) = &args.json {
        report.write_json(path)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match &args.loader_child {
        Some(config) => loader_child::main(config),
        None => run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_flags() {
        let args = Args::try_parse_from(["compare"]).unwrap();
        assert!(!args.quick && args.json.is_none());
        assert_eq!(args.only.len(), 7);
        let args = Args::try_parse_from(["compare", "--only", "cold,levels"]).unwrap();
        assert_eq!(args.only, [Letter::Cold, Letter::Levels]);
        let args =
            Args::try_parse_from(["compare", "--quick", "--only", "e,a", "--json", "x.json"]);
        let args = args.unwrap();
        assert!(args.quick && args.json == Some(PathBuf::from("x.json")));
        assert_eq!(args.only, [Letter::E, Letter::A]);
        for bad in [["--only", "f"], ["--only", "ab"], ["--fast", "x"]] {
            assert!(Args::try_parse_from(["compare", bad[0], bad[1]]).is_err());
        }
        let args = Args::try_parse_from(["compare", "--loader-child", "{}"]).unwrap();
        assert_eq!(args.loader_child.as_deref(), Some("{}"));
    }
}
