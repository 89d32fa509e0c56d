//! Mixtures: exact proportions in every batch, each source's own order and
//! epochs, resume on any world size, schedules, and errors at build time.

use std::collections::HashMap;
use std::path::Path;

use proptest::prelude::*;
use zrecord::{Codec, DenseStore};
use zrecord_loader::{Error, LastBatch, Loader, LoaderState, Mixture, Mode, Schedule, Source};

/// Record `j` of source `s` holds `s·1_000_000 + j`; a source made once
/// per folder and shared after.
fn source(dir: &Path, s: usize, len: u64) -> Source {
    thread_local! {
        static MADE: std::cell::RefCell<HashMap<std::path::PathBuf, Source>> = Default::default();
    }
    let path = dir.join(format!("s{s}"));
    if let Some(made) = MADE.with_borrow(|m| m.get(&path).cloned()) {
        return made;
    }
    let store = DenseStore::<i64>::create(&path, &[], Codec::Raw).unwrap();
    let first = s as i64 * 1_000_000;
    store
        .append(&(first..first + len as i64).collect::<Vec<_>>())
        .unwrap();
    let made = Source::new(format!("s{s}")).stream("label", store);
    MADE.with_borrow_mut(|m| m.insert(path, made.clone()));
    made
}

/// `(source, record)` of every record of the next `n` batches.
fn batches(loader: &mut Loader<zrecord_loader::Batch>, n: u64) -> Vec<Vec<(usize, u64)>> {
    loader
        .steps(n)
        .map(|batch| {
            let batch = batch.unwrap();
            let labels = batch.dense::<i64>("label").unwrap();
            (0..batch.len())
                .map(|k| {
                    let (s, j) = (
                        (labels[k] / 1_000_000) as usize,
                        (labels[k] % 1_000_000) as u64,
                    );
                    assert_eq!(batch.source(k), Some(format!("s{s}").as_str()));
                    (s, j)
                })
                .collect()
        })
        .collect()
}

fn mixture(dir: &Path, lens: &[u64], weights: Option<&[f64]>) -> Mixture {
    let mut mixture = Mixture::new();
    for (s, &len) in lens.iter().enumerate() {
        let mut src = source(dir, s, len);
        if let Some(w) = weights {
            src = src.weight(w[s]);
        }
        mixture = mixture.source(src);
    }
    mixture
}

