//! Corrupt images: truncated or damaged files and absurd headers are typed
//! errors (never a panic, never a huge allocation); a batch names the step,
//! position and record, or blanks the slot and counts it when asked.

use jpeg_encoder::{ColorType, Encoder};
use zrecord_vision::testing::png_rgb;
use zrecord_vision::{BatchKey, Error, OnCorrupt, RgbImage, Transform, decode};

fn jpeg(width: u16, height: u16) -> Vec<u8> {
    let rgb: Vec<u8> = (0..usize::from(width) * usize::from(height) * 3)
        .map(|i| (i * 31 % 251) as u8)
        .collect();
    let mut out = Vec::new();
    Encoder::new(&mut out, 90)
        .encode(&rgb, width, height, ColorType::Rgb)
        .unwrap();
    out
}

fn decode_err(bytes: &[u8]) -> Error {
    decode(bytes, &mut RgbImage::default()).unwrap_err()
}

#[test]
fn truncated_files_are_errors() {
    let jpeg = jpeg(64, 64);
    // (A JPEG missing only its end marker holds every pixel: it decodes.)
    for cut in [3, 20, jpeg.len() / 2, jpeg.len() - 100] {
        assert!(
            matches!(decode_err(&jpeg[..cut]), Error::Jpeg(_)),
            "JPEG cut at {cut}"
        );
    }
    let png = png_rgb(64, 64, 1);
    for cut in [9, 30, png.len() / 2, png.len() - 13] {
        assert!(
            matches!(decode_err(&png[..cut]), Error::Png(_)),
            "PNG cut at {cut}"
        );
    }
}

#[test]
fn damaged_png_data_fails_its_checksum() {
    let mut png = png_rgb(32, 32, 5);
    let middle = png.len() / 2;
    png[middle] ^= 0xFF;
    assert!(matches!(decode_err(&png), Error::Png(_)));
}

/// CRC-32 (IEEE) of `bytes`, bit by bit: enough for one PNG chunk.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
#[expect(clippy::big_endian_bytes, reason = "PNG is big-endian by definition")]
fn a_header_announcing_gigapixels_is_refused_before_allocating() {
    // A valid PNG signature and IHDR for 100,000 × 100,000 RGB, and no data.
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend(100_000u32.to_be_bytes());
    ihdr.extend(100_000u32.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(13u32.to_be_bytes());
    png.extend(&ihdr);
    png.extend(crc32(&ihdr).to_be_bytes());
    assert!(matches!(
        decode_err(&png),
        Error::BadSize {
            width: 100_000,
            height: 100_000,
            ..
        }
    ));
}

#[test]
fn a_failing_batch_names_step_position_and_record() {
    let good = png_rgb(20, 20, 1);
    let bad = &good[..good.len() / 2];
    let transform = Transform::center_crop(16, 16);
    let mut out = vec![0f32; 3 * transform.image_len()];
    let key = BatchKey {
        seed: 1,
        step: 41,
        first_position: 0,
        records: &[7, 8, 9],
    };
    let error = transform
        .batch_f32([&good[..], bad, &good[..]], key, &mut out)
        .unwrap_err();
    assert!(
        matches!(&error, Error::Batch { step: 41, position: 1, record: Some(8), source } if matches!(**source, Error::Png(_))),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "image at position 1 of step 41 (record 8)"
    );
}

#[test]
fn blank_policy_zeroes_the_slot_and_counts_it() {
    let good = png_rgb(20, 20, 1);
    let transform = Transform::center_crop(16, 16).on_corrupt(OnCorrupt::Blank);
    let len = transform.image_len();
    let mut out = vec![9f32; 3 * len];
    let key = BatchKey {
        seed: 1,
        step: 0,
        first_position: 0,
        records: &[],
    };
    let blanked = transform
        .batch_f32([&good[..], b"garbage", &good[..]], key, &mut out)
        .unwrap();
    assert_eq!(blanked, [1]);
    assert!(out[len..2 * len].iter().all(|&v| v == 0.0));
    assert!(out[..len].iter().any(|&v| v != 0.0));
    assert_eq!(out[..len], out[2 * len..]);
    // Clones share the counter.
    let clone = transform.clone();
    clone
        .batch_f32([&b"x"[..], &good[..], &good[..]], key, &mut out)
        .unwrap();
    assert_eq!(transform.skipped(), 2);
}

#[test]
fn a_buffer_of_the_wrong_size_is_an_error() {
    let good = png_rgb(20, 20, 1);
    let transform = Transform::center_crop(16, 16);
    let mut out = vec![0f32; transform.image_len() + 1];
    let key = BatchKey {
        seed: 0,
        step: 0,
        first_position: 0,
        records: &[],
    };
    assert!(matches!(
        transform.batch_f32([&good[..]], key, &mut out),
        Err(Error::OutputSize {
            expected: 768,
            got: 769
        })
    ));
}

#[test]
fn bad_settings_are_refused() {
    let good = png_rgb(20, 20, 1);
    let mut out = vec![0f32; 3 * 16 * 16];
    for transform in [
        Transform::random_resized_crop(16).scale(0.5, 0.2),
        Transform::random_resized_crop(16).ratio(0.0, 1.0),
        Transform::random_resized_crop(16).flip(1.5),
        Transform::center_crop(8, 16),
        Transform::center_crop(16, 16).normalize([0.0; 3], [1.0, 0.0, 1.0]),
    ] {
        assert!(
            matches!(
                transform.apply_f32(&good, (0, 0, 0), &mut out),
                Err(Error::InvalidArgument(_))
            ),
            "{transform:?}"
        );
    }
}
