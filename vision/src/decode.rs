//! Decoding: JPEG (zune-jpeg) and PNG (png) to 8-bit RGB, into a buffer the
//! caller reuses.
//!
//! Every image becomes RGB `u8` by one rule, the one Pillow's
//! `convert("RGB")` follows: grayscale is copied to the three channels, an
//! alpha channel is dropped (not blended), 16-bit samples keep their high
//! byte, palettes are expanded, CMYK and YCCK JPEGs are converted to RGB by
//! the decoder. An animated PNG gives its first frame.

use std::io::Cursor;

use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

use crate::{Error, Result};

/// The most pixels an image may have (width × height): 2²⁷, about 134
/// megapixels, 400 MB as RGB. A larger header is refused before anything is
/// allocated, so a corrupt or hostile file cannot exhaust memory.
pub const MAX_PIXELS: u64 = 1 << 27;

/// An encoded image format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// JPEG (JFIF, Exif), baseline or progressive, 8-bit.
    Jpeg,
    /// PNG, any colour type and bit depth.
    Png,
}

impl Format {
    /// The format the leading bytes announce.
    ///
    /// # Errors
    /// [`Error::UnsupportedFormat`] naming the format, for anything else.
    pub fn sniff(bytes: &[u8]) -> Result<Format> {
        let found = match bytes {
            [0xFF, 0xD8, 0xFF, ..] => return Ok(Format::Jpeg),
            [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, ..] => return Ok(Format::Png),
            [
                b'R',
                b'I',
                b'F',
                b'F',
                _,
                _,
                _,
                _,
                b'W',
                b'E',
                b'B',
                b'P',
                ..,
            ] => "WebP",
            [b'G', b'I', b'F', b'8', ..] => "GIF",
            [b'B', b'M', ..] => "BMP",
            [b'I', b'I', 42, 0, ..] | [b'M', b'M', 0, 42, ..] => "TIFF",
            [_, _, _, _, b'f', b't', b'y', b'p', ..] => "HEIF/AVIF",
            _ => "unknown",
        };
        Err(Error::UnsupportedFormat { found })
    }
}

/// An 8-bit RGB image, row-major, 3 bytes a pixel. Decoding into one reuses
/// its buffer, so a worker that decodes many images allocates once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RgbImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `height × width × 3` bytes (the buffer may hold more; use [`pixels`](Self::pixels)).
    pub buffer: Vec<u8>,
}

impl RgbImage {
    /// The pixels: `height × width × 3` bytes, RGB.
    pub fn pixels(&self) -> &[u8] {
        let len = self.width as usize * self.height as usize * 3;
        &self.buffer[..len.min(self.buffer.len())]
    }

    /// Makes room for `width × height` pixels of `channels` bytes each and
    /// returns that much of the buffer.
    fn resize(&mut self, width: u32, height: u32, channels: usize) -> &mut [u8] {
        self.width = width;
        self.height = height;
        let len = width as usize * height as usize * channels;
        if self.buffer.len() < len {
            self.buffer.resize(len, 0);
        }
        &mut self.buffer[..len]
    }
}

/// Decodes a JPEG or PNG into `out` as RGB (see the [module](self) for the
/// colour rule), reusing its buffer.
///
/// ```
/// use zrecord_vision::{RgbImage, decode};
/// # let png = zrecord_vision::testing::png_rgb(3, 2, 7);
/// let mut image = RgbImage::default();
/// decode(&png, &mut image)?;
/// assert_eq!((image.width, image.height, image.pixels().len()), (3, 2, 18));
/// # Ok::<(), zrecord_vision::Error>(())
/// ```
///
/// # Errors
/// [`Error::UnsupportedFormat`], [`Error::Jpeg`] / [`Error::Png`] for a file
/// the decoder refuses (truncated, corrupt), [`Error::BadSize`].
pub fn decode(bytes: &[u8], out: &mut RgbImage) -> Result<()> {
    match Format::sniff(bytes)? {
        Format::Jpeg => decode_jpeg(bytes, out),
        Format::Png => decode_png(bytes, out),
    }
}

/// Refuses an empty image or one of more than [`MAX_PIXELS`].
fn check_size(width: u64, height: u64) -> Result<()> {
    if width == 0 || height == 0 || width.saturating_mul(height) > MAX_PIXELS {
        return Err(Error::BadSize {
            width,
            height,
            max: MAX_PIXELS,
        });
    }
    Ok(())
}

