//! Image loading, side by side: decode → RandomResizedCrop(224, scale
//! 0.08–1, ratio 3/4–4/3, antialiased bilinear) → flip p=0.5 → normalise →
//! f32 CHW, batch 256, on JPEG and PNG copies of one generated set.
//!
//! Rows, at 1 thread and at every core: a bare decode-only loop (the
//! decoder's limit), a bare decode + crop loop in our own code (what the
//! loader should match), the zrecord loader over a warm encoded-image store
//! (transform on its workers) — these two run alternately three times, and
//! the row gives their medians and the median of the three ratios — and
//! the Python peer
//! (`benches/images/python/image_peer.py`: torchvision's `DataLoader` with PIL when
//! `torch` and `torchvision` import, else the same PIL operations in a
//! process pool, labelled so) when `--python` finds one.
//!
//! The data: 2,000 JPEGs of 500×375 at quality 90, 4:2:0, cut from natural
//! photographs (random crops, rescales and flips from a fixed seed, made by
//! this program), plus the same images as PNG.
//!
//! ```text
//! cargo run --release -p zrecord-bench-images -- [--photos DIR] [--images N] [--python python3 | --no-python] [--quick]
//! ```
//!
//! `--photos` defaults to `$ZRECORD_DATA/images`; without photos the
//! benchmark prints why and stops.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use zrecord::{Codec, DynRaggedStore, RaggedStore};
use zrecord_loader::Loader;
use zrecord_vision::{BatchKey, IMAGENET_MEAN, IMAGENET_STD, RgbImage, Transform, decode};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const BATCH: usize = 256;
const SEED: u64 = 90;

/// Image loading, side by side (see the crate docs).
#[derive(clap::Parser)]
struct Options {
    /// A folder of JPEG/PNG photographs the images are cut from
    /// (default: `$ZRECORD_DATA/images`).
    #[arg(long)]
    photos: Option<PathBuf>,
    /// Images in the benchmark set.
    #[arg(long, default_value_t = 2000)]
    images: usize,
    /// The Python interpreter of the peer row.
    #[arg(long, default_value = "python3", conflicts_with = "no_python")]
    python: String,
    /// No Python peer row.
    #[arg(long)]
    no_python: bool,
    /// 300 images and 3 timed batches: a smoke test.
    #[arg(long)]
    quick: bool,
}

impl Options {
    fn photos(&self) -> PathBuf {
        self.photos.clone().unwrap_or_else(|| {
            std::env::var_os("ZRECORD_DATA")
                .map_or_else(|| "data".into(), PathBuf::from)
                .join("images")
        })
    }

    fn python(&self) -> Option<&str> {
        (!self.no_python).then_some(self.python.as_str())
    }

    fn images(&self) -> usize {
        if self.quick { 300 } else { self.images }
    }

    fn batches(&self) -> usize {
        if self.quick { 3 } else { 16 }
    }

    /// Runs of the bare decode + crop loop and of the loader, alternating.
    fn repeats(&self) -> usize {
        if self.quick { 1 } else { 3 }
    }
}

/// The median of `values` (the upper one of an even count).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The benchmark's data: `n` 500×375 RGB images cut from the photographs,
/// each a random crop (area 25–100 %, ratio 4:3) of a photo picked by the
/// seed, rescaled, maybe flipped.
fn generate(photos: &[Vec<u8>], n: usize) -> Result<Vec<Vec<u8>>, BoxError> {
    let cut = Transform::random_resized_crop(0)
        .output_size(375, 500)
        .scale(0.25, 1.0)
        .ratio(4.0 / 3.0, 4.0 / 3.0)
        .flip(0.5);
    (0..n)
        .map(|k| {
            let photo = &photos[k * 7919 % photos.len()];
            let mut rgb = vec![0u8; cut.image_len()];
            cut.apply_u8(photo, (SEED, 0, k), &mut rgb)?;
            Ok(rgb)
        })
        .collect()
}

fn encode_jpeg(rgb: &[u8]) -> Result<Vec<u8>, BoxError> {
    let mut out = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, 90);
    encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_2_0);
    encoder.encode(rgb, 500, 375, jpeg_encoder::ColorType::Rgb)?;
    Ok(out)
}

fn encode_png(rgb: &[u8]) -> Result<Vec<u8>, BoxError> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, 500, 375);
    encoder.set_color(png::ColorType::Rgb);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(out)
}

