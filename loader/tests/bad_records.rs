//! Records a transform cannot use: `BadRecords::Stop` hands the error to the
//! consumer; `BadRecords::Skip` replaces each by a substitute that is the
//! same for any worker count, after a resume and on every rank, and counts it.

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use zrecord_loader::{BadRecords, Batch, Error, Loader, LoaderBuilder, LoaderState, Mode};

/// Records 0..300 of which these cannot be used.
const BAD: [u64; 3] = [17, 140, 299];

/// A loader whose transform reports the first bad record of each batch and
/// otherwise yields the batch's indices (the records delivered).
fn builder(
    streams: &common::Streams,
    policy: BadRecords,
) -> LoaderBuilder<Result<Vec<u64>, Error>> {
    logged(streams, policy, Arc::default())
}

/// [`builder`], noting in `reports` the step of every bad record reported.
fn logged(
    streams: &common::Streams,
    policy: BadRecords,
    reports: Arc<Mutex<Vec<u64>>>,
) -> LoaderBuilder<Result<Vec<u64>, Error>> {
    Loader::builder(24)
        .stream("label", streams.label.clone())
        .mode(Mode::Cyclic)
        .seed(8)
        .bad_records(policy)
        .try_transform(move |batch| check(batch, &reports))
}

fn check(batch: Batch, reports: &Mutex<Vec<u64>>) -> Result<Vec<u64>, Error> {
    let labels = batch.dense::<i64>("label")?;
    match labels.iter().position(|&l| BAD.contains(&(l as u64))) {
        Some(k) => {
            reports.lock().unwrap().push(batch.step());
            Err(batch.bad_record(k, "a bad label"))
        }
        None => Ok(batch.indices().to_vec()),
    }
}

/// The first `n` batches, each one `Ok`, and the records skipped.
fn run(builder: LoaderBuilder<Result<Vec<u64>, Error>>, n: u64) -> (Vec<Vec<u64>>, u64) {
    let mut loader = builder.build().unwrap();
    let batches = loader.steps(n).map(|b| b.unwrap().unwrap()).collect();
    (batches, loader.counters().snapshot().bad_records_skipped)
}

#[test]
fn stop_hands_the_error_naming_the_record_to_the_consumer_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    let plan = builder(&streams, BadRecords::Stop).plan().unwrap();
    let step = (0..100)
        .find(|&s| plan.sampler().batch_at(s).iter().any(|i| BAD.contains(i)))
        .unwrap();
    let mut loader = builder(&streams, BadRecords::Stop).build().unwrap();
    for _ in 0..step {
        loader.next_batch().unwrap().unwrap();
    }
    let err = loader.next_batch().unwrap().unwrap_err();
    let Error::BadRecord {
        step: at, record, ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(*at, step);
    assert!(BAD.contains(&record.unwrap()), "{err}");
    assert!(
        err.to_string()
            .contains(&format!("(record {})", record.unwrap()))
    );
    assert_eq!(loader.counters().snapshot().bad_records_skipped, 0);
    // The next step is served as usual.
    match loader.next_batch().unwrap() {
        Ok(batch) => assert_eq!(batch, plan.sampler().batch_at(step + 1)),
        Err(e) => assert!(matches!(e, Error::BadRecord { step: s, .. } if s == step + 1)),
    }
}

#[test]
fn skip_replaces_each_bad_record_the_same_way_on_any_workers_resume_and_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    let reports = Arc::new(Mutex::new(Vec::new()));
    let (all, skipped) = run(logged(&streams, BadRecords::Skip, reports.clone()), 60);
    // Counted as met in the batches delivered: those sampled, and a
    // substitute that was bad too. (Each step is built once; steps past 60
    // were only prefetched.)
    let reported = reports.lock().unwrap().iter().filter(|&&s| s < 60).count();
    assert_eq!(skipped, reported as u64);

    // Only the bad records changed, each for a good one.
    let base = builder(&streams, BadRecords::Skip);
    let plan = base.plan().unwrap();
    let mut met = 0;
    for (step, served) in all.iter().enumerate() {
        let sampled = plan.sampler().batch_at(step as u64);
        for (k, (&s, &d)) in sampled.iter().zip(served).enumerate() {
            if BAD.contains(&s) {
                met += 1;
                assert!(!BAD.contains(&d), "step {step} position {k}: {d}");
            } else {
                assert_eq!(s, d);
            }
        }
    }
    assert!(
        met >= 3,
        "60 steps of 24 of 300 meet the bad records more than once"
    );
    assert!(skipped >= met);

    // Another run, other worker counts: the same substitutes.
    for workers in [1, 3] {
        let again = base.clone().workers(workers).prefetch(7);
        assert_eq!(run(again, 60), (all.clone(), skipped));
    }

    // Resumed at step 23 (also on another world size).
    let state = LoaderState {
        mixture: None,
        sampler: {
            let mut sampler = plan.sampler().clone();
            sampler.seek(23);
            sampler.state()
        },
    };
    assert_eq!(run(base.clone().resume(&state), 37).0, all[23..]);
    let ranks: Vec<Vec<Vec<u64>>> = (0..3)
        .map(|r| run(base.clone().resume(&state).shard(r, 3), 37).0)
        .collect();
    for (k, batch) in all[23..].iter().enumerate() {
        let union: Vec<u64> = ranks.iter().flat_map(|r| r[k].clone()).collect();
        assert_eq!(&union, batch, "step {}", 23 + k);
    }
}

