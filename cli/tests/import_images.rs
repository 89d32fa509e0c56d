//! `zrecord import images`: an ImageFolder tree or a path,label list becomes
//! encoded images (or decoded, with --resize), labels, class names and paths;
//! a corrupt image fails the import by path leaving nothing behind, or is
//! skipped and counted with --on-error skip.
#![cfg(feature = "images")]

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use zrecord::{DenseStore, RaggedStore};

fn zrecord(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zrecord"));
    for a in args {
        cmd.arg(a);
    }
    cmd.output().expect("run zrecord")
}

fn png_grey(width: u32, height: u32, value: u8) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Grayscale);
    let mut writer = encoder.write_header().unwrap();
    writer
        .write_image_data(&vec![value; (width * height) as usize])
        .unwrap();
    writer.finish().unwrap();
    out
}

fn png_rgba(width: u32, height: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgba);
    let mut writer = encoder.write_header().unwrap();
    writer
        .write_image_data(&vec![90; (width * height * 4) as usize])
        .unwrap();
    writer.finish().unwrap();
    out
}

fn jpeg(width: u16, height: u16) -> Vec<u8> {
    let rgb: Vec<u8> = (0..usize::from(width) * usize::from(height) * 3)
        .map(|i| (i % 200) as u8)
        .collect();
    let mut out = Vec::new();
    jpeg_encoder::Encoder::new(&mut out, 90)
        .encode(&rgb, width, height, jpeg_encoder::ColorType::Rgb)
        .unwrap();
    out
}

/// `root/cat/{a.png, b.JPG, deep/c.png}`, `root/dog/{d.png}`, plus files
/// the walk ignores.
fn image_folder(root: &Path) -> Vec<(String, Vec<u8>, i64)> {
    let files = vec![
        ("cat/a.png".to_owned(), png_grey(10, 6, 40), 0),
        ("cat/b.JPG".to_owned(), jpeg(12, 9), 0),
        ("cat/deep/c.png".to_owned(), png_rgba(7, 7), 0),
        ("dog/d.png".to_owned(), png_grey(5, 9, 200), 1),
    ];
    for (path, bytes, _) in &files {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }
    fs::write(root.join("cat/notes.txt"), "not an image").unwrap();
    fs::create_dir_all(root.join(".hidden")).unwrap();
    fs::write(root.join(".hidden/x.png"), png_grey(2, 2, 1)).unwrap();
    files
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn an_image_folder_imports_encoded_bytes_labels_classes_and_paths() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("photos");
    let files = image_folder(&root);
    let out = dir.path().join("out");
    let output = zrecord(&[&"import", &"images", &root, &out, &"--quiet"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Quiet hides progress bars, not the summary; notes.txt is counted.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "imported 4 images, skipped 0 as corrupt, ignored 1 non-image files; 2 classes"
        ),
        "{stderr}"
    );

    let images = RaggedStore::<u8>::open(out.join("images")).unwrap();
    let labels = DenseStore::<i64>::open(out.join("labels")).unwrap();
    assert_eq!((images.len(), labels.len()), (4, 4));
    let gathered = images.gather(&[0, 1, 2, 3]).unwrap();
    for (k, (_, bytes, _)) in files.iter().enumerate() {
        assert_eq!(gathered.get(k).unwrap().as_slice().unwrap(), &bytes[..]);
    }
    assert_eq!(
        labels.gather(&[0, 1, 2, 3]).unwrap().as_slice().unwrap(),
        [0, 0, 0, 1]
    );
    assert_eq!(lines(&out.join("classes.txt")), ["cat", "dog"]);
    let paths: Vec<String> = files.iter().map(|f| f.0.clone()).collect();
    assert_eq!(lines(&out.join("paths.txt")), paths);
}

