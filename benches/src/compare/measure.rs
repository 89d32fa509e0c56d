//! Timing: every system gathers the same plan batches in interleaved rounds
//! (a rotating order inside each round), so drift on a shared, noisy machine
//! hits all systems alike; figures are medians over rounds.

use std::time::{Duration, Instant};

/// A system under test: gathers one batch of indices and returns the bytes
/// it delivered (table (d): runs a sampler iteration, returns its indices).
pub type Runner<'a> = Box<dyn FnMut(&[u64]) -> usize + 'a>;

/// How long to time.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Total time for all systems together (after calibration).
    pub total: Duration,
    /// Rounds at least, whatever the time.
    pub min_rounds: usize,
    /// A sample (one system, one round) lasts at least this long.
    pub min_sample: Duration,
}

impl Budget {
    /// A budget of `total` and `min_sample` milliseconds.
    pub fn millis(total: u64, min_rounds: usize, min_sample: u64) -> Budget {
        Budget {
            total: Duration::from_millis(total),
            min_rounds,
            min_sample: Duration::from_millis(min_sample),
        }
    }
}

/// One system's samples.
#[derive(Clone, Debug, Default)]
pub struct Sampled {
    /// Seconds per round (sum of its batches).
    pub round_secs: Vec<f64>,
    /// Bytes delivered per round.
    pub round_bytes: Vec<f64>,
    /// Records delivered per round.
    pub round_records: Vec<f64>,
    /// Every batch's latency, seconds.
    pub latencies: Vec<f64>,
    /// Page faults of the process (minor, major) while this system was
    /// timed, summed over its samples.
    pub faults: (u64, u64),
}

impl Sampled {
    /// Median bytes per second over rounds.
    pub fn bytes_per_s(&self) -> f64 {
        median(&self.rates(&self.round_bytes))
    }

    /// Median records per second over rounds.
    pub fn records_per_s(&self) -> f64 {
        median(&self.rates(&self.round_records))
    }

    fn rates(&self, amounts: &[f64]) -> Vec<f64> {
        amounts
            .iter()
            .zip(&self.round_secs)
            .map(|(a, s)| a / s)
            .collect()
    }

    /// Page faults (minor + major) per timed batch (NaN for no batches).
    pub fn faults_per_batch(&self) -> f64 {
        (self.faults.0 + self.faults.1) as f64 / self.latencies.len() as f64
    }

    /// Batch latency at percentile `p` (0..=100).
    pub fn latency(&self, p: f64) -> f64 {
        percentile(&self.latencies, p)
    }

    /// Median over rounds of this system's rate / `reference`'s rate in the
    /// same round.
    pub fn paired_ratio(&self, reference: &Sampled) -> f64 {
        let ratios: Vec<f64> = self
            .rates(&self.round_bytes)
            .iter()
            .zip(reference.rates(&reference.round_bytes))
            .map(|(s, r)| s / r)
            .collect();
        median(&ratios)
    }
}

/// Times `runners` over `plan` in interleaved rounds; returns their samples
/// in the same order, and the rounds run.
pub fn interleaved(
    runners: &mut [Runner<'_>],
    plan: &[Vec<u64>],
    budget: Budget,
) -> (Vec<Sampled>, usize) {
    assert!(!plan.is_empty(), "an empty plan");
    // Calibrate on the plan's last batches (the rounds start at its first).
    let probe: Vec<&Vec<u64>> = plan.iter().rev().take(plan.len().min(8)).collect();
    let fastest = runners
        .iter_mut()
        .map(|run| {
            let start = Instant::now();
            for batch in &probe {
                run(batch);
            }
            start.elapsed().as_secs_f64() / probe.len() as f64
        })
        .fold(f64::INFINITY, f64::min)
        .max(1e-9);
    let per_sample =
        ((budget.min_sample.as_secs_f64() / fastest).ceil() as usize).clamp(1, plan.len());
    let mut sampled = vec![Sampled::default(); runners.len()];
    let start = Instant::now();
    let mut next = 0usize;
    let mut rounds = 0usize;
    while rounds < budget.min_rounds || start.elapsed() < budget.total {
        let batches: Vec<&Vec<u64>> = (0..per_sample)
            .map(|k| &plan[(next + k) % plan.len()])
            .collect();
        next = (next + per_sample) % plan.len();
        for k in 0..runners.len() {
            let s = (rounds + k) % runners.len();
            let (mut secs, mut bytes, mut records) = (0.0, 0.0, 0.0);
            let before = faults();
            for batch in &batches {
                let t = Instant::now();
                let n = runners[s](batch);
                let dt = t.elapsed().as_secs_f64();
                secs += dt;
                bytes += n as f64;
                records += batch.len() as f64;
                sampled[s].latencies.push(dt);
            }
            let after = faults();
            sampled[s].faults.0 += after.0.saturating_sub(before.0);
            sampled[s].faults.1 += after.1.saturating_sub(before.1);
            sampled[s].round_secs.push(secs);
            sampled[s].round_bytes.push(bytes);
            sampled[s].round_records.push(records);
        }
        rounds += 1;
    }
    (sampled, rounds)
}

/// Runs `f` and returns its value and the seconds it took.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed().as_secs_f64())
}

/// Page faults of this process so far, (minor, major), from `/proc/self/stat`
/// (zeros where it is missing).
pub fn faults() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces): state is field 3,
    // minflt field 10, majflt field 12.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse().ok()).unwrap_or(0);
    (field(10), field(12))
}

/// Median (NaN for no values).
pub fn median(values: &[f64]) -> f64 {
    percentile(values, 50.0)
}

/// Percentile `p` (0..=100) by linear interpolation between order statistics
/// (NaN for no values).
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = (p / 100.0).clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (rank - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_faults() {
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(percentile(&[0.0, 10.0], 95.0), 9.5);
        let before = faults();
        std::hint::black_box(vec![1u8; 16 << 20]);
        if before != (0, 0) {
            assert!(faults().0 > before.0);
        }
    }

    #[test]
    fn rounds_cover_every_runner() {
        let plan = vec![vec![1u64, 2, 3], vec![4, 5, 6]];
        let mut runners: Vec<Runner<'_>> = vec![
            Box::new(|batch: &[u64]| batch.len() * 8),
            Box::new(|batch: &[u64]| std::hint::black_box(batch.len() * 8)),
        ];
        let (sampled, rounds) = interleaved(&mut runners, &plan, Budget::millis(0, 5, 0));
        assert_eq!((rounds, sampled.len()), (5, 2));
        for s in &sampled {
            assert_eq!(s.round_bytes, vec![24.0; 5]);
            assert!(s.bytes_per_s() > 0.0 && s.latency(95.0) >= s.latency(50.0));
        }
        assert_eq!(sampled[0].paired_ratio(&sampled[0]), 1.0);
    }
}