/// The training transform every row runs.
fn train_transform() -> Transform {
    Transform::random_resized_crop(224)
        .flip(0.5)
        .normalize(IMAGENET_MEAN, IMAGENET_STD)
}

/// Runs `work(thread, threads)` on `threads` threads and returns the seconds.
fn timed(threads: usize, work: impl Fn(usize, usize) + Sync) -> f64 {
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let work = &work;
            s.spawn(move || work(t, threads));
        }
    });
    start.elapsed().as_secs_f64()
}

/// Images per second of a bare loop over `files` on `threads` threads:
/// decode only, or decode + the training transform into a reused buffer.
fn bare(files: &[Vec<u8>], threads: usize, crop: bool, rounds: usize) -> f64 {
    let transform = train_transform();
    let seconds = timed(threads, |t, threads| {
        let mut image = RgbImage::default();
        let mut out = vec![0f32; transform.image_len()];
        for round in 0..rounds {
            for (k, file) in files.iter().enumerate().skip(t).step_by(threads) {
                if crop {
                    let key = (SEED, round as u64, k);
                    transform.apply_f32(file, key, &mut out).expect("decodes");
                } else {
                    decode(file, &mut image).expect("decodes");
                }
            }
        }
    });
    (files.len() * rounds) as f64 / seconds
}

/// Output buffers handed back when a batch is dropped: the loader's memory
/// stays at its prefetch bound with no fresh pages per batch.
#[derive(Clone, Default)]
struct Buffers(Arc<Mutex<Vec<Vec<f32>>>>);

struct Output {
    values: Vec<f32>,
    blanked: usize,
    home: Buffers,
}

impl Drop for Output {
    fn drop(&mut self) {
        let values = std::mem::take(&mut self.values);
        if let Ok(mut pool) = self.home.0.lock() {
            pool.push(values);
        }
    }
}

/// The loader over `store` with `workers` workers: images per second over
/// `batches` batches after two warm-up batches, and the peak RSS in MB.
fn loader(
    store: &Arc<DynRaggedStore>,
    workers: usize,
    batches: usize,
) -> Result<(f64, f64), BoxError> {
    let transform = train_transform();
    let buffers = Buffers::default();
    let len = BATCH * transform.image_len();
    let mut loader = Loader::builder(BATCH as u64)
        .stream("image", Arc::clone(store))
        .seed(SEED)
        .workers(workers)
        .prefetch(workers + 1)
        .transform(move |batch| -> Result<Output, BoxError> {
            let view = batch.ragged::<u8>("image")?;
            let images = (0..view.len()).map(|k| {
                let range = view.layout().range(k).unwrap_or_default();
                view.values().get(range).unwrap_or_default()
            });
            let mut values = buffers
                .0
                .lock()
                .ok()
                .and_then(|mut p| p.pop())
                .unwrap_or_default();
            values.resize(len, 0.0);
            let key = BatchKey {
                seed: SEED,
                step: batch.step(),
                first_position: batch.first_position(),
                records: batch.indices(),
            };
            let blanked = transform.batch_f32(images, key, &mut values)?.len();
            Ok(Output {
                values,
                blanked,
                home: buffers.clone(),
            })
        })
        .build()?;
    for _ in 0..2 {
        drop(loader.next_batch()??);
    }
    reset_peak_rss();
    let start = Instant::now();
    for _ in 0..batches {
        let out = loader.next_batch()??;
        assert_eq!((out.values.len(), out.blanked), (len, 0));
    }
    let rate = (batches * BATCH) as f64 / start.elapsed().as_secs_f64();
    Ok((rate, peak_rss_mb()))
}