#[test]
fn substitutes_come_from_the_subset() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    let subset: Arc<[u64]> = (0..300).filter(|i| i % 3 == 2).collect();
    let allowed: HashSet<u64> = subset.iter().copied().collect();
    let (all, skipped) = run(
        builder(&streams, BadRecords::Skip)
            .subset(subset)
            .mode(Mode::Iid),
        50,
    );
    assert!(skipped > 0);
    for batch in all {
        assert!(
            batch
                .iter()
                .all(|i| allowed.contains(i) && !BAD.contains(i))
        );
    }
}

#[test]
fn a_batch_whose_substitutes_are_all_bad_fails_with_the_transform_error() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    let mut loader = Loader::builder(4)
        .stream("label", streams.label.clone())
        .bad_records(BadRecords::Skip)
        .try_transform(|batch| -> Result<(), Error> { Err(batch.bad_record(2, "never good")) })
        .build()
        .unwrap();
    let err = loader.next_batch().unwrap().unwrap_err();
    assert!(matches!(err, Error::BadRecord { position: 2, .. }), "{err}");
    assert_eq!(loader.counters().snapshot().bad_records_skipped, 0);
    // A position past the batch cannot be replaced: the error as it is.
    let mut loader = Loader::builder(4)
        .stream("label", streams.label.clone())
        .bad_records(BadRecords::Skip)
        .try_transform(|batch| -> Result<(), Error> { Err(batch.bad_record(9, "nowhere")) })
        .build()
        .unwrap();
    let err = loader.next_batch().unwrap().unwrap_err();
    assert!(
        matches!(
            err,
            Error::BadRecord {
                position: 9,
                record: None,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn transforms_after_the_one_that_reports_see_only_the_delivered_batch() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    // The unwrap would panic on a bad record that reached it.
    let mut loader = builder(&streams, BadRecords::Skip)
        .transform(|checked| checked.unwrap().len())
        .build()
        .unwrap();
    for len in loader.steps(40) {
        assert_eq!(len.unwrap(), 24);
    }
    assert!(loader.counters().snapshot().bad_records_skipped > 0);
}

#[test]
fn a_packing_loader_skips_a_document_whose_token_does_not_fit() {
    use zrecord::{Codec, RaggedStore};
    use zrecord_loader::{PackedLoader, Packing};

    let dir = tempfile::tempdir().unwrap();
    let store = RaggedStore::<i64>::create(dir.path().join("tokens"), Codec::Raw).unwrap();
    let docs: Vec<Vec<i64>> = (0..40i64)
        .map(|d| if d == 13 { vec![5, -1, 5] } else { vec![d; 3] })
        .collect();
    store.append_slices(&docs).unwrap();
    let store = Arc::new(store.into_dyn());
    let builder = PackedLoader::builder(6, 2)
        .tokens(store)
        .packing(Packing::ConcatSplit)
        .window(8)
        .mode(Mode::Sequential);

    let mut stops = builder.clone().build().unwrap();
    let err = (0..20).find_map(|_| stops.next_batch().err()).unwrap();
    assert!(
        matches!(err, Error::TokenOutOfRange { value: -1, .. }),
        "{err}"
    );

    let run = || {
        let mut skips = builder
            .clone()
            .bad_records(BadRecords::Skip)
            .build()
            .unwrap();
        let tokens: Vec<u32> = (0..10)
            .flat_map(|_| skips.next_batch().unwrap().tokens().to_vec())
            .collect();
        (tokens, skips.counters().snapshot().bad_records_skipped)
    };
    let (tokens, skipped) = run();
    assert_eq!(
        skipped, 1,
        "10 batches of 12 tokens read the 120 tokens once"
    );
    assert!(!tokens.contains(&13) && tokens.iter().all(|&t| t < 40));
    assert_eq!(run(), (tokens, 1));
}
