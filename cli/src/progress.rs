//! Progress bars: on stderr when it is a terminal, hidden otherwise or with `--quiet`.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar over `total` records (0: unknown), labelled `what`.
pub(crate) fn records(quiet: bool, total: u64, what: &str) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    // An unknown total (0) shows a counter without a bar.
    let (bar, template) = if total == 0 {
        (
            ProgressBar::new_spinner(),
            "{prefix} {spinner} {human_pos} records {msg} ({per_sec})",
        )
    } else {
        (
            ProgressBar::new(total),
            "{prefix} [{bar:30}] {human_pos}/{human_len} records {msg} ({per_sec}, eta {eta})",
        )
    };
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(what.to_string());
    bar
}

/// Shows `bytes` so far in the bar's message.
pub(crate) fn show_bytes(bar: &ProgressBar, bytes: u64) {
    if !bar.is_hidden() {
        bar.set_message(format!("{}", indicatif::HumanBytes(bytes)));
    }
}

/// A bar over bytes copied (its length set as the total becomes known).
pub(crate) fn bytes(quiet: bool, what: &str) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template(
        "{prefix} [{bar:30}] {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, eta {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(what.to_string());
    bar
}

/// Moves a bytes bar to `done` of `total`.
pub(crate) fn set(bar: &ProgressBar, done: u64, total: u64) {
    bar.set_length(total);
    bar.set_position(done);
}
