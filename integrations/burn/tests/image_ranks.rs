//! Random crops and flips are keyed by a record's position in the global
//! batch, so the ranks of any world size together serve exactly the pixels
//! one process serves — what makes a resume on another world size exact.

use burn::tensor::Device;
use zrecord::{Codec, RaggedStore};
use zrecord_burn::vision::Transform;
use zrecord_burn::vision::testing::png_rgb;
use zrecord_burn::{StoreDataLoader, Stream, image_tensor};

const LEN: u64 = 48;
const BATCH: u64 = 12;

/// Every batch's pixels, rank `rank` of `world`, over two epochs.
fn pixels(images: &Stream, rank: u64, world: u64) -> Vec<Vec<f32>> {
    let transform = Transform::random_resized_crop(8).flip(0.5);
    let loader = StoreDataLoader::builder(BATCH)
        .stream("image", images.clone())
        .seed(5)
        .shard(rank, world)
        .build(&Device::flex(), move |batch, device| {
            image_tensor(&batch, "image", &transform, 9, device)
        })
        .unwrap();
    let mut out = Vec::new();
    for _ in 0..2 {
        for x in loader.iter() {
            out.push(x.unwrap().into_data().try_into_vec::<f32>().unwrap());
        }
    }
    out
}

#[test]
fn the_ranks_together_crop_as_one_process_does() {
    let dir = tempfile::tempdir().unwrap();
    let images = RaggedStore::<u8>::create(dir.path().join("images"), Codec::Raw).unwrap();
    let files: Vec<Vec<u8>> = (0..LEN).map(|k| png_rgb(20, 14, k as u8)).collect();
    images.append_slices(&files).unwrap();
    let images = Stream::from(images);

    let whole = pixels(&images, 0, 1);
    for world in [2, 3, 4] {
        let ranks: Vec<_> = (0..world).map(|r| pixels(&images, r, world)).collect();
        for (step, expected) in whole.iter().enumerate() {
            let joined: Vec<f32> = ranks.iter().flat_map(|r| r[step].clone()).collect();
            assert_eq!(&joined, expected, "world {world}, step {step}");
        }
    }
}
