//! A saved state resumes with exactly the next batch — with another worker
//! count, and on another world size.

mod common;

use zrecord_loader::{Loader, LoaderState, Mode};

fn indices_from(
    streams: &common::Streams,
    state: Option<&LoaderState>,
    shard: (u64, u64),
    workers: usize,
    n: u64,
) -> Vec<Vec<u64>> {
    let mut builder = Loader::builder(24)
        .stream("label", streams.label.clone())
        .stream("tokens", streams.tokens.clone())
        .mode(Mode::Cyclic)
        .seed(5)
        .workers(workers)
        .shard(shard.0, shard.1);
    if let Some(state) = state {
        builder = builder.resume(state);
    }
    let mut loader = builder.build().unwrap();
    loader
        .steps(n)
        .map(|b| b.unwrap().indices().to_vec())
        .collect()
}

#[test]
fn resume_at_step_37_continues_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    let all = indices_from(&streams, None, (0, 1), 2, 100);

    let mut loader = Loader::builder(24)
        .stream("label", streams.label.clone())
        .stream("tokens", streams.tokens.clone())
        .seed(5)
        .workers(4)
        .build()
        .unwrap();
    for _ in 0..37 {
        loader.next_batch().unwrap();
    }
    // Prefetched batches are not part of the state.
    let state = loader.state();
    assert_eq!(state.sampler.step, 37);
    drop(loader);
    // The state survives serialisation.
    let json = serde_json::to_string(&state).unwrap();
    let state: LoaderState = serde_json::from_str(&json).unwrap();

    for workers in [1, 3] {
        assert_eq!(
            indices_from(&streams, Some(&state), (0, 1), workers, 63),
            all[37..]
        );
    }
}

#[test]
fn resume_on_another_world_size_gives_the_same_global_batches() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    let all = indices_from(&streams, None, (0, 1), 2, 100);
    // Save at step 37 on world sizes 1, 2 and 4 (the last rank), resume on
    // sizes that divide the batch of 24 and sizes that do not (uneven slices).
    for saved_world in [1u64, 2, 4] {
        let mut loader = Loader::builder(24)
            .stream("label", streams.label.clone())
            .seed(5)
            .shard(saved_world - 1, saved_world)
            .build()
            .unwrap();
        loader.steps(37).for_each(|b| drop(b.unwrap()));
        let state = loader.state();
        drop(loader);
        for world in [1u64, 2, 3, 4, 5, 7] {
            let ranks: Vec<Vec<Vec<u64>>> = (0..world)
                .map(|rank| indices_from(&streams, Some(&state), (rank, world), 2, 63))
                .collect();
            for step in 0..63 {
                let global: Vec<u64> = ranks.iter().flat_map(|r| r[step].clone()).collect();
                assert_eq!(
                    global,
                    all[37 + step],
                    "saved on {saved_world}, resumed on {world}, step {}",
                    37 + step
                );
            }
        }
    }
}

#[test]
fn a_state_over_other_data_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    let loader = Loader::builder(24)
        .stream("label", streams.label.clone())
        .build()
        .unwrap();
    let state = loader.state();
    drop(loader);
    let other =
        zrecord::DenseStore::<i64>::create(dir.path().join("short"), &[], zrecord::Codec::Raw)
            .unwrap();
    other.append(&[1, 2, 3, 4, 5]).unwrap();
    let err = Loader::builder(24)
        .stream("x", other)
        .resume(&state)
        .build()
        .err()
        .unwrap();
    assert!(matches!(
        err,
        zrecord_loader::Error::StateMismatch {
            state_len: 300,
            len: 5
        }
    ));
}
