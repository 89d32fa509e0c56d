//! One configuration for every loader: the same defaults, the same setters,
//! and `shard_from_env` reading the launcher's variables.

use std::process::Command;

use zrecord::{Codec, RaggedStore};
use zrecord_loader::{Loader, LoaderConfig, PackedLoader, Packing};

#[test]
fn the_loaders_share_one_set_of_defaults() {
    let records = Loader::builder(8);
    let packed = PackedLoader::builder(16, 2);
    assert_eq!(records.config(), &LoaderConfig::default());
    assert_eq!(packed.config(), &LoaderConfig::default());
    let defaults = LoaderConfig::default();
    assert_eq!(
        (defaults.workers, defaults.prefetch, defaults.shard),
        (2, 4, None)
    );
}

#[test]
fn the_setters_are_the_same_on_both_builders() {
    let set = |seed| {
        (
            Loader::builder(8)
                .seed(seed)
                .shard(1, 2)
                .workers(3)
                .prefetch(1)
                .start_step(5),
            PackedLoader::builder(16, 2)
                .seed(seed)
                .shard(1, 2)
                .workers(3)
                .prefetch(1)
                .start_step(5),
        )
    };
    let (records, packed) = set(4);
    assert_eq!(records.config(), packed.config());
    assert_eq!(records.config().shard, Some((1, 2)));
}

/// Set in the child process that runs the launcher tests.
const CHILD: &str = "ZRECORD_LOADER_LAUNCHER_CHILD";

/// Runs test `name` of this binary again with the launcher's variables set:
/// the environment belongs to the whole process, so only a child may change it.
fn in_child(name: &str, rank: &str, world_size: &str) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("RANK", rank)
        .env("WORLD_SIZE", world_size)
        .output()
        .unwrap();
    assert!(
        output.status.success() && String::from_utf8_lossy(&output.stdout).contains("1 passed"),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn shard_from_env_takes_the_launchers_rank_on_both_builders() {
    let name = "shard_from_env_takes_the_launchers_rank_on_both_builders";
    if std::env::var_os(CHILD).is_none() {
        in_child(name, "1", "2");
        return;
    }
    let records = Loader::builder(8).shard_from_env().unwrap();
    assert_eq!(records.config().shard, Some((1, 2)));
    let packed = PackedLoader::builder(8, 2).shard_from_env().unwrap();
    assert_eq!(packed.config().shard, Some((1, 2)));

    // The packing loader keeps rank 1's row of each batch of two.
    let dir = tempfile::tempdir().unwrap();
    let store = RaggedStore::<u32>::create(dir.path().join("tokens"), Codec::Raw).unwrap();
    store
        .append_slices(&(0..40u32).map(|d| vec![d; 5]).collect::<Vec<_>>())
        .unwrap();
    let store = std::sync::Arc::new(store.into_dyn());
    let whole = PackedLoader::builder(8, 2)
        .tokens(store.clone())
        .packing(Packing::ConcatSplit)
        .build()
        .unwrap()
        .next_batch()
        .unwrap();
    let mut rank = packed.tokens(store).build().unwrap();
    assert_eq!(rank.next_batch().unwrap().tokens(), &whole.tokens()[8..]);
}

#[test]
fn a_packing_loader_started_at_a_step_serves_that_step() {
    let dir = tempfile::tempdir().unwrap();
    let store = RaggedStore::<u32>::create(dir.path().join("tokens"), Codec::Raw).unwrap();
    store
        .append_slices(
            &(0..60u32)
                .map(|d| vec![d; 1 + d as usize % 9])
                .collect::<Vec<_>>(),
        )
        .unwrap();
    let store = std::sync::Arc::new(store.into_dyn());
    for packing in [Packing::ConcatSplit, Packing::BestFit] {
        let builder = PackedLoader::builder(8, 2)
            .tokens(store.clone())
            .packing(packing)
            .window(16)
            .seed(3);
        let mut whole = builder.clone().build().unwrap();
        let all: Vec<_> = (0..12).map(|_| whole.next_batch().unwrap()).collect();
        let mut started = builder.start_step(7).build().unwrap();
        assert_eq!(started.step(), 7);
        for batch in &all[7..] {
            assert_eq!(&started.next_batch().unwrap(), batch, "{packing:?}");
        }
    }
}