/// The stream names the Burn and loader READMEs train on (`images`,
/// `labels`) are the ones an import writes: the loader opens them read-only
/// and every image in a batch decodes to the file it came from.
#[test]
fn the_loader_trains_on_an_import_by_the_names_the_readmes_use() {
    use zrecord_loader::{Loader, Mode, Stream};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("photos");
    let files = image_folder(&root);
    let out = dir.path().join("train");
    let output = zrecord(&[&"-q", &"import", &"images", &root, &out]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let mut loader = Loader::builder(2)
        .stream("images", Stream::open(out.join("images")).unwrap())
        .stream("labels", Stream::open(out.join("labels")).unwrap())
        .mode(Mode::Cyclic)
        .seed(1)
        .build()
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..2 {
        let batch = loader.next_batch().unwrap();
        let images = batch.ragged::<u8>("images").unwrap();
        let labels = batch.dense::<i64>("labels").unwrap();
        for (k, &record) in batch.indices().iter().enumerate() {
            let (_, bytes, label) = &files[record as usize];
            let stored = images.get(k).unwrap();
            assert_eq!(stored.as_slice().unwrap(), &bytes[..]);
            let mut image = zrecord_vision::RgbImage::default();
            zrecord_vision::decode(stored.as_slice().unwrap(), &mut image).unwrap();
            assert_eq!(labels[k], *label);
            seen.push(record);
        }
    }
    seen.sort_unstable();
    assert_eq!(
        seen,
        [0, 1, 2, 3],
        "one cyclic epoch serves every image once"
    );
}

#[test]
fn resize_decodes_once_into_square_rgb_records() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("photos");
    image_folder(&root);
    let out = dir.path().join("out");
    let output = zrecord(&[
        &"import",
        &"images",
        &root,
        &out,
        &"--resize",
        &"4",
        &"--codec",
        &"raw",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let images = DenseStore::<u8>::open(out.join("images")).unwrap();
    assert_eq!(images.item_shape(), [4, 4, 3]);
    let pixels = images.gather(&[0, 2, 3]).unwrap();
    let pixels = pixels.as_slice().unwrap();
    // Flat grey 40 stays 40 in all three channels; RGBA loses its alpha; grey 200 stays 200.
    assert!(pixels[..48].iter().all(|&v| v == 40));
    assert!(pixels[48..96].iter().all(|&v| v == 90));
    assert!(pixels[96..].iter().all(|&v| v == 200));
}

#[test]
fn a_corrupt_image_fails_by_path_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("photos");
    image_folder(&root);
    let broken = jpeg(16, 16);
    fs::write(root.join("dog/e.jpg"), &broken[..broken.len() / 2]).unwrap();
    let out = dir.path().join("out");
    let output = zrecord(&[&"import", &"images", &root, &out]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("dog/e.jpg") && stderr.contains("JPEG"),
        "{stderr}"
    );
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["photos"]);
}

#[test]
fn skip_leaves_corrupt_images_out_and_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("photos");
    image_folder(&root);
    fs::write(root.join("cat/broken.png"), b"\x89PNG\r\n\x1a\n garbage").unwrap();
    fs::write(root.join("dog/e.gif"), b"GIF89a").unwrap(); // not an image extension: ignored
    fs::write(root.join("dog/f.png"), b"GIF89a in disguise").unwrap();
    let out = dir.path().join("out");
    let output = zrecord(&[&"import", &"images", &root, &out, &"--on-error", &"skip"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("cat/broken.png") && stderr.contains("dog/f.png"),
        "{stderr}"
    );
    assert!(stderr.contains("GIF"), "{stderr}");
    assert!(
        stderr.contains("imported 4 images, skipped 2 as corrupt, ignored 2 non-image files"),
        "{stderr}"
    );
    let labels = DenseStore::<i64>::open(out.join("labels")).unwrap();
    assert_eq!(
        labels.gather(&[0, 1, 2, 3]).unwrap().as_slice().unwrap(),
        [0, 0, 0, 1]
    );
    assert_eq!(lines(&out.join("paths.txt")).len(), 4);
}