/// After every step, each source's records are within one of `n·B·wᵢ`.
fn assert_exact(served: &[Vec<(usize, u64)>], weights: &[f64], batch: u64) {
    let total: f64 = weights.iter().sum();
    let mut counts = vec![0u64; weights.len()];
    for (n, step) in served.iter().enumerate() {
        assert_eq!(step.len() as u64, batch);
        for &(s, _) in step {
            counts[s] += 1;
        }
        for (s, &count) in counts.iter().enumerate() {
            let target = (n + 1) as f64 * batch as f64 * weights[s] / total;
            assert!(
                (count as f64 - target).abs() < 1.0 + 1e-6,
                "step {n}, source {s}: {count} records, owed {target}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_batch_holds_the_mix_exactly(
        weights in prop::collection::vec(0.01f64..10.0, 1..5),
        batch in 1u64..40,
        seed in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let lens: Vec<u64> = (0..weights.len() as u64).map(|s| 50 + 37 * s).collect();
        let mut loader = Loader::builder(batch)
            .mixture(mixture(dir.path(), &lens, Some(&weights)))
            .mode(Mode::Iid)
            .seed(seed)
            .build()
            .unwrap();
        assert_exact(&batches(&mut loader, 60), &weights, batch);
    }

    #[test]
    fn cyclic_sources_serve_every_record_once_per_epoch(
        lens in prop::collection::vec(1u64..60, 1..4),
        batch in 1u64..30,
        seed in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut loader = Loader::builder(batch)
            .mixture(mixture(dir.path(), &lens, None))
            .seed(seed)
            .build()
            .unwrap();
        let served = batches(&mut loader, 40);
        for (s, &len) in lens.iter().enumerate() {
            let mut times = vec![0u64; len as usize];
            served.iter().flatten().filter(|r| r.0 == s).for_each(|&(_, j)| times[j as usize] += 1);
            let (min, max) = (times.iter().min().unwrap(), times.iter().max().unwrap());
            // Whole epochs, then part of one: no record twice before all once.
            prop_assert!(max - min <= 1, "source {s} ({len} records): {times:?}");
        }
    }

    #[test]
    fn resuming_on_any_world_size_continues_exactly(
        weights in prop::collection::vec(0.1f64..5.0, 1..4),
        per_rank in 1u64..6,
        world in 1u64..5,
        stop in 0u64..30,
        seed in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let batch = per_rank * 12; // divisible by 1..=4
        let lens: Vec<u64> = (0..weights.len() as u64).map(|s| 20 + 13 * s).collect();
        let build = || Loader::builder(batch).mixture(mixture(dir.path(), &lens, Some(&weights))).seed(seed);
        let mut first = build().build().unwrap();
        let all = batches(&mut first, 40);
        let mut stopped = build().build().unwrap();
        let _ = batches(&mut stopped, stop);
        let state: LoaderState = serde_json::from_str(&serde_json::to_string(&stopped.state()).unwrap()).unwrap();
        let mut ranks: Vec<_> = (0..world)
            .map(|r| build().resume(&state).shard(r, world).build().unwrap())
            .collect();
        for (step, expected) in all.iter().enumerate().skip(stop as usize) {
            let mut global = Vec::new();
            for rank in &mut ranks {
                let local = batches(rank, 1).remove(0);
                // A rank's batch is grouped by source, in source order.
                prop_assert!(local.is_sorted_by_key(|&(s, _)| s), "step {}: {:?}", step, local);
                global.extend(local);
            }
            // The same records, whatever the world size (a rank's records
            // are in its sources' order, grouped by source).
            let mut expected = expected.clone();
            global.sort_unstable();
            expected.sort_unstable();
            prop_assert_eq!(global, expected, "step {}", step);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn an_evaluation_pass_serves_every_record_once_at_the_weights(
        lens in prop::collection::vec(1u64..70, 1..4),
        weights in prop::collection::vec(0.1f64..5.0, 3),
        cyclic in prop::collection::vec(any::<bool>(), 3),
        per_rank in 1u64..5,
        world in 1u64..4,
        seed in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let batch = per_rank * 12;
        let weights = &weights[..lens.len()];
        let mut mix = Mixture::new();
        for (s, &len) in lens.iter().enumerate() {
            let mode = if cyclic[s] { Mode::Cyclic } else { Mode::Sequential };
            mix = mix.source(source(dir.path(), s, len).weight(weights[s]).mode(mode));
        }
        let build = |r| {
            Loader::builder(batch).mixture(mix.clone()).last_batch(LastBatch::Short)
                .seed(seed).shard(r, world).build().unwrap()
        };
        let mut ranks: Vec<_> = (0..world).map(build).collect();
        let total: u64 = lens.iter().sum();
        let steps = ranks[0].steps_per_epoch();
        prop_assert_eq!(steps, total.div_ceil(batch));
        let mut pass: Vec<Vec<(usize, u64)>> = Vec::new();
        for _ in 0..steps {
            pass.push(ranks.iter_mut().flat_map(|l| batches(l, 1).remove(0)).collect());
        }
        let mut seen: Vec<(usize, u64)> = pass.concat();
        seen.sort_unstable();
        let every: Vec<(usize, u64)> = lens.iter().enumerate()
            .flat_map(|(s, &len)| (0..len).map(move |j| (s, j))).collect();
        prop_assert_eq!(seen, every);
        // While every source has records left, the batches hold the mix exactly.
        let full = pass.iter().take_while(|b| b.len() as u64 == batch).count();
        let mut served = vec![0u64; lens.len()];
        let norm: f64 = weights.iter().sum();
        for (n, b) in pass[..full].iter().enumerate() {
            b.iter().for_each(|r| served[r.0] += 1);
            if served.iter().zip(&lens).any(|(s, l)| s >= l) {
                break;
            }
            for (s, &got) in served.iter().enumerate() {
                let due = (n + 1) as f64 * batch as f64 * weights[s] / norm;
                prop_assert!((got as f64 - due).abs() < 1.0 + 1e-9, "step {}: {:?}", n, served);
            }
        }
        let progress = ranks[0].sources().unwrap();
        prop_assert!(progress.iter().zip(&lens).all(|(p, &l)| p.records == l && p.epochs == 1));
        // The next pass is the same.
        let again: Vec<Vec<(usize, u64)>> = (0..steps)
            .map(|_| ranks.iter_mut().flat_map(|l| batches(l, 1).remove(0)).collect())
            .collect();
        prop_assert_eq!(again, pass);
    }
}

#[test]
fn weights_with_an_every_record_evaluation_order() {
    // One anchor's own weighted example raised with its "iterate over all"
    // order; here the training mixture, unchanged, evaluates every record once.
    let dir = tempfile::tempdir().unwrap();
    let mix = Mixture::new()
        .source(source(dir.path(), 0, 500).weight(0.7))
        .source(source(dir.path(), 1, 90).weight(0.2))
        .source(source(dir.path(), 2, 33).weight(0.1));
    let mut eval = Loader::builder(20)
        .mixture(mix.clone())
        .last_batch(LastBatch::Short)
        .build()
        .unwrap();
    assert_eq!(eval.steps_per_epoch(), 32); // 623 records
    let pass = batches(&mut eval, 32);
    assert_eq!(pass[31].len(), 3);
    assert_eq!(pass[0].iter().filter(|r| r.0 == 0).count(), 14);
    let mut seen = pass.concat();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 623);
    // An iid source has no epoch to read once.
    let iid = Loader::builder(20)
        .mixture(mix.source(source(dir.path(), 3, 10).weight(0.1).mode(Mode::Iid)))
        .last_batch(LastBatch::Short)
        .build();
    assert!(
        matches!(&iid, Err(Error::MixtureSource { name, .. }) if name == "s3"),
        "{:?}",
        iid.err()
    );
}

#[test]
fn a_repeating_small_source_resumes_after_many_epochs() {
    // Resuming past one epoch of a source read with `repeat` broke one
    // anchor's loader; here the small source has done 6 epochs by step 60.
    let dir = tempfile::tempdir().unwrap();
    let build = || {
        let mixture = Mixture::new()
            .source(source(dir.path(), 0, 500))
            .source(source(dir.path(), 1, 7).repeat(20.0));
        Loader::builder(8).mixture(mixture).seed(3)
    };
    let mut loader = build().build().unwrap();
    let all = batches(&mut loader, 100);
    let mut stopped = build().build().unwrap();
    let _ = batches(&mut stopped, 60);
    let progress = stopped.sources().unwrap();
    assert!(progress[1].epochs >= 6, "{progress:?}");
    let mut resumed = build().resume(&stopped.state()).build().unwrap();
    assert_eq!(batches(&mut resumed, 40), all[60..]);
}

#[test]
fn default_shares_are_proportional_to_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut loader = Loader::builder(10)
        .mixture(mixture(dir.path(), &[300, 100], None))
        .build()
        .unwrap();
    let served = batches(&mut loader, 40);
    assert_exact(&served, &[300.0, 100.0], 10);
    // 40 steps of 10 are exactly one epoch of each: every record once.
    let progress = loader.sources().unwrap();
    assert_eq!((progress[0].records, progress[0].epochs), (300, 1));
    assert_eq!((progress[1].records, progress[1].epochs), (100, 1));
    let mut seen: Vec<(usize, u64)> = served.concat();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 400);
}

#[test]
fn a_small_source_cycles_for_many_epochs_inside_a_large_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut loader = Loader::builder(10)
        .mixture(mixture(dir.path(), &[100_000, 5], Some(&[0.5, 0.5])))
        .seed(9)
        .build()
        .unwrap();
    let served = batches(&mut loader, 200);
    let mut times: HashMap<(usize, u64), u64> = HashMap::new();
    served
        .iter()
        .flatten()
        .for_each(|&r| *times.entry(r).or_default() += 1);
    // 1,000 records of the small source: each of its 5, 200 times.
    assert!((0..5).all(|j| times[&(1, j)] == 200), "{times:?}");
    assert!(times.iter().filter(|(r, _)| r.0 == 0).all(|(_, &n)| n == 1));
    let progress = loader.sources().unwrap();
    assert_eq!((progress[1].epochs, progress[0].epochs), (200, 0));
}