fn decode_jpeg(bytes: &[u8], out: &mut RgbImage) -> Result<()> {
    // Strict: a truncated or damaged stream is an error, not a grey patch.
    let options = DecoderOptions::new_fast()
        .jpeg_set_out_colorspace(ColorSpace::RGB)
        .set_strict_mode(true)
        .set_max_width(1 << 16)
        .set_max_height(1 << 16);
    let mut decoder = JpegDecoder::new_with_options(ZCursor::new(bytes), options);
    let jpeg = |e: zune_jpeg::errors::DecodeErrors| Error::Jpeg(e.to_string().trim().to_owned());
    decoder.decode_headers().map_err(jpeg)?;
    let (width, height) = decoder
        .dimensions()
        .ok_or_else(|| Error::Jpeg("no frame header".into()))?;
    check_size(width as u64, height as u64)?;
    let channels = decoder
        .output_colorspace()
        .map_or(3, |c| c.num_components());
    if channels != 3 {
        return Err(Error::Jpeg(format!(
            "decodes to {channels} channels, not RGB"
        )));
    }
    let width = u32::try_from(width).map_err(|_| Error::Jpeg("width overflows".into()))?;
    let height = u32::try_from(height).map_err(|_| Error::Jpeg("height overflows".into()))?;
    decoder
        .decode_into(out.resize(width, height, 3))
        .map_err(jpeg)
}

fn decode_png(bytes: &[u8], out: &mut RgbImage) -> Result<()> {
    let png = |e: png::DecodingError| Error::Png(e.to_string());
    let mut decoder = png::Decoder::new(Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    decoder.set_ignore_text_chunk(true);
    decoder.set_ignore_iccp_chunk(true);
    let header = decoder.read_header_info().map_err(png)?;
    check_size(u64::from(header.width), u64::from(header.height))?;
    let mut reader = decoder.read_info().map_err(png)?;
    let (color, depth) = reader.output_color_type();
    if depth != png::BitDepth::Eight {
        return Err(Error::Png(format!("decodes to {depth:?} bits, not 8")));
    }
    let channels = color.samples();
    let (width, height) = (reader.info().width, reader.info().height);
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| Error::Png("image too large".into()))?;
    let pixels = width as usize * height as usize;
    out.resize(width, height, 3);
    if out.buffer.len() < size {
        out.buffer.resize(size, 0);
    }
    let buffer = &mut out.buffer;
    reader.next_frame(&mut buffer[..size]).map_err(png)?;
    to_rgb_in_place(buffer, pixels, channels);
    Ok(())
}

/// Rewrites `pixels` pixels of `channels` bytes (1 grey, 2 grey + alpha,
/// 3 RGB, 4 RGBA) as RGB at the start of `buffer`, which holds at least
/// `pixels × max(channels, 3)` bytes.
fn to_rgb_in_place(buffer: &mut [u8], pixels: usize, channels: usize) {
    match channels {
        // Grey grows: walk backwards so nothing is overwritten before it is read.
        1 | 2 => {
            for p in (0..pixels).rev() {
                let v = buffer[p * channels];
                buffer[p * 3..p * 3 + 3].fill(v);
            }
        }
        // RGBA shrinks: walk forwards.
        4 => {
            for p in 0..pixels {
                buffer.copy_within(p * 4..p * 4 + 3, p * 3);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grey_and_alpha_become_rgb_by_the_documented_rule() {
        let mut grey = vec![10, 20, 0, 0, 0, 0];
        to_rgb_in_place(&mut grey, 2, 1);
        assert_eq!(grey, [10, 10, 10, 20, 20, 20]);
        let mut grey_alpha = vec![10, 99, 20, 98, 0, 0];
        to_rgb_in_place(&mut grey_alpha, 2, 2);
        assert_eq!(grey_alpha, [10, 10, 10, 20, 20, 20]);
        let mut rgba = vec![1, 2, 3, 255, 4, 5, 6, 0];
        to_rgb_in_place(&mut rgba, 2, 4);
        assert_eq!(&rgba[..6], [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn sniff_names_what_it_refuses() {
        assert!(matches!(
            Format::sniff(b"GIF89a...."),
            Err(Error::UnsupportedFormat { found: "GIF" })
        ));
        assert!(matches!(
            Format::sniff(b"RIFF\0\0\0\0WEBPVP8 "),
            Err(Error::UnsupportedFormat { found: "WebP" })
        ));
        assert!(matches!(
            Format::sniff(b""),
            Err(Error::UnsupportedFormat { found: "unknown" })
        ));
    }
}