#[test]
fn a_list_names_images_and_labels_in_any_layout() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("photos");
    image_folder(&root);
    let list = dir.path().join("list.csv");
    fs::write(&list, "path,label\ndog/d.png,3\ncat/a.png,0\n").unwrap();
    let out = dir.path().join("numeric");
    let output = zrecord(&[&"import", &"images", &root, &out, &"--list", &list]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let labels = DenseStore::<i64>::open(out.join("labels")).unwrap();
    assert_eq!(labels.gather(&[0, 1]).unwrap().as_slice().unwrap(), [3, 0]);
    assert_eq!(lines(&out.join("classes.txt")), ["0", "1", "2", "3"]);

    let tsv = dir.path().join("list.tsv");
    fs::write(&tsv, "cat/b.JPG\ttabby\ndog/d.png\tbeagle\n").unwrap();
    let out = dir.path().join("named");
    let output = zrecord(&[&"import", &"images", &root, &out, &"--list", &tsv]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let labels = DenseStore::<i64>::open(out.join("labels")).unwrap();
    assert_eq!(labels.gather(&[0, 1]).unwrap().as_slice().unwrap(), [1, 0]);
    assert_eq!(lines(&out.join("classes.txt")), ["beagle", "tabby"]);
}

#[test]
fn shards_imported_in_parallel_and_joined_read_as_the_whole_import() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    image_folder(&root);
    let whole = dir.path().join("whole");
    assert!(
        zrecord(&[&"-q", &"import", &"images", &root, &whole])
            .status
            .success()
    );

    // Three jobs at once, as a job array would run them.
    let data = dir.path().join("data");
    let jobs: Vec<_> = (0..3)
        .map(|k| {
            let shard = format!("{k}/3");
            Command::new(env!("CARGO_BIN_EXE_zrecord"))
                .args(["-q", "import", "images"])
                .args([&root, &data])
                .args(["--shard", &shard])
                .spawn()
                .unwrap()
        })
        .collect();
    for mut job in jobs {
        assert!(job.wait().unwrap().success());
    }
    let out = zrecord(&[&"dataset", &"join", &data]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 shards, 4 records"));

    let dataset = zrecord::Dataset::open(&data).unwrap();
    let all: Vec<u64> = (0..4).collect();
    let images = dataset.stream("images").unwrap().as_ragged().unwrap();
    let expected = RaggedStore::<u8>::open(whole.join("images")).unwrap();
    assert_eq!(
        images.gather_dyn(&all).unwrap(),
        expected.as_dyn().gather_dyn(&all).unwrap()
    );
    let labels = dataset.stream("labels").unwrap().as_dense().unwrap();
    let expected = DenseStore::<i64>::open(whole.join("labels")).unwrap();
    assert_eq!(
        labels.gather_dyn(&all).unwrap(),
        expected.as_dyn().gather_dyn(&all).unwrap()
    );

    // A bad K/N is refused by the parser; an importer without --shard says so.
    let out = zrecord(&[&"import", &"images", &root, &data, &"--shard", &"3/3"]);
    assert!(!out.status.success());
    let text = dir.path().join("t.txt");
    fs::write(&text, "a\nb\n").unwrap();
    let out = zrecord(&[
        &"import",
        &"lines",
        &text,
        &dir.path().join("l"),
        &"--shard",
        &"0/2",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not take --shard"));
}

#[test]
fn encoded_images_stay_raw_unless_a_codec_is_named_and_decoded_ones_take_zstd() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("photos");
    image_folder(&root);
    let codec = |out: &Path| {
        let store = zrecord::OpenOptions::new()
            .read_only(true)
            .open::<zrecord::AnyStore>(out.join("images"))
            .unwrap();
        store.codec().name()
    };
    let import = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let output = Command::new(env!("CARGO_BIN_EXE_zrecord"))
            .args(["import", "images"])
            .args([&root, &out])
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{stderr}");
        (codec(&out), stderr)
    };
    let (c, summary) = import("default", &[]);
    assert_eq!(c, "raw");
    assert!(
        summary.contains("kept raw (already compressed"),
        "{summary}"
    );
    assert_eq!(import("zstd", &["--codec", "zstd"]).0, "zstd");
    assert_eq!(import("resized", &["--resize", "8"]).0, "zstd");
    assert_eq!(
        import("resized-raw", &["--resize", "8", "--codec", "raw"]).0,
        "raw"
    );

    let help = Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .args(["import", "images", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("kept raw"), "{help}");
    assert!(help.contains("fewer records"), "{help}");
}

#[test]
fn a_mixed_folder_in_four_shards_is_counted_exactly_and_joins() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mixed");
    // 11 PNGs in sorted order a0..a5 (class a), b0..b4 (class b); b1 is
    // truncated; a notes file sits among them.
    for i in 0..6 {
        fs::create_dir_all(root.join("a")).unwrap();
        fs::write(root.join(format!("a/{i}.png")), png_grey(4, 4, i as u8)).unwrap();
    }
    for i in 0..5 {
        fs::create_dir_all(root.join("b")).unwrap();
        let png = png_grey(5, 3, 100 + i as u8);
        let bytes = if i == 1 {
            &png[..png.len() / 2]
        } else {
            &png[..]
        };
        fs::write(root.join(format!("b/{i}.png")), bytes).unwrap();
    }
    fs::write(root.join("b/readme.txt"), "labels are folders").unwrap();

    // ⌈11/4⌉ = 3 files per shard: 0..3, 3..6, 6..9 (b1 is file 7), 9..11.
    let data = dir.path().join("data");
    let expected = [(3, 0), (3, 0), (2, 1), (2, 0)];
    for (k, (kept, skipped)) in expected.into_iter().enumerate() {
        let out = Command::new(env!("CARGO_BIN_EXE_zrecord"))
            .args(["-q", "import", "images"])
            .args([&root, &data])
            .args(["--on-error", "skip", "--shard", &format!("{k}/4")])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let summary = stderr.lines().last().unwrap();
        let counts = format!(
            "imported {kept} images, skipped {skipped} as corrupt, ignored 1 non-image files"
        );
        assert!(summary.contains(&counts), "shard {k}: {summary}");
        let files = (3 * k).min(11)..(3 * k + 3).min(11);
        assert!(
            summary.contains(&format!(
                "shard {k}/4: input files {}..{} of 11 (each shard takes 3 files",
                files.start, files.end
            )),
            "shard {k}: {summary}"
        );
        assert_eq!(stderr.lines().count(), 1 + skipped, "{stderr}");
    }
    let out = zrecord(&[&"dataset", &"join", &data]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("4 shards, 10 records"), "{stdout}");
    let info = zrecord(&[&"info", &"--json", &data]);
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    let records: Vec<u64> = info["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["records"].as_u64().unwrap())
        .collect();
    assert_eq!(records, [3, 3, 2, 2]);
}
