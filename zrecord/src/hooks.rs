//! Hold points for tests that kill a process at an exact step of a write.
//!
//! Not API: compiled only with the non-default feature `internals`, which
//! the crate's own tests turn on. Without it every hold point is an empty
//! inline function.
//!
//! A process whose environment has `ZRECORD_TEST_HOLD=<point>:<n>` stops
//! the `n`-th time (counting from 1, over all threads) any thread reaches
//! `<point>`: it prints `ZRECORD-HELD <point> <n>` on stderr and sleeps until
//! it is killed. The crash tests wait for that line, look at the files, and
//! send SIGKILL — so every kill lands exactly where the test says, whatever
//! the machine's speed.
//!
//! The points, in the order an operation reaches them:
//!
//! | point | reached |
//! | --- | --- |
//! | `append:payload` | an append wrote its payload, not its table entries |
//! | `append:table` | an append wrote its table entries, not the header (the commit) |
//! | `compact:journaled` | a compaction journaled a move, before writing the record |
//! | `compact:moved` | a compaction wrote a moved record, before its table entry |
//! | `compact:relocated` | a compaction copied records past the frontier and pointed their table entries there |
//! | `compact:entry` | a compaction wrote a moved record's table entry, before clearing the journal |
//! | `delete:journaled` | a delete wrote its journal, before moving any table entry |
//! | `delete:entry` | a delete moved one table entry (or skipped one that needs none) |
//! | `delete:committed` | a delete committed its length, before removing the journal |

/// The environment variable that arms a hold point.
#[cfg(feature = "internals")]
pub const HOLD_ENV: &str = "ZRECORD_TEST_HOLD";

/// The environment variable that keeps compaction from copying records past
/// the frontier, so the tests reach its journaled moves (every record moving
/// onto its own old bytes) however much room the tail chunk has.
#[cfg(feature = "internals")]
pub const NO_RELOCATE_ENV: &str = "ZRECORD_TEST_NO_RELOCATE";

/// Whether [`NO_RELOCATE_ENV`] is set.
#[cfg(feature = "internals")]
pub(crate) fn relocation_off() -> bool {
    std::env::var_os(NO_RELOCATE_ENV).is_some()
}

#[cfg(not(feature = "internals"))]
#[inline(always)]
pub(crate) fn relocation_off() -> bool {
    false
}

/// The line (then a space, the point and the count) printed on stderr at a hold.
#[cfg(feature = "internals")]
pub const HELD: &str = "ZRECORD-HELD";

/// Stops here forever if this process is armed for the `n`-th arrival at
/// `point` and this is it (see the module docs).
#[cfg(feature = "internals")]
pub(crate) fn hold(point: &'static str) {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    static ARMED: OnceLock<Option<(String, u64)>> = OnceLock::new();
    static ARRIVALS: AtomicU64 = AtomicU64::new(0);
    let armed = ARMED.get_or_init(|| {
        let value = std::env::var(HOLD_ENV).ok()?;
        let (name, n) = value.rsplit_once(':')?;
        Some((name.to_owned(), n.parse().ok()?))
    });
    let Some((name, n)) = armed else { return };
    if name != point || ARRIVALS.fetch_add(1, Ordering::SeqCst) + 1 != *n {
        return;
    }
    {
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{HELD} {point} {n}");
        let _ = err.flush();
    }
    loop {
        std::thread::park();
    }
}

#[cfg(not(feature = "internals"))]
#[inline(always)]
pub(crate) fn hold(_point: &'static str) {}
