//! `zrecord push` and `zrecord pull`: run by the `zrecord-remote` command,
//! which carries the object-storage clients (`cargo install zrecord-remote
//! --features cli`), so this command stays small without them.

use std::ffi::OsString;
use std::process::Command;

use anyhow::anyhow;

use crate::{EXIT_ERROR, Failure};

/// The program that does the copying.
const PROGRAM: &str = "zrecord-remote";

/// Runs `zrecord-remote SUBCOMMAND ARGS…`; fails with its exit code.
pub(crate) fn run(subcommand: &str, args: Vec<OsString>) -> Result<(), Failure> {
    let status = Command::new(PROGRAM)
        .arg(subcommand)
        .args(args)
        .status()
        .map_err(|e| {
            let error = if e.kind() == std::io::ErrorKind::NotFound {
                anyhow!(
                    "`zrecord {subcommand}` runs `{PROGRAM}`, which is not installed: \
                     cargo install zrecord-remote --features cli"
                )
            } else {
                anyhow!("cannot run {PROGRAM}: {e}")
            };
            Failure::from(error)
        })?;
    if status.success() {
        return Ok(());
    }
    Err(Failure {
        code: status.code().map_or(EXIT_ERROR, |c| c.clamp(1, 255) as u8),
        error: anyhow!("{PROGRAM} {subcommand} failed"),
    })
}
