//! Odd formats decode to RGB u8 by the documented rule: grey, grey + alpha,
//! RGBA, 16-bit, palette PNGs; grey, CMYK, 4:2:0 and progressive JPEGs; and
//! formats we do not decode are refused by name.

use jpeg_encoder::{ColorType, Encoder, SamplingFactor};
use png::{BitDepth, ColorType as PngColor};
use zrecord_vision::testing::png;
use zrecord_vision::{Error, RgbImage, decode};

fn decoded(bytes: &[u8]) -> RgbImage {
    let mut image = RgbImage::default();
    decode(bytes, &mut image).unwrap();
    image
}

fn jpeg(data: &[u8], width: u16, height: u16, color: ColorType, progressive: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = Encoder::new(&mut out, 95);
    encoder.set_sampling_factor(SamplingFactor::R_4_2_0);
    encoder.set_progressive(progressive);
    encoder.encode(data, width, height, color).unwrap();
    out
}

/// A smooth 16×16 RGB gradient (JPEG keeps it close).
fn gradient() -> Vec<u8> {
    (0..16u8)
        .flat_map(|y| (0..16u8).flat_map(move |x| [x * 12, y * 12, 128]))
        .collect()
}

fn close(a: &[u8], b: &[u8], tolerance: u8) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.abs_diff(*y) <= tolerance)
}

#[test]
fn grey_png_is_copied_to_three_channels() {
    let image = decoded(&png(2, 1, PngColor::Grayscale, BitDepth::Eight, &[7, 200]));
    assert_eq!(image.pixels(), [7, 7, 7, 200, 200, 200]);
}

#[test]
fn alpha_is_dropped_not_blended() {
    let grey_alpha = png(
        2,
        1,
        PngColor::GrayscaleAlpha,
        BitDepth::Eight,
        &[7, 0, 200, 128],
    );
    assert_eq!(decoded(&grey_alpha).pixels(), [7, 7, 7, 200, 200, 200]);
    let rgba = png(
        2,
        1,
        PngColor::Rgba,
        BitDepth::Eight,
        &[1, 2, 3, 0, 4, 5, 6, 255],
    );
    assert_eq!(decoded(&rgba).pixels(), [1, 2, 3, 4, 5, 6]);
}

#[test]
fn sixteen_bit_samples_keep_their_high_byte() {
    // Big-endian 16-bit RGB: 0x1234 0xABCD 0xFF00.
    let rgb16 = png(
        1,
        1,
        PngColor::Rgb,
        BitDepth::Sixteen,
        &[0x12, 0x34, 0xAB, 0xCD, 0xFF, 0x00],
    );
    assert_eq!(decoded(&rgb16).pixels(), [0x12, 0xAB, 0xFF]);
    let grey16 = png(1, 1, PngColor::Grayscale, BitDepth::Sixteen, &[0x80, 0x01]);
    assert_eq!(decoded(&grey16).pixels(), [0x80, 0x80, 0x80]);
}

#[test]
fn palette_and_low_bit_depths_expand() {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, 3, 1);
    encoder.set_color(PngColor::Indexed);
    encoder.set_depth(BitDepth::Two);
    encoder.set_palette(vec![10, 20, 30, 40, 50, 60, 70, 80, 90]);
    let mut writer = encoder.write_header().unwrap();
    // Indices 0, 1, 2 packed two bits each: 00 01 10 00.
    writer.write_image_data(&[0b0001_1000]).unwrap();
    writer.finish().unwrap();
    assert_eq!(decoded(&out).pixels(), [10, 20, 30, 40, 50, 60, 70, 80, 90]);
    // 1-bit grey: 0 → 0, 1 → 255.
    let bits = png(2, 1, PngColor::Grayscale, BitDepth::One, &[0b0100_0000]);
    assert_eq!(decoded(&bits).pixels(), [0, 0, 0, 255, 255, 255]);
}

#[test]
fn jpegs_of_every_kind_decode_close_to_their_pixels() {
    let rgb = gradient();
    for progressive in [false, true] {
        let image = decoded(&jpeg(&rgb, 16, 16, ColorType::Rgb, progressive));
        assert_eq!((image.width, image.height), (16, 16));
        assert!(close(image.pixels(), &rgb, 12), "progressive={progressive}");
    }
    let grey: Vec<u8> = (0..=255).collect();
    let image = decoded(&jpeg(&grey, 16, 16, ColorType::Luma, false));
    let expanded: Vec<u8> = grey.iter().flat_map(|&v| [v; 3]).collect();
    assert!(close(image.pixels(), &expanded, 6));
    assert!(
        image
            .pixels()
            .chunks(3)
            .all(|p| p[0] == p[1] && p[1] == p[2])
    );
}

#[test]
fn cmyk_and_ycck_jpegs_become_rgb() {
    // Flat CMYK (0, 255, 255, 0) is red.
    let cmyk: Vec<u8> = [0u8, 255, 255, 0].repeat(64);
    for color in [ColorType::Cmyk, ColorType::CmykAsYcck] {
        let image = decoded(&jpeg(&cmyk, 8, 8, color, false));
        let rgb = image.pixels();
        assert_eq!(rgb.len(), 8 * 8 * 3);
        assert!(
            rgb.chunks(3).all(|p| p[0] > 200 && p[1] < 60 && p[2] < 60),
            "{color:?}: {:?}",
            &rgb[..3]
        );
    }
}

#[test]
fn other_formats_are_refused_by_name() {
    let mut image = RgbImage::default();
    for (bytes, name) in [
        (&b"GIF89a\x01\x00\x01\x00"[..], "GIF"),
        (&b"BM\x00\x00\x00\x00\x00\x00"[..], "BMP"),
        (&b"RIFF\x00\x00\x00\x00WEBPVP8 "[..], "WebP"),
        (&b"not an image at all"[..], "unknown"),
    ] {
        let error = decode(bytes, &mut image).unwrap_err();
        assert!(
            matches!(error, Error::UnsupportedFormat { found } if found == name),
            "{error}"
        );
    }
}