#[test]
fn choose_and_repeat_state_the_same_mix_as_weights() {
    let dir = tempfile::tempdir().unwrap();
    let chosen = Mixture::new()
        .source(source(dir.path(), 0, 200).choose(300))
        .source(source(dir.path(), 1, 50).repeat(2.0));
    let mut loader = Loader::builder(8).mixture(chosen).build().unwrap();
    assert_exact(&batches(&mut loader, 50), &[300.0, 100.0], 8);
}

#[test]
fn a_schedule_moves_the_mix_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let schedule = Schedule::linear([(10, vec![1.0, 0.0]), (30, vec![0.2, 0.8])]);
    let build = || {
        Loader::builder(20)
            .mixture(mixture(dir.path(), &[400, 400], None).schedule(schedule.clone()))
            .seed(1)
    };
    let mut loader = build().build().unwrap();
    let all = batches(&mut loader, 50);
    let second = |step: &Vec<(usize, u64)>| step.iter().filter(|r| r.0 == 1).count();
    assert!(all[..10].iter().all(|b| second(b) == 0));
    assert!(all[30..].iter().all(|b| second(b) == 16));
    assert!((11..30).all(|s| second(&all[s]) >= second(&all[s - 1])));
    let mut stopped = build().build().unwrap();
    let _ = batches(&mut stopped, 17);
    let mut resumed = build().resume(&stopped.state()).build().unwrap();
    assert_eq!(batches(&mut resumed, 33), all[17..]);
}

