//! `push` and `pull` against an S3-compatible server: a pushed store reads
//! back equal, an interrupted push is never taken for a store, and a pull
//! lands whole or not at all.

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::proxy::Proxy;
use zrecord::{Codec, DenseStore, DynDenseStore, OpenOptions, RaggedStore};
use zrecord_remote::{Error, Remote, pull, push};

/// A dataset folder: an `images` store (raw, 12 MB: uploaded in parts) and
/// a `labels` store.
fn dataset(dir: &std::path::Path) {
    let images = DenseStore::<u8>::create(dir.join("images"), &[3000], Codec::Raw).unwrap();
    let bytes: Vec<u8> = (0..4_000 * 3000).map(|i| (i * 31 % 255) as u8).collect();
    images.append(&bytes).unwrap();
    let labels = RaggedStore::<i64>::create(dir.join("labels"), Codec::Raw).unwrap();
    let rows: Vec<Vec<i64>> = (0..4_000).map(|i| vec![i; (i % 5) as usize]).collect();
    labels.append_slices(&rows).unwrap();
}

#[test]
fn a_pushed_dataset_reads_back_equal_and_pulls_back_whole() {
    let (endpoint, _watchdog) = server_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path());
    let bucket = support::bucket(endpoint, "push");
    let url = format!("s3://{bucket}/sets/one");
    let options = support::s3_options(endpoint);
    let mut calls = 0;
    let report = push(dir.path(), &url, &options, true, |done, total| {
        assert!(done <= total);
        calls += 1;
    })
    .unwrap();
    assert_eq!(report.stores.len(), 2);
    assert!(calls >= 4 && report.bytes > 4_000 * 3000, "{report:?}");

    let remote = Arc::new(Remote::open(&format!("{url}/images"), options.clone()).unwrap());
    let images = OpenOptions::new()
        .read_only(true)
        .open::<DynDenseStore>(remote)
        .unwrap()
        .typed::<u8>()
        .unwrap();
    let local = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(dir.path().join("images"))
        .unwrap();
    let picks = [0, 17, 3999, 2048];
    assert_eq!(
        images.gather(&picks).unwrap(),
        local.gather(&picks).unwrap()
    );

    // Pushing again into a folder that holds objects is refused.
    let again = push(dir.path(), &url, &options, false, |_, _| {}).unwrap_err();
    assert!(matches!(again, Error::Transfer { .. }), "{again}");

    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("copy");
    let report = pull(&url, &target, &options, |_, _| {}).unwrap();
    assert_eq!(report.stores.len(), 2);
    let copy = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<DenseStore<u8>>(target.join("images"))
        .unwrap();
    assert_eq!(copy.gather(&picks).unwrap(), local.gather(&picks).unwrap());
    let labels = zrecord::OpenOptions::new()
        .read_only(true)
        .open::<RaggedStore<i64>>(target.join("labels"))
        .unwrap();
    assert_eq!(labels.len(), 4_000);
    // Pulling over an existing folder is refused.
    assert!(pull(&url, &target, &options, |_, _| {}).is_err());
}

#[test]
fn an_interrupted_push_is_an_incomplete_upload_not_a_store() {
    let (endpoint, _watchdog) = server_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path());
    let bucket = support::bucket(endpoint, "cut");
    let proxy = Proxy::start(endpoint);
    let url = format!("s3://{bucket}/images");
    // The connection to the server breaks after five upload requests (the
    // 12 MB chunk's four — start, two parts, finish — and the table's): the
    // push fails part way, data files sent and header not.
    let options = support::s3_options(&proxy.endpoint)
        .retries(1, Duration::from_millis(10))
        .attempt_timeout(Duration::from_secs(2));
    proxy.allow_uploads(Some(5));
    let error = push(&dir.path().join("images"), &url, &options, false, |_, _| {});
    assert!(error.is_err(), "{error:?}");
    proxy.allow_uploads(None);

    let open = Remote::open(&url, support::s3_options(endpoint)).unwrap_err();
    assert!(
        matches!(open, Error::Incomplete { objects: 2, .. }),
        "{open}"
    );
    let target = dir.path().join("pulled");
    let pulled = pull(&url, &target, &support::s3_options(endpoint), |_, _| {}).unwrap_err();
    assert!(matches!(pulled, Error::Incomplete { .. }), "{pulled}");
    assert!(!target.exists());
}

#[test]
fn a_dataset_reads_its_shards_from_local_folders_and_object_storage_mixed() {
    let (endpoint, _watchdog) = server_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    for (k, labels) in [vec![0i64, 1, 2], vec![3, 4]].into_iter().enumerate() {
        let shard = dir.path().join(zrecord::shard_folder(k as u64, 2));
        std::fs::create_dir(&shard).unwrap();
        let store = DenseStore::<i64>::create(shard.join("label"), &[], Codec::Raw).unwrap();
        store.append(&labels).unwrap();
    }
    zrecord::Dataset::join(dir.path()).unwrap();
    let bucket = support::bucket(endpoint, "mixed");
    let url = format!("s3://{bucket}/d");
    let options = support::s3_options(endpoint);
    push(dir.path(), &url, &options, false, |_, _| {}).unwrap();

    // Shard 0 from the local folder, shard 1 from the bucket.
    let manifest = std::fs::read(dir.path().join("dataset.zr")).unwrap();
    let dataset = zrecord::Dataset::open_with("mixed", &manifest, |store| {
        if store.starts_with(&zrecord::shard_folder(0, 2)) {
            return zrecord::OpenOptions::new()
                .read_only(true)
                .open::<zrecord::AnyStore>(dir.path().join(store));
        }
        let remote = Remote::open(&format!("{url}/{store}"), options.clone())
            .map_err(|e| zrecord::Error::InvalidArgument(e.to_string()))?;
        OpenOptions::new()
            .read_only(true)
            .open::<zrecord::AnyStore>(Arc::new(remote))
    })
    .unwrap();
    let labels = dataset.stream("label").unwrap().as_dense().unwrap();
    assert!(
        labels.shards()[1]
            .path()
            .to_string_lossy()
            .starts_with("s3://")
    );
    let values = labels.gather_dyn(&[4, 0, 3, 2]).unwrap();
    assert_eq!(values.as_slice::<i64>(), Some(&[4, 0, 3, 2][..]));
}

