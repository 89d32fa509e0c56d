//! Small synthetic images for tests and examples: deterministic, encoded in
//! memory, no files needed.

/// A `width × height` RGB PNG whose pixels are a function of `seed` and the
/// position (a gradient with a seeded offset).
///
/// # Panics
/// If the PNG encoder fails writing to memory (it does not for valid sizes).
pub fn png_rgb(width: u32, height: u32, seed: u8) -> Vec<u8> {
    let pixels: Vec<u8> = (0..height)
        .flat_map(|y| {
            (0..width).flat_map(move |x| {
                [
                    (x as u8).wrapping_mul(7).wrapping_add(seed),
                    (y as u8).wrapping_mul(5),
                    ((x + y) as u8).wrapping_add(seed.wrapping_mul(3)),
                ]
            })
        })
        .collect();
    png(
        width,
        height,
        png::ColorType::Rgb,
        png::BitDepth::Eight,
        &pixels,
    )
}

/// Encodes `data` (rows of samples, big-endian for 16-bit) as a PNG.
///
/// # Panics
/// If `data` does not match the size, colour type and depth.
pub fn png(
    width: u32,
    height: u32,
    color: png::ColorType,
    depth: png::BitDepth,
    data: &[u8],
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(color);
    encoder.set_depth(depth);
    let mut writer = encoder.write_header().expect("PNG header to memory");
    writer.write_image_data(data).expect("PNG data to memory");
    writer.finish().expect("PNG end to memory");
    out
}