#[test]
fn bad_mixtures_are_refused_at_build_naming_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let build = |m: Mixture| {
        Loader::builder(4)
            .mixture(m)
            .build()
            .err()
            .expect("refused")
    };
    let two = |a: Source, b: Source| Mixture::new().source(a).source(b);

    for bad in [-1.0, f64::NAN, f64::INFINITY, 0.0] {
        let e = build(two(
            source(d, 0, 10).weight(1.0),
            source(d, 1, 10).weight(bad),
        ));
        assert!(
            matches!(&e, Error::MixtureWeight { name, .. } if name == "s1"),
            "{e}"
        );
    }
    let zero = Schedule::piecewise([(0, vec![1.0, 1.0]), (5, vec![0.0, 0.0])]);
    let e = build(two(source(d, 0, 10), source(d, 1, 10)).schedule(zero));
    assert!(matches!(e, Error::MixtureAllZero { step: Some(5) }), "{e}");
    let backwards = Schedule::piecewise([(5, vec![1.0, 1.0]), (5, vec![1.0, 2.0])]);
    let e = build(two(source(d, 0, 10), source(d, 1, 10)).schedule(backwards));
    assert!(matches!(e, Error::MixtureSchedule { .. }), "{e}");
    let e = build(two(
        source(d, 0, 10).weight(1.0),
        source(d, 1, 10).choose(5),
    ));
    assert!(
        matches!(&e, Error::MixtureShares { name, .. } if name == "s1"),
        "{e}"
    );
    let e = build(Mixture::new());
    assert!(matches!(e, Error::MixtureEmpty), "{e}");

    // Sources that cannot be read with a 10-record i64 "label" source:
    // empty, another dtype, another shape, another stream name.
    let store = |name: &str, shape: &[usize]| {
        DenseStore::<i64>::create(d.join(name), shape, Codec::Raw).unwrap()
    };
    let empty = store("empty", &[]);
    let floats = DenseStore::<f32>::create(d.join("floats"), &[], Codec::Raw).unwrap();
    floats.append(&[1.0; 10]).unwrap();
    let wide = store("wide", &[2]);
    wide.append(&[1; 20]).unwrap();
    let other = store("other", &[]);
    other.append(&[1; 10]).unwrap();
    let refused: [(&str, &str, zrecord::Stream); 4] = [
        ("empty", "label", empty.into_dyn().into()),
        ("floats", "label", floats.into_dyn().into()),
        ("wide", "label", wide.into_dyn().into()),
        ("renamed", "labels", other.into_dyn().into()),
    ];
    for (bad, stream, store) in refused {
        let e = build(two(
            source(d, 0, 10),
            Source::new(bad).stream(stream, store),
        ));
        assert!(
            matches!(&e, Error::MixtureSource { name, .. } if name == bad),
            "{e}"
        );
    }

    // A state saved over another mixture, or over none.
    let mut loader = Loader::builder(4)
        .mixture(two(source(d, 0, 10), source(d, 1, 10)))
        .build()
        .unwrap();
    let _ = loader.next_batch().unwrap();
    let state = loader.state();
    let other = two(source(d, 0, 10), source(d, 1, 10).repeat(2.0));
    let e = Loader::builder(4)
        .mixture(other)
        .resume(&state)
        .build()
        .err()
        .expect("refused");
    assert!(matches!(e, Error::MixtureStateMismatch { .. }), "{e}");
    let plain = Loader::builder(4).stream(
        "label",
        DenseStore::<i64>::create(d.join("p"), &[], Codec::Raw).unwrap(),
    );
    let e = plain.resume(&state).build().err().expect("refused");
    assert!(
        matches!(e, Error::MixtureStateMismatch { loader: None, .. }),
        "{e}"
    );
}