/// Resets the process's peak RSS (Linux: `clear_refs` 5); no-op elsewhere.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// The Python peer's images per second on `folder` with `workers`
/// processes, and what it ran; `None` with the reason when it cannot run.
fn python_peer(
    python: &str,
    folder: &Path,
    workers: usize,
    batches: usize,
) -> Result<(f64, String), String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/image_peer.py");
    let output = Command::new(python)
        .arg(&script)
        .arg(folder)
        .args([
            "--workers",
            &workers.to_string(),
            "--batches",
            &batches.to_string(),
        ])
        .output()
        .map_err(|e| format!("{python}: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "{}{}",
            stdout.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let line = stdout
        .lines()
        .find(|l| l.starts_with("images_per_s="))
        .ok_or_else(|| stdout.to_string())?;
    let mut rate = f64::NAN;
    let mut peer = String::new();
    for part in line.split_whitespace() {
        if let Some(v) = part.strip_prefix("images_per_s=") {
            rate = v.parse().unwrap_or(f64::NAN);
        } else if let Some(v) = part.strip_prefix("peer=") {
            peer = v.to_owned();
        }
    }
    Ok((rate, peer))
}

fn main() -> Result<(), BoxError> {
    let options = <Options as clap::Parser>::parse();
    let mut photos: Vec<Vec<u8>> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(options.photos()) {
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        photos = paths
            .iter()
            .filter_map(|p| std::fs::read(p).ok())
            .filter(|b| decode(b, &mut RgbImage::default()).is_ok())
            .collect();
    }
    if photos.is_empty() {
        let photos = options.photos();
        let place = if photos.as_os_str().is_empty() {
            "given".to_string()
        } else {
            format!("in {}", photos.display())
        };
        println!(
            "images: skipped, no photographs {place} (pass --photos DIR or fill \
             $ZRECORD_DATA/images with JPEG/PNG photos, e.g. scikit-image's data folder)"
        );
        return Ok(());
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "# Image loading: decode → RandomResizedCrop 224 → flip → normalise → f32 CHW, batch {BATCH}\n\n\
         {} images of 500×375 cut from {} photographs; {cores} cores; load average at start {}",
        options.images(),
        photos.len(),
        load_average()
    );
    let rgb = generate(&photos, options.images())?;
    let dir = tempfile::tempdir()?;
    for (format, encode) in [
        ("JPEG q90 4:2:0", encode_jpeg as fn(&[u8]) -> _),
        ("PNG", encode_png),
    ] {
        let files: Vec<Vec<u8>> = rgb.iter().map(|r| encode(r)).collect::<Result<_, _>>()?;
        let mb = files.iter().map(Vec::len).sum::<usize>() as f64 / 1e6;
        // The same files as an ImageFolder (one class) for the Python peer.
        let folder = dir
            .path()
            .join(format.split(' ').next().unwrap_or("x"))
            .join("all");
        std::fs::create_dir_all(&folder)?;
        let ext = if format == "PNG" { "png" } else { "jpg" };
        for (k, file) in files.iter().enumerate() {
            std::fs::write(folder.join(format!("{k:05}.{ext}")), file)?;
        }
        let store = RaggedStore::<u8>::create(dir.path().join(format!("{ext}-store")), Codec::Raw)?;
        store.append_slices(&files)?;
        let store = Arc::new(store.into_dyn());
        let _warm = store.gather_dyn(&(0..store.len()).collect::<Vec<_>>())?;
        println!("\n## {format}: {mb:.0} MB in {} files\n", files.len());
        println!(
            "| threads | bare decode | bare decode + crop | zrecord loader | loader / bare | peak RSS (loader) | Python peer | loader / peer |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
        let rounds = 1;
        for threads in [1, cores] {
            let decode_rate = bare(&files, threads, false, rounds);
            // The bare loop and the loader alternate, and the row gives
            // medians: on a shared machine a single run of either swings.
            let mut pairs = Vec::new();
            let mut rss: f64 = 0.0;
            for _ in 0..options.repeats() {
                let crop_rate = bare(&files, threads, true, rounds);
                let (loader_rate, peak) = loader(
                    &store,
                    threads,
                    options.batches().min(files.len() / BATCH * 2).max(1),
                )?;
                rss = rss.max(peak);
                pairs.push((crop_rate, loader_rate));
            }
            let crop_rate = median(pairs.iter().map(|p| p.0));
            let loader_rate = median(pairs.iter().map(|p| p.1));
            let paired = median(pairs.iter().map(|p| p.1 / p.0));
            let peer = match options.python() {
                Some(python) => python_peer(
                    python,
                    folder.parent().unwrap_or(&folder),
                    threads,
                    options.batches().min(4),
                ),
                None => Err("--no-python".into()),
            };
            let (peer_cell, ratio_cell) = match &peer {
                Ok((rate, name)) => (
                    format!("{rate:.0} ({name})"),
                    format!("{:.2}×", loader_rate / rate),
                ),
                Err(why) => (
                    format!("not run: {}", why.lines().last().unwrap_or("")),
                    "–".into(),
                ),
            };
            println!(
                "| {threads} | {decode_rate:.0} | {crop_rate:.0} | {loader_rate:.0} | {paired:.2}× | {rss:.0} MB | {peer_cell} | {ratio_cell} |"
            );
        }
    }
    println!(
        "\nimages/s (divide by threads for per core); load average at end {}",
        load_average()
    );
    Ok(())
}
