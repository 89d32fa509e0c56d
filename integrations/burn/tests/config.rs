//! The data loader shares the loader crate's configuration: the same
//! defaults as the other loaders, and `shard_from_env`.

use std::process::Command;

use zrecord_burn::{LoaderConfig, StoreDataLoader};
use zrecord_loader::{Loader, PackedLoader};

#[test]
fn the_three_builders_start_from_the_same_defaults() {
    let defaults = LoaderConfig::default();
    assert_eq!(StoreDataLoader::builder(8).config(), &defaults);
    assert_eq!(Loader::builder(8).config(), &defaults);
    assert_eq!(PackedLoader::builder(16, 2).config(), &defaults);
    // The same setters give the same configuration.
    let burn = StoreDataLoader::builder(8)
        .seed(5)
        .shard(1, 4)
        .prefetch(2)
        .workers(3);
    let records = Loader::builder(8)
        .seed(5)
        .shard(1, 4)
        .prefetch(2)
        .workers(3);
    let packed = PackedLoader::builder(16, 2)
        .seed(5)
        .shard(1, 4)
        .prefetch(2)
        .workers(3);
    assert_eq!(burn.config(), records.config());
    assert_eq!(burn.config(), packed.config());
}

/// Set in the child process that runs the launcher test.
const CHILD: &str = "ZRECORD_BURN_LAUNCHER_CHILD";

#[test]
fn shard_from_env_takes_the_launchers_rank() {
    let name = "shard_from_env_takes_the_launchers_rank";
    if std::env::var_os(CHILD).is_none() {
        // The environment belongs to the whole process: set it in a child.
        let output = Command::new(std::env::current_exe().unwrap())
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .env("RANK", "2")
            .env("WORLD_SIZE", "3")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        return;
    }
    let builder = StoreDataLoader::builder(12).shard_from_env().unwrap();
    assert_eq!(builder.config().shard, Some((2, 3)));
}