/// Document `j` of corpus `s`: tokens `s·1_000_000 + j·100 + t` for
/// `t` in `0..1 + j % 7`.
fn corpus(dir: &Path, s: u32, docs: u32) -> Source {
    let store =
        zrecord::RaggedStore::<u32>::create(dir.join(format!("c{s}")), Codec::Zstd).unwrap();
    let docs: Vec<Vec<u32>> = (0..docs)
        .map(|j| {
            (0..1 + j % 7)
                .map(|t| s * 1_000_000 + j * 100 + t)
                .collect()
        })
        .collect();
    store.append_slices(&docs).unwrap();
    Source::new(format!("c{s}")).stream("tokens", store)
}

#[test]
fn packed_rows_mix_corpora_at_the_weights_and_resume() {
    use zrecord_loader::{PackedBatch, PackedLoader};
    let dir = tempfile::tempdir().unwrap();
    let weights = [0.7, 0.3];
    let (c0, c1) = (corpus(dir.path(), 0, 300), corpus(dir.path(), 1, 120));
    let mix = Mixture::new()
        .source(c0.clone().weight(weights[0]))
        .source(c1.weight(weights[1]));
    let builder = PackedLoader::builder(16, 4).mixture(mix).window(40).seed(4);
    let mut whole = builder.clone().build().unwrap();
    let all: Vec<PackedBatch> = (0..60).map(|_| whole.next_batch().unwrap()).collect();
    let mut started = [0i64; 2];
    for batch in &all {
        let (tokens, segments) = (batch.tokens(), batch.segment_ids());
        for k in 0..tokens.len() {
            // A segment is one document's consecutive tokens, as without a mixture.
            let same_segment = k % 16 > 0 && segments[k] == segments[k - 1] && segments[k] > 0;
            if same_segment {
                assert_eq!(tokens[k], tokens[k - 1] + 1, "step {}", batch.step());
            }
            if segments[k] > 0 && tokens[k] % 100 == 0 {
                started[(tokens[k] / 1_000_000) as usize] += 1;
            }
        }
        // Documents begun so far: the weights, within a few documents of
        // the windows' interleave.
        let total = (started[0] + started[1]) as f64;
        for s in 0..2 {
            let off = (started[s] as f64 - weights[s] * total).abs();
            assert!(off <= 3.0, "step {}: {started:?}", batch.step());
        }
    }
    assert!(started[1] > 120, "the small corpus cycles: {started:?}");
    let progress = whole.sources().unwrap();
    assert_eq!((&*progress[0].name, &*progress[1].name), ("c0", "c1"));

    let mut first = builder.clone().build().unwrap();
    (0..23).for_each(|_| drop(first.next_batch().unwrap()));
    let state = first.state();
    let mut ranks: Vec<PackedLoader> = (0..2)
        .map(|r| builder.clone().resume(&state).shard(r, 2).build().unwrap())
        .collect();
    for batch in &all[23..] {
        let parts: Vec<PackedBatch> = ranks.iter_mut().map(|l| l.next_batch().unwrap()).collect();
        let tokens: Vec<u32> = parts.iter().flat_map(|p| p.tokens().to_vec()).collect();
        assert_eq!(tokens, batch.tokens(), "step {}", batch.step());
    }
    // One token stream per source, and not beside a stream of its own.
    let extra = zrecord::RaggedStore::<u32>::create(dir.path().join("extra"), Codec::Raw).unwrap();
    extra.append_slices(&[vec![1u32]]).unwrap();
    let extra = zrecord::Stream::from(extra);
    let two = Mixture::new().source(c0.clone().stream("more", extra.clone()));
    let err = PackedLoader::builder(16, 4).mixture(two).build().err();
    assert!(
        matches!(&err, Some(Error::MixtureSource { name, .. }) if name == "c0"),
        "{err:?}"
    );
    let both = PackedLoader::builder(16, 4)
        .mixture(Mixture::new().source(c0))
        .tokens(extra)
        .build()
        .err();
    assert!(
        matches!(both, Some(Error::MixtureUnsupported { .. })),
        "{both:?}"
    );
}
