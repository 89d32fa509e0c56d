//! `burn_images`' pieces end to end on Fashion-MNIST written out as PNG files
//! (from `../shared/data`, a checkout next to this repository; skipped,
//! saying why, when absent): a few training steps through the loader's image
//! transforms lower the loss, and a loader resumed at a step reproduces that
//! step's crops exactly.

use std::path::{Path, PathBuf};

use burn::data::dataloader::DataLoader;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Int, Tensor};
use zrecord_burn::vision::{IMAGENET_MEAN, IMAGENET_STD, ImageFolder, Transform};
use zrecord_burn::{StoreDataLoader, dense_tensor, image_tensor};
use zrecord_examples::cnn::{Cnn, PhotoBatch};
use zrecord_examples::image_folder::{FASHION_CLASSES, import, write_fashion_pngs};

fn fashion_mnist() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/fashion-mnist");
    if dir.is_dir() {
        Some(dir)
    } else {
        println!("skipped: {} is absent", dir.display());
        None
    }
}

fn augment() -> Transform {
    Transform::random_resized_crop(28)
        .scale(0.6, 1.0)
        .flip(0.5)
        .normalize(IMAGENET_MEAN, IMAGENET_STD)
}

fn loader(stores: &Path, start_step: u64, device: &Device) -> StoreDataLoader<PhotoBatch> {
    let (images, labels) = (
        zrecord::RaggedStore::<u8>::open(stores.join("images")).unwrap(),
        zrecord::DenseStore::<i64>::open(stores.join("labels")).unwrap(),
    );
    let transform = augment();
    StoreDataLoader::builder(32)
        .stream("image", images)
        .stream("label", labels)
        .seed(5)
        .start_step(start_step)
        .build(device, move |mut batch, device| {
            let images = image_tensor(&batch, "image", &transform, 5, device)?;
            let labels: Tensor<1, Int> = dense_tensor(&mut batch, "label", device)?;
            Ok(PhotoBatch { images, labels })
        })
        .unwrap()
}

/// 512 training PNGs imported into stores under a temporary folder.
fn stores(idx: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    write_fashion_pngs(idx, "t10k", &dir.path().join("png"), 512, 0).unwrap();
    let folder = ImageFolder::scan(dir.path().join("png/train")).unwrap();
    assert_eq!(folder.classes, FASHION_CLASSES);
    assert_eq!(folder.images.len(), 512);
    let stores = dir.path().join("stores");
    let (images, labels) = import(&folder, &stores).unwrap();
    assert_eq!((images.len(), labels.len()), (512, 512));
    drop((images, labels));
    (dir, stores)
}

#[test]
fn a_few_steps_from_png_files_lower_the_loss() {
    let Some(idx) = fashion_mnist() else { return };
    let (_dir, stores) = stores(&idx);
    let device = Device::flex().autodiff();
    let train = loader(&stores, 0, &device);
    let mut model = Cnn::new(28, 10, &device);
    let mut optim = AdamConfig::new().init();
    let mut losses = Vec::new();
    // 40 steps: 16 batches an epoch, so two epochs and a half.
    for batch in std::iter::repeat_with(|| train.iter()).flatten().take(40) {
        let batch = batch.unwrap();
        assert_eq!(batch.images.dims(), [32, 3, 28, 28]);
        let output = model.classify(batch);
        losses.push(output.loss.clone().into_scalar::<f32>());
        let grads = GradientsParams::from_grads(output.loss.backward(), &model);
        model = optim.step(2e-3, model, grads);
    }
    let mean = |s: &[f32]| s.iter().sum::<f32>() / s.len() as f32;
    let (first, last) = (mean(&losses[..8]), mean(&losses[32..]));
    println!("loss {first:.3} -> {last:.3}");
    assert!(last < 0.8 * first, "loss {first} -> {last}: {losses:?}");
}

#[test]
fn a_loader_resumed_at_a_step_reproduces_its_crops() {
    let Some(idx) = fashion_mnist() else { return };
    let (_dir, stores) = stores(&idx);
    let device = Device::flex();
    let from_start: Vec<Vec<f32>> = loader(&stores, 0, &device)
        .iter()
        .take(4)
        .map(|b| b.unwrap().images.into_data().try_to_vec::<f32>().unwrap())
        .collect();
    let resumed = loader(&stores, 3, &device).iter().next().unwrap().unwrap();
    assert_eq!(
        resumed.images.into_data().try_to_vec::<f32>().unwrap(),
        from_start[3]
    );
    assert_ne!(from_start[2], from_start[3]);
}
