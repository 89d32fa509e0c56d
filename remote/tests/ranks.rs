//! Data-parallel ranks as separate processes, reading one sharded dataset
//! in object storage through one node cache: at every step the ranks' batches
//! together are the one-process global batch, and a run stopped on 4 ranks
//! resumes on 3 with the same global batches.

mod support;

use std::process::{Command, Stdio};

use zrecord::{Codec, Dataset, DenseStore, shard_folder};
use zrecord_loader::{Batch, Loader, LoaderState, Mode};
use zrecord_remote::{open_dataset, push};

/// Neither 4 nor 3 divides it: the ranks' slices are uneven (6, 7, 6, 7 and 8, 9, 9).
const BATCH: u64 = 26;
const STOP: u64 = 7;

/// One step as a rank saw it: indices, and the first byte of each record.
type Step = (Vec<u64>, Vec<u8>);
/// One rank's steps and its state after them.
type RankRun = (Vec<Step>, LoaderState);
const MORE: u64 = 6;

/// One rank's loader: `rank` of `world`, resumed from `state` if given.
fn loader(
    url: &str,
    cache: &str,
    rank: u64,
    world: u64,
    state: Option<&LoaderState>,
) -> Loader<Batch> {
    let endpoint = support::endpoint().unwrap();
    let options = support::s3_options(endpoint)
        .cache(cache, 1 << 30)
        .block_bytes(16 << 10);
    let mut builder = Loader::builder(BATCH)
        .dataset(open_dataset(url, options).unwrap())
        .mode(Mode::Cyclic)
        .seed(11)
        .workers(2)
        .shard(rank, world);
    if let Some(state) = state {
        builder = builder.resume(state);
    }
    builder.build().unwrap()
}

/// Each step's indices and the first byte of each gathered record.
fn run(loader: &mut Loader<Batch>, steps: u64) -> Vec<Step> {
    loader
        .steps(steps)
        .map(|batch| {
            let batch = batch.unwrap();
            let x = batch.dense::<u8>("x").unwrap();
            let firsts = x
                .outer_iter()
                .map(|r| r.iter().next().copied().unwrap_or(0))
                .collect();
            (batch.indices().to_vec(), firsts)
        })
        .collect()
}

/// The child half of the test below: one rank, its batches printed as JSON.
#[test]
fn child_rank() {
    let Ok(spec) = std::env::var("ZRECORD_RANK_CHILD") else {
        return;
    };
    let spec: serde_json::Value = serde_json::from_str(&spec).unwrap();
    let text = |k: &str| spec[k].as_str().unwrap().to_string();
    let number = |k: &str| spec[k].as_u64().unwrap();
    let state: Option<LoaderState> = serde_json::from_value(spec["state"].clone()).unwrap();
    let mut loader = loader(
        &text("url"),
        &text("cache"),
        number("rank"),
        number("world"),
        state.as_ref(),
    );
    let batches = run(&mut loader, number("steps"));
    let out = serde_json::json!({ "batches": batches, "state": loader.state() });
    println!("RESULT {out}");
}

/// Runs `world` ranks as processes at once; returns each rank's batches
/// and final state.
fn ranks(
    url: &str,
    cache: &str,
    world: u64,
    steps: u64,
    state: Option<&LoaderState>,
) -> Vec<RankRun> {
    let children: Vec<_> = (0..world)
        .map(|rank| {
            let spec = serde_json::json!({
                "url": url, "cache": cache, "rank": rank, "world": world,
                "steps": steps, "state": state,
            });
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "child_rank", "--nocapture"])
                .env("ZRECORD_RANK_CHILD", spec.to_string())
                .env("ZRECORD_S3_ENDPOINT", support::endpoint().unwrap())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            assert!(out.status.success(), "{text}");
            let json = text
                .lines()
                .find_map(|l| l.split_once("RESULT ").map(|(_, j)| j.to_string()))
                .unwrap_or_else(|| panic!("no result in {text}"));
            let value: serde_json::Value = serde_json::from_str(&json).unwrap();
            (
                serde_json::from_value(value["batches"].clone()).unwrap(),
                serde_json::from_value(value["state"].clone()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn four_ranks_then_three_see_the_one_process_global_batches() {
    let (endpoint, _watchdog) = server_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    // 1,000 records in four shards of 250, written one by one and joined.
    for k in 0..4u64 {
        let shard = dir.path().join(shard_folder(k, 4));
        std::fs::create_dir(&shard).unwrap();
        let store = DenseStore::<u8>::create(shard.join("x"), &[100], Codec::Raw).unwrap();
        let first = k as usize * 250;
        let bytes: Vec<u8> = (first * 100..(first + 250) * 100)
            .map(|i| (i / 100 % 251) as u8)
            .collect();
        store.append(&bytes).unwrap();
    }
    Dataset::join(dir.path()).unwrap();
    let bucket = support::bucket(endpoint, "ranks");
    let url = format!("s3://{bucket}/x");
    push(
        dir.path(),
        &url,
        &support::s3_options(endpoint),
        false,
        |_, _| {},
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let cache = cache.path().to_str().unwrap().to_string();

    // One process, the reference.
    let whole = run(&mut loader(&url, &cache, 0, 1, None), STOP + MORE);

    // Four ranks to the stop, then three from rank 0's saved state.
    let four = ranks(&url, &cache, 4, STOP, None);
    let state = four[0].1;
    assert_eq!(state.sampler.step, STOP);
    let three = ranks(&url, &cache, 3, MORE, Some(&state));
    let joined = |ranks: &[RankRun], step: usize| {
        let mut global = (Vec::new(), Vec::new());
        for (batches, _) in ranks {
            global.0.extend(&batches[step].0);
            global.1.extend(&batches[step].1);
        }
        global
    };
    for (step, global) in whole.iter().enumerate() {
        let (ranks, at, world) = if step < STOP as usize {
            (&four, step, 4)
        } else {
            (&three, step - STOP as usize, 3)
        };
        assert_eq!(&joined(ranks, at), global, "step {step} on {world} ranks");
    }
    let sizes =
        |ranks: &[RankRun]| -> Vec<usize> { ranks.iter().map(|(b, _)| b[0].0.len()).collect() };
    assert_eq!(
        (sizes(&four), sizes(&three)),
        (vec![6, 7, 6, 7], vec![8, 9, 9])
    );
}
