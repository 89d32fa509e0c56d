//! Random crops and flips are a pure function of (seed, step, position):
//! the same on any thread and in batch or one by one; different keys give
//! different crops; the outputs agree with each other and with the pixels.

use zrecord_vision::testing::png_rgb;
use zrecord_vision::{BatchKey, Transform};

fn key(seed: u64, step: u64) -> BatchKey<'static> {
    BatchKey {
        seed,
        step,
        first_position: 0,
        records: &[],
    }
}

#[test]
fn same_key_same_pixels_on_any_thread_batched_or_not() {
    let photos: Vec<Vec<u8>> = (0..4).map(|k| png_rgb(120, 90, k)).collect();
    let transform = Transform::random_resized_crop(32).flip(0.5);
    let mut batch = vec![0f32; 4 * transform.image_len()];
    transform
        .batch_f32(photos.iter().map(|p| p.as_slice()), key(5, 9), &mut batch)
        .unwrap();
    let from_threads: Vec<Vec<f32>> = std::thread::scope(|scope| {
        let handles: Vec<_> = photos
            .iter()
            .enumerate()
            .rev()
            .map(|(k, photo)| {
                let transform = transform.clone();
                scope.spawn(move || {
                    let mut one = vec![0f32; transform.image_len()];
                    transform.apply_f32(photo, (5, 9, k), &mut one).unwrap();
                    one
                })
            })
            .collect();
        handles
            .into_iter()
            .rev()
            .map(|h| h.join().unwrap())
            .collect()
    });
    assert_eq!(batch, from_threads.concat());
}

#[test]
fn seed_step_and_position_each_change_the_crop() {
    let photo = png_rgb(200, 150, 3);
    let transform = Transform::random_resized_crop(24);
    let crop = |seed, step, position| {
        let mut out = vec![0u8; transform.image_len()];
        transform
            .apply_u8(&photo, (seed, step, position), &mut out)
            .unwrap();
        out
    };
    let base = crop(1, 1, 1);
    assert_eq!(base, crop(1, 1, 1));
    assert_ne!(base, crop(2, 1, 1));
    assert_ne!(base, crop(1, 2, 1));
    assert_ne!(base, crop(1, 1, 2));
}

#[test]
fn f32_output_is_u8_output_in_chw_scaled_and_normalised() {
    let photo = png_rgb(64, 48, 9);
    let plain = Transform::random_resized_crop(16).flip(0.5);
    let mean = [0.5, 0.25, 0.125];
    let std = [0.5, 2.0, 0.25];
    let normalised = plain.clone().normalize(mean, std);
    for position in 0..8 {
        let mut hwc = vec![0u8; plain.image_len()];
        plain.apply_u8(&photo, (3, 4, position), &mut hwc).unwrap();
        let mut chw = vec![0f32; plain.image_len()];
        normalised
            .apply_f32(&photo, (3, 4, position), &mut chw)
            .unwrap();
        for c in 0..3 {
            for p in 0..16 * 16 {
                let expected = (f32::from(hwc[p * 3 + c]) / 255.0 - mean[c]) / std[c];
                assert!((chw[c * 256 + p] - expected).abs() < 1e-5);
            }
        }
    }
}

#[test]
fn a_centre_crop_of_the_output_size_keeps_the_pixels_and_flip_mirrors_them() {
    let photo = png_rgb(16, 16, 4);
    let mut source = zrecord_vision::RgbImage::default();
    zrecord_vision::decode(&photo, &mut source).unwrap();
    let mut out = vec![0u8; 16 * 16 * 3];
    Transform::center_crop(16, 16)
        .apply_u8(&photo, (0, 0, 0), &mut out)
        .unwrap();
    assert_eq!(out, source.pixels());
    Transform::center_crop(16, 16)
        .flip(1.0)
        .apply_u8(&photo, (0, 0, 0), &mut out)
        .unwrap();
    for (row, src) in out.chunks(48).zip(source.pixels().chunks(48)) {
        let mirrored: Vec<u8> = src.chunks(3).rev().flatten().copied().collect();
        assert_eq!(row, mirrored);
    }
}

#[test]
fn centre_crop_takes_the_middle_of_a_wide_image() {
    // 32×16: left half dark, right half bright, a 16-pixel band in the middle
    // column range 8..24 after scaling the short side to 16.
    let pixels: Vec<u8> = (0..16)
        .flat_map(|_| (0..32u32).flat_map(|x| if x < 16 { [0u8; 3] } else { [255u8; 3] }))
        .collect();
    let photo =
        zrecord_vision::testing::png(32, 16, png::ColorType::Rgb, png::BitDepth::Eight, &pixels);
    let mut out = vec![0u8; 16 * 16 * 3];
    Transform::center_crop(16, 16)
        .apply_u8(&photo, (0, 0, 0), &mut out)
        .unwrap();
    let row: Vec<u8> = out[..48].chunks(3).map(|p| p[0]).collect();
    assert_eq!(&row[..7], [0; 7]);
    assert_eq!(&row[9..], [255; 7]);
}
