//! MNIST on real data sets: zrecord's IDX reader and the `burn_mnist`
//! example on `$ZRECORD_DATA/mnist`, `$ZRECORD_DATA/fashion-mnist`, … (by
//! default the checkout's `data/` folder: see `.cargo/config.toml`). Each
//! test skips, saying why, when the files are absent.

use std::path::{Path, PathBuf};

fn shared(sub: &str) -> Option<PathBuf> {
    let root = std::env::var_os("ZRECORD_DATA").map_or_else(|| "data".into(), PathBuf::from);
    let dir = root.join(sub);
    if dir.is_dir() {
        Some(dir)
    } else {
        zrecord_testkit::skip(format!("{} is absent (set ZRECORD_DATA)", dir.display()));
        None
    }
}

/// The IDX file `name` in `dir`, gzipped or plain, with `-idx` or `.idx` in
/// its name (as `burn_mnist` finds it).
fn find(dir: &Path, name: &str) -> Option<PathBuf> {
    let dotted = name.replacen("-idx", ".idx", 1);
    [
        name.to_string(),
        format!("{name}.gz"),
        dotted.clone(),
        format!("{dotted}.gz"),
    ]
    .into_iter()
    .map(|n| dir.join(n))
    .find(|p| p.is_file())
}

/// The dimensions and bytes of the `u8` IDX file `name` in `dir`.
fn read_u8(dir: &Path, name: &str) -> (Vec<usize>, Vec<u8>) {
    let path = find(dir, name).unwrap_or_else(|| panic!("{} has no {name}", dir.display()));
    let file = zrecord::idx::open(path).unwrap();
    let dims = file.shape().to_vec();
    (dims, file.read_all().unwrap().into_vec::<u8>().unwrap())
}

#[test]
fn mnist_test_split_reads_with_its_canonical_counts() {
    let Some(dir) = shared("mnist") else { return };
    let (image_dims, _) = read_u8(&dir, "t10k-images-idx3-ubyte");
    let (label_dims, labels) = read_u8(&dir, "t10k-labels-idx1-ubyte");
    assert_eq!(image_dims, vec![10_000, 28, 28]);
    assert_eq!(label_dims, vec![10_000]);
    assert_eq!(labels.iter().filter(|&&l| l == 0).count(), 980);
}

#[test]
fn fashion_mnist_test_split_has_1000_per_class() {
    let Some(dir) = shared("fashion-mnist") else {
        return;
    };
    let (_, labels) = read_u8(&dir, "t10k-labels-idx1-ubyte");
    for class in 0..10u8 {
        assert_eq!(labels.iter().filter(|&&l| l == class).count(), 1000);
    }
}

/// Runs `burn_mnist` (release) on `dir` and returns its `test_accuracy=`.
fn burn_mnist_accuracy(dir: &Path) -> f64 {
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "run",
            "--release",
            "--quiet",
            "--example",
            "burn_mnist",
            "--",
        ])
        .arg(dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    last.strip_prefix("test_accuracy=")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no test_accuracy line in {stdout}"))
}

/// The full MNIST training run (about a minute on two cores once built).
#[test]
#[ignore = "trains for about a minute in release mode"]
fn burn_mnist_reaches_97_percent_on_mnist() {
    let Some(dir) = shared("mnist") else { return };
    let accuracy = burn_mnist_accuracy(&dir);
    assert!(accuracy >= 0.97, "test accuracy {accuracy}");
}

/// The full Fashion-MNIST run; needs the train split from Debian's
/// `dataset-fashion-mnist` package in `/usr/share/datasets/fashion-mnist`.
#[test]
#[ignore = "trains for about a minute in release mode"]
fn burn_mnist_reaches_85_percent_on_fashion_mnist() {
    let dir = Path::new("/usr/share/datasets/fashion-mnist");
    if find(dir, "train-images-idx3-ubyte").is_none() {
        println!(
            "skipped: {} has no train split (apt-get install dataset-fashion-mnist)",
            dir.display()
        );
        return;
    }
    let accuracy = burn_mnist_accuracy(dir);
    assert!(accuracy >= 0.85, "test accuracy {accuracy}");
}
