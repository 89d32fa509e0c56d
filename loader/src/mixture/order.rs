//! [`MixOrder`]: a mixture's indices for any step and rank.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError};

use zsampler::{Mode, Sampler};

use super::Schedule;
use super::apportion::{Cursor, quantize};

/// How a mixture's weights depend on the step.
#[derive(Clone, Debug)]
pub(crate) enum Weights {
    /// The same parts every step.
    Fixed(Vec<i128>),
    /// Parts from a checked schedule.
    Schedule(Schedule),
}

impl Weights {
    fn parts(&self, step: u64) -> std::borrow::Cow<'_, [i128]> {
        match self {
            Weights::Fixed(parts) => parts.into(),
            Weights::Schedule(schedule) => quantize(&schedule.at(step)).into(),
        }
    }
}

/// How a mixture's batches are read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reading {
    /// In passes that serve every record of every source once, the last
    /// batch of a pass short (else an endless stream).
    pub(crate) once: bool,
    /// Each batch in slot order, its sources spread through it (else
    /// grouped by source within each rank's slice): for a packing loader's
    /// windows, whose documents are packed in order.
    pub(crate) interleave: bool,
}

/// Cursors are kept every this many steps, so that any step is at most
/// this many steps of apportionment away.
const CHECKPOINT_EVERY: u64 = 4096;

/// The indices of every step of a mixture: which source serves how many
/// records of the global batch (apportioned step by step), which records of
/// each source (its own sampler, read as a stream of positions), and where
/// in the global batch each lands.
#[derive(Debug)]
pub(crate) struct MixOrder {
    pub(crate) names: Arc<[Arc<str>]>,
    pub(crate) lens: Vec<u64>,
    /// The global index of each source's first record, then the total.
    starts: Vec<u64>,
    samplers: Vec<Sampler>,
    weights: Weights,
    batch_size: u64,
    reading: Reading,
    /// Global batch slot `t` holds the record at `t·stride mod B` of the
    /// sources' runs laid end to end: a bijection (the stride is coprime
    /// with `B`) that spreads every source over every rank's slice. A
    /// rank's batch is its slice in run order (grouped by source).
    stride: u64,
    pub(crate) fingerprint: u64,
    cursors: Mutex<Cursors>,
}

#[derive(Debug)]
struct Cursors {
    checkpoints: Vec<Cursor>,
    latest: Cursor,
}