#[test]
fn shards_pushed_one_by_one_join_into_a_dataset_in_object_storage() {
    let (endpoint, _watchdog) = server_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let bucket = support::bucket(endpoint, "join");
    let url = format!("s3://{bucket}/joined");
    let options = support::s3_options(endpoint);
    // Three tasks' shards, each pushed on its own; the third, a failed
    // attempt's with other streams, is removed before the join.
    let shard = |name: &str, labels: &[i64], tokens: Option<&[Vec<u32>]>| {
        let folder = dir.path().join(name);
        std::fs::create_dir(&folder).unwrap();
        let label = DenseStore::<i64>::create(folder.join("label"), &[], Codec::Raw).unwrap();
        label.append(labels).unwrap();
        if let Some(tokens) = tokens {
            let store = RaggedStore::<u32>::create(folder.join("tokens"), Codec::Zstd).unwrap();
            store.append_slices(tokens).unwrap();
        }
        std::fs::write(folder.join("classes.txt"), "cat\ndog\n").unwrap();
        drop(label);
        push(
            &folder,
            &format!("{url}/{name}"),
            &options,
            false,
            |_, _| {},
        )
        .unwrap();
    };
    let docs = |n: u32| -> Vec<Vec<u32>> { (0..n).map(|i| vec![i; i as usize]).collect() };
    shard("part-0", &[0, 1, 2], Some(&docs(3)));
    shard("part-1", &[3, 4], Some(&docs(2)));
    shard("part-1-failed", &[9], None);
    let not_yet = zrecord_remote::open_dataset(&url, options.clone()).unwrap_err();
    assert!(matches!(not_yet, Error::Incomplete { .. }), "{not_yet}");

    // A shard whose streams differ is named by the join, and nothing is written.
    let refused = zrecord_remote::join_dataset(&url, &options).unwrap_err();
    assert!(refused.to_string().contains("part-1-failed"), "{refused}");
    let failed = format!("{url}/part-1-failed");
    let objects = zrecord_remote::list(&failed, &options).unwrap().len();
    assert_eq!(zrecord_remote::remove(&failed, &options).unwrap(), objects);
    assert!(zrecord_remote::list(&failed, &options).unwrap().is_empty());

    let manifest = zrecord_remote::join_dataset(&url, &options).unwrap();
    assert_eq!(
        zrecord_remote::read_manifest(&url, &options).unwrap(),
        manifest
    );
    let folders: Vec<&str> = manifest.shards.iter().map(|s| s.folder.as_str()).collect();
    assert_eq!(folders, ["part-0", "part-1"]);
    let dataset = zrecord_remote::open_dataset(&url, options.clone()).unwrap();
    assert_eq!(dataset.len(), 5);
    let labels = dataset.stream("label").unwrap().as_dense().unwrap();
    let values = labels.gather_dyn(&[4, 0, 3]).unwrap();
    assert_eq!(values.as_slice::<i64>(), Some(&[4, 0, 3][..]));
    let tokens = dataset.stream("tokens").unwrap().as_ragged().unwrap();
    assert_eq!(tokens.gather_dyn(&[4]).unwrap().len(), 1);

    // `remove` takes one object too.
    let manifest_url = format!("{url}/dataset.zr");
    assert_eq!(zrecord_remote::remove(&manifest_url, &options).unwrap(), 1);
    assert_eq!(zrecord_remote::remove(&manifest_url, &options).unwrap(), 0);
    assert!(matches!(
        zrecord_remote::open_dataset(&url, options.clone()).unwrap_err(),
        Error::Incomplete { .. }
    ));
    zrecord_remote::join_dataset(&url, &options).unwrap();

    // The same shards joined locally give the same manifest.
    std::fs::remove_dir_all(dir.path().join("part-1-failed")).unwrap();
    assert_eq!(zrecord::Dataset::join(dir.path()).unwrap(), manifest);

    // Shards that are single stores join as one stream, `records`.
    for (k, labels) in [[5i64, 6], [7, 8]].iter().enumerate() {
        let folder = dir.path().join(format!("single-{k}"));
        let store = DenseStore::<i64>::create(&folder, &[], Codec::Raw).unwrap();
        store.append(labels).unwrap();
        drop(store);
        let shard_url = format!(
            "s3://{bucket}/singles/{}",
            zrecord::shard_folder(k as u64, 2)
        );
        push(&folder, &shard_url, &options, false, |_, _| {}).unwrap();
    }
    let singles =
        zrecord_remote::join_dataset(&format!("s3://{bucket}/singles"), &options).unwrap();
    assert_eq!(singles.streams.len(), 1);
    assert_eq!(
        (singles.streams[0].name.as_str(), singles.len()),
        ("records", 4)
    );

    let whole_bucket = zrecord_remote::remove(&format!("s3://{bucket}"), &options).unwrap_err();
    assert!(
        matches!(whole_bucket, Error::Transfer { .. }),
        "{whole_bucket}"
    );
}