thread_local! {
    /// A global batch in run order and the marks of one rank's slice of it.
    static SCRATCH: RefCell<(Vec<u64>, Vec<u64>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

impl MixOrder {
    pub(crate) fn new(
        names: Arc<[Arc<str>]>,
        lens: Vec<u64>,
        modes: Vec<Mode>,
        weights: Weights,
        batch_size: u64,
        seed: u64,
        reading: Reading,
    ) -> crate::Result<MixOrder> {
        let mut starts = vec![0u64];
        for &len in &lens {
            starts.push(starts[starts.len() - 1].saturating_add(len));
        }
        let samplers = (lens.iter().zip(&modes).enumerate())
            .map(|(k, (&len, &mode))| {
                // A cyclic epoch must be the whole source: a batch of 1. An
                // iid stream has no epochs: one long batch keeps a run of
                // positions in one kernel call.
                let batch = if mode == Mode::Iid { 1 << 40 } else { 1 };
                Sampler::builder(len, batch)
                    .seed(source_seed(seed, k))
                    .mode(mode)
                    .build()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut fingerprint = Fingerprint::default();
        for ((name, len), mode) in names.iter().zip(&lens).zip(&modes) {
            fingerprint.bytes(name.as_bytes());
            fingerprint.word(*len);
            fingerprint.bytes(mode.to_string().as_bytes());
        }
        match &weights {
            Weights::Fixed(parts) => parts.iter().for_each(|&p| fingerprint.word(p as u64)),
            Weights::Schedule(schedule) => {
                fingerprint.word(u64::from(schedule.linear));
                for (step, row) in &schedule.points {
                    fingerprint.word(*step);
                    row.iter().for_each(|w| fingerprint.word(w.to_bits()));
                }
            }
        }
        fingerprint.word(u64::from(reading.once));
        fingerprint.word(u64::from(reading.interleave));
        let start = Cursor::start(lens.len());
        Ok(MixOrder {
            names,
            lens,
            starts,
            samplers,
            weights,
            batch_size,
            reading,
            stride: stride(batch_size),
            fingerprint: fingerprint.0,
            cursors: Mutex::new(Cursors {
                checkpoints: vec![start.clone()],
                latest: start,
            }),
        })
    }

    /// The apportionment before `step`.
    pub(crate) fn cursor(&self, step: u64) -> Cursor {
        self.cursor_then(step, |_| ())
    }

    /// The apportionment before `step`, and `then` run on it under the lock;
    /// whatever cursor `then` leaves is kept as the latest.
    fn cursor_then(&self, step: u64, then: impl FnOnce(&mut Cursor)) -> Cursor {
        let mut cursors = self.cursors.lock().unwrap_or_else(PoisonError::into_inner);
        let Cursors {
            checkpoints,
            latest,
        } = &mut *cursors;
        let known = &checkpoints[(checkpoints.len() - 1).min((step / CHECKPOINT_EVERY) as usize)];
        let mut cursor = if (known.step..=step).contains(&latest.step) {
            latest.clone()
        } else {
            known.clone()
        };
        let mut counts = vec![0; self.lens.len()];
        while cursor.step < step {
            self.advance(&mut cursor, &mut counts);
            if cursor.step % CHECKPOINT_EVERY == 0
                && checkpoints.len() as u64 == cursor.step / CHECKPOINT_EVERY
            {
                checkpoints.push(cursor.clone());
            }
        }
        let before = cursor.clone();
        then(&mut cursor);
        *latest = cursor;
        before
    }

    /// Each source's records in the global batch of `step`, and how many
    /// each had served before it.
    pub(crate) fn counts(&self, step: u64) -> (Vec<u64>, Vec<u64>) {
        let mut counts = vec![0; self.lens.len()];
        // Workers mostly ask for the step after the last: keep it ready.
        let before = self.cursor_then(step, |cursor| self.advance(cursor, &mut counts));
        (before.served, counts)
    }

    /// Apportions the step after `cursor`.
    fn advance(&self, cursor: &mut Cursor, counts: &mut [u64]) {
        let parts = self.weights.parts(cursor.step);
        if self.reading.once {
            cursor.advance_once(self.batch_size, &parts, &self.lens, counts);
        } else {
            cursor.advance(self.batch_size, &parts, counts);
        }
    }

    /// Records in every source together.
    pub(crate) fn total(&self) -> u64 {
        self.starts[self.starts.len() - 1]
    }

    /// Writes the records at positions `offset .. offset + out.len()` of
    /// `step`'s global batch (global indices into the sources laid end to
    /// end), grouped by source in source order: which records a rank gets
    /// does not depend on the world size, and each source's records are one
    /// run for the gather — or, [interleaved](Reading::interleave), in slot
    /// order.
    pub(crate) fn fill(&self, step: u64, offset: u64, out: &mut [u64]) {
        if out.is_empty() {
            return;
        }
        let (before, counts) = self.counts(step);
        // The batch size, or what is left of a pass that serves every record once.
        let b = counts.iter().sum::<u64>() as usize;
        if offset == 0 && out.len() == b && !self.reading.interleave {
            return self.fill_runs(&before, &counts, out);
        }
        let stride = if b as u64 == self.batch_size {
            self.stride
        } else {
            stride(b as u64)
        };
        SCRATCH.with_borrow_mut(|(runs, marks)| {
            runs.resize(b, 0);
            self.fill_runs(&before, &counts, runs);
            let mut u = (u128::from(offset) * u128::from(stride) % b as u128) as usize;
            let stride = stride as usize;
            if self.reading.interleave {
                for slot in out.iter_mut() {
                    *slot = runs[u];
                    u += stride;
                    if u >= b {
                        u -= b;
                    }
                }
                return;
            }
            // Slot `t` of the global batch is run position `t·stride mod B`:
            // mark this slice's positions, then read them in run order.
            marks.clear();
            marks.resize(b.div_ceil(64), 0);
            for _ in 0..out.len().min(b) {
                marks[u / 64] |= 1 << (u % 64);
                u += stride;
                if u >= b {
                    u -= b;
                }
            }
            let mut slots = out.iter_mut();
            for (w, &word) in marks.iter().enumerate() {
                let mut bits = word;
                while bits != 0 {
                    if let Some(slot) = slots.next() {
                        *slot = runs[w * 64 + bits.trailing_zeros() as usize];
                    }
                    bits &= bits - 1;
                }
            }
        });
    }

    /// The whole global batch in run order: each source's `counts[k]`
    /// records after its first `before[k]`, sources in order.
    fn fill_runs(&self, before: &[u64], counts: &[u64], out: &mut [u64]) {
        let mut at = 0;
        for (k, sampler) in self.samplers.iter().enumerate() {
            let run = &mut out[at..at + counts[k] as usize];
            sampler.fill_positions(before[k], run);
            let start = self.starts[k];
            if start > 0 {
                run.iter_mut().for_each(|i| *i += start);
            }
            at += run.len();
        }
    }

    /// The name of the source of global index `index`.
    pub(crate) fn source_of(&self, index: u64) -> &str {
        let k = self
            .starts
            .partition_point(|&s| s <= index)
            .saturating_sub(1);
        &self.names[k.min(self.names.len() - 1)]
    }

    /// Records served and epochs completed by each source before `step`
    /// (all ranks together).
    pub(crate) fn progress(&self, step: u64) -> Vec<crate::SourceProgress> {
        // Every pass that serves each record once serves a whole epoch of each source.
        let (passes, step) = match self.reading.once {
            true => {
                let steps = self.total().div_ceil(self.batch_size).max(1);
                (step / steps, step % steps)
            }
            false => (0, step),
        };
        let cursor = self.cursor(step);
        (self.names.iter().zip(&cursor.served).zip(&self.lens))
            .map(|((name, &records), &len)| {
                let records = records + passes * len;
                crate::SourceProgress {
                    name: Arc::clone(name),
                    records,
                    epochs: records / len,
                }
            })
            .collect()
    }
}

/// Source `k`'s seed: unrelated orders for every source of one loader seed.
fn source_seed(seed: u64, k: usize) -> u64 {
    seed ^ (k as u64 + 1)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .rotate_left(29)
}

/// The stride closest to `B/φ` that is coprime with `B`.
fn stride(batch: u64) -> u64 {
    let ideal = (batch as f64 * 0.618_033_988_749_895) as u64;
    (0..batch)
        .flat_map(|d| [ideal.saturating_add(d), ideal.saturating_sub(d)])
        .find(|&s| s > 0 && s <= batch && gcd(s, batch) == 1)
        .unwrap_or(1)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// FNV-1a over words and bytes: what a state records of a mixture.
struct Fingerprint(u64);

impl Default for Fingerprint {
    fn default() -> Self {
        Fingerprint(0xcbf2_9ce4_8422_2325)
    }
}

impl Fingerprint {
    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes.iter().chain(&[0xff]) {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn word(&mut self, word: u64) {
        self.bytes(&word.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_are_bijections() {
        for b in 1..200u64 {
            let s = stride(b);
            let mut seen: Vec<u64> = (0..b).map(|t| t * s % b).collect();
            seen.sort_unstable();
            assert!(seen.into_iter().eq(0..b), "B = {b}");
        }
    }
}
