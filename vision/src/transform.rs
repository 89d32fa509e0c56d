//! [`Transform`]: decode → crop and resize → flip → normalise, one image or
//! a batch at a time, written straight into the caller's buffer.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use fast_image_resize::images::{TypedImage, TypedImageRef};
use fast_image_resize::pixels::U8x3;
use fast_image_resize::{FilterType, ResizeAlg, ResizeOptions, Resizer};

use crate::rng::ImageRng;
use crate::{Error, Result, RgbImage, decode};

/// ImageNet's per-channel mean (RGB, on the `[0, 1]` scale), as torchvision uses it.
pub const IMAGENET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
/// ImageNet's per-channel standard deviation (RGB, on the `[0, 1]` scale).
pub const IMAGENET_STD: [f32; 3] = [0.229, 0.224, 0.225];

/// Which part of the image becomes the output.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Crop {
    /// torchvision's `RandomResizedCrop`: a region of `scale` times the
    /// image's area and an aspect ratio (width / height) drawn
    /// log-uniformly from `ratio`, at a random place; after 10 draws that do
    /// not fit, the largest centred region with a ratio in range.
    RandomResized {
        /// Fraction of the image's area, `(min, max)`, within `(0, 1]`.
        scale: (f64, f64),
        /// Aspect ratio width / height, `(min, max)`.
        ratio: (f64, f64),
    },
    /// torchvision's `Resize(resize)` then `CenterCrop`: the shorter side
    /// scaled to `resize`, then the centre of the output's size — done as
    /// one resize of the matching source region.
    Center {
        /// The shorter side's length after scaling, at least the output's
        /// larger side.
        resize: u32,
    },
}

/// What a batch does with an image that fails to decode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnCorrupt {
    /// The batch fails with [`Error::Batch`] naming step, position and record.
    #[default]
    Fail,
    /// The image's slot is written as zeros (the mean, after normalising),
    /// its position is reported and [`Transform::skipped`] counts it.
    Blank,
}

/// An image pipeline: decode (JPEG or PNG, see [`decode`]) → crop and
/// resize (antialiased bilinear, as Pillow and torchvision's `antialias=True`)
/// → horizontal flip → normalise, into `f32` CHW or `u8` HWC.
///
/// Random choices (crop, flip) are a pure function of `(seed, step,
/// position in the global batch)`: the same three numbers give the same
/// pixels on any thread, in any order, after any resume, on any rank of any
/// world size.
///
/// Each thread keeps its decode and resize buffers, so a worker that
/// transforms many images allocates only when an image is larger than any
/// before (the JPEG and PNG decoders keep small allocations of their own).
///
/// Clones share the [`skipped`](Self::skipped) counter.
///
/// ```
/// use zrecord_vision::{BatchKey, IMAGENET_MEAN, IMAGENET_STD, Transform};
/// # let photos = [zrecord_vision::testing::png_rgb(64, 48, 1), zrecord_vision::testing::png_rgb(40, 40, 2)];
/// let train = Transform::random_resized_crop(32).flip(0.5).normalize(IMAGENET_MEAN, IMAGENET_STD);
/// let mut batch = vec![0f32; photos.len() * train.image_len()]; // (B, 3, 32, 32)
/// let key = BatchKey { seed: 7, step: 0, first_position: 0, records: &[] };
/// train.batch_f32(photos.iter().map(|p| p.as_slice()), key, &mut batch)?;
///
/// // The same key gives the same crops.
/// let mut again = vec![0f32; batch.len()];
/// train.batch_f32(photos.iter().map(|p| p.as_slice()), key, &mut again)?;
/// assert_eq!(batch, again);
/// # Ok::<(), zrecord_vision::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Transform {
    crop: Crop,
    height: u32,
    width: u32,
    flip: f64,
    mean: [f32; 3],
    std: [f32; 3],
    on_corrupt: OnCorrupt,
    skipped: Arc<AtomicU64>,
}

/// Where a batch sits in the run: the key of its random choices, and the
/// record indices of its images (for error messages; may be empty).
#[derive(Clone, Copy, Debug)]
pub struct BatchKey<'a> {
    /// The run's seed.
    pub seed: u64,
    /// The batch's step.
    pub step: u64,
    /// The position of its first image in the step's global batch: a rank's
    /// offset (`zrecord_loader::Batch::first_position`), 0 for one process.
    /// Image `k` draws its choices at position `first_position + k`, so the
    /// ranks of any world size together make the crops one process would.
    pub first_position: u64,
    /// Record index of each position, or empty.
    pub records: &'a [u64],
}

/// One thread's reusable buffers.
#[derive(Default)]
struct Scratch {
    decoded: RgbImage,
    resized: Vec<u8>,
    resizer: Resizer,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Transform {
    fn new(crop: Crop, height: u32, width: u32) -> Transform {
        Transform {
            crop,
            height,
            width,
            flip: 0.0,
            mean: [0.0; 3],
            std: [1.0; 3],
            on_corrupt: OnCorrupt::Fail,
            skipped: Arc::default(),
        }
    }

    /// A `size × size` random resized crop, torchvision's defaults: scale
    /// `0.08..1`, ratio `3/4..4/3`; no flip, values in `[0, 1]`.
    pub fn random_resized_crop(size: u32) -> Transform {
        Transform::new(
            Crop::RandomResized {
                scale: (0.08, 1.0),
                ratio: (3.0 / 4.0, 4.0 / 3.0),
            },
            size,
            size,
        )
    }

    /// The evaluation transform: the shorter side scaled to `resize`, then
    /// the centre `size × size` (ImageNet's habit: `center_crop(256, 224)`).
    pub fn center_crop(resize: u32, size: u32) -> Transform {
        Transform::new(Crop::Center { resize }, size, size)
    }

    /// A `height × width` output instead of a square one.
    pub fn output_size(mut self, height: u32, width: u32) -> Transform {
        (self.height, self.width) = (height, width);
        self
    }

    /// The random crop's area fraction `(min, max)`; no effect on a centre crop.
    pub fn scale(mut self, min: f64, max: f64) -> Transform {
        if let Crop::RandomResized { scale, .. } = &mut self.crop {
            *scale = (min, max);
        }
        self
    }

    /// The random crop's aspect ratio `(min, max)`; no effect on a centre crop.
    pub fn ratio(mut self, min: f64, max: f64) -> Transform {
        if let Crop::RandomResized { ratio, .. } = &mut self.crop {
            *ratio = (min, max);
        }
        self
    }

    /// Flips each image left-right with probability `p` (0 by default).
    pub fn flip(mut self, p: f64) -> Transform {
        self.flip = p;
        self
    }

    /// `f32` output becomes `(x / 255 - mean) / std` per channel (default
    /// mean 0, std 1: `x / 255`). `u8` output is never normalised.
    pub fn normalize(mut self, mean: [f32; 3], std: [f32; 3]) -> Transform {
        (self.mean, self.std) = (mean, std);
        self
    }

    /// What a batch does with an image that fails to decode (default [`OnCorrupt::Fail`]).
    pub fn on_corrupt(mut self, policy: OnCorrupt) -> Transform {
        self.on_corrupt = policy;
        self
    }

    /// The crop.
    pub fn crop(&self) -> Crop {
        self.crop
    }

    /// Images blanked under [`OnCorrupt::Blank`] so far, by this transform
    /// and its clones.
    pub fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// `[3, height, width]`: one image of [`f32` output](Self::apply_f32).
    pub fn chw(&self) -> [usize; 3] {
        [3, self.height as usize, self.width as usize]
    }

    /// `[height, width, 3]`: one image of [`u8` output](Self::apply_u8).
    pub fn hwc(&self) -> [usize; 3] {
        [self.height as usize, self.width as usize, 3]
    }

    /// Elements of one output image: `3 × height × width`.
    pub fn image_len(&self) -> usize {
        3 * self.height as usize * self.width as usize
    }

    /// Checks the settings.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero output side, a scale outside
    /// `(0, 1]` or reversed, a ratio not positive or reversed, a flip
    /// probability outside `[0, 1]`, a zero or non-finite std, or a centre
    /// crop whose `resize` is smaller than the output.
    pub fn check(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidArgument(what));
        if self.height == 0 || self.width == 0 {
            return bad(format!("output {}x{}", self.height, self.width));
        }
        match self.crop {
            Crop::RandomResized { scale, ratio } => {
                if !(scale.0 > 0.0 && scale.0 <= scale.1 && scale.1 <= 1.0) {
                    return bad(format!("scale {scale:?} is not within (0, 1] in order"));
                }
                if !(ratio.0 > 0.0 && ratio.0 <= ratio.1 && ratio.1.is_finite()) {
                    return bad(format!("ratio {ratio:?} is not positive in order"));
                }
            }
            Crop::Center { resize } => {
                if resize < self.height.max(self.width) {
                    return bad(format!(
                        "resize {resize} is smaller than the {}x{} crop",
                        self.height, self.width
                    ));
                }
            }
        }
        if !(0.0..=1.0).contains(&self.flip) {
            return bad(format!("flip probability {}", self.flip));
        }
        if self.std.iter().any(|s| *s == 0.0 || !s.is_finite()) {
            return bad(format!("std {:?}", self.std));
        }
        Ok(())
    }

    /// Transforms one encoded image into `out`, `f32` CHW (`3 × height ×
    /// width` elements), with the random choices of `(seed, step, position)`.
    ///
    /// # Errors
    /// As [`check`](Self::check) and [`decode`]; [`Error::OutputSize`].
    pub fn apply_f32(
        &self,
        encoded: &[u8],
        (seed, step, position): (u64, u64, usize),
        out: &mut [f32],
    ) -> Result<()> {
        self.check()?;
        self.output_fits(out.len(), 1)?;
        let lut = self.lut();
        self.render(
            encoded,
            ImageRng::new(seed, step, position as u64),
            |rgb, flip| {
                self.write_chw(rgb, flip, &lut, out);
            },
        )
    }

    /// Transforms one encoded image into `out`, `u8` HWC (`height × width ×
    /// 3` bytes, not normalised), with the random choices of `(seed, step,
    /// position)`.
    ///
    /// # Errors
    /// As [`apply_f32`](Self::apply_f32).
    pub fn apply_u8(
        &self,
        encoded: &[u8],
        (seed, step, position): (u64, u64, usize),
        out: &mut [u8],
    ) -> Result<()> {
        self.check()?;
        self.output_fits(out.len(), 1)?;
        self.render(
            encoded,
            ImageRng::new(seed, step, position as u64),
            |rgb, flip| {
                self.write_hwc(rgb, flip, out);
            },
        )
    }

    /// Transforms a batch of encoded images into `out`, `f32` `(B, 3,
    /// height, width)`: image `k` with the random choices of `(key.seed,
    /// key.step, k)`. Returns the positions blanked under
    /// [`OnCorrupt::Blank`] (empty otherwise).
    ///
    /// # Errors
    /// [`Error::OutputSize`] unless `out` holds exactly `B` images;
    /// [`Error::Batch`] naming the first image that fails (under
    /// [`OnCorrupt::Fail`]); as [`check`](Self::check).
    pub fn batch_f32<'a>(
        &self,
        images: impl IntoIterator<Item = &'a [u8]>,
        key: BatchKey<'_>,
        out: &mut [f32],
    ) -> Result<Vec<usize>> {
        let lut = self.lut();
        self.batch(images, key, out, 0.0, |rgb, flip, slot| {
            self.write_chw(rgb, flip, &lut, slot);
        })
    }

    /// Transforms a batch of encoded images into `out`, `u8` `(B, height,
    /// width, 3)`, as [`batch_f32`](Self::batch_f32) does.
    ///
    /// # Errors
    /// As [`batch_f32`](Self::batch_f32).
    pub fn batch_u8<'a>(
        &self,
        images: impl IntoIterator<Item = &'a [u8]>,
        key: BatchKey<'_>,
        out: &mut [u8],
    ) -> Result<Vec<usize>> {
        self.batch(images, key, out, 0, |rgb, flip, slot| {
            self.write_hwc(rgb, flip, slot);
        })
    }

    fn batch<'a, T: Copy>(
        &self,
        images: impl IntoIterator<Item = &'a [u8]>,
        key: BatchKey<'_>,
        out: &mut [T],
        blank: T,
        write: impl Fn(&[u8], bool, &mut [T]),
    ) -> Result<Vec<usize>> {
        self.check()?;
        let len = self.image_len();
        let mut blanked = Vec::new();
        let mut slots = out.chunks_exact_mut(len);
        let mut count = 0;
        for (position, encoded) in images.into_iter().enumerate() {
            count += 1;
            let Some(slot) = slots.next() else { continue };
            let rng = ImageRng::new(key.seed, key.step, key.first_position + position as u64);
            let result = self.render(encoded, rng, |rgb, flip| write(rgb, flip, slot));
            if let Err(source) = result {
                let invalid = matches!(source, Error::InvalidArgument(_));
                if self.on_corrupt == OnCorrupt::Fail || invalid {
                    return Err(Error::Batch {
                        step: key.step,
                        position,
                        record: key.records.get(position).copied(),
                        source: Box::new(source),
                    });
                }
                slot.fill(blank);
                blanked.push(position);
            }
        }
        self.output_fits(out.len(), count)?;
        self.skipped
            .fetch_add(blanked.len() as u64, Ordering::Relaxed);
        Ok(blanked)
    }

    fn output_fits(&self, got: usize, images: usize) -> Result<()> {
        let expected = images * self.image_len();
        if got != expected {
            return Err(Error::OutputSize { expected, got });
        }
        Ok(())
    }

    /// Decodes, crops and resizes one image in this thread's buffers, then
    /// hands `write` the `height × width × 3` RGB result and the flip.
    fn render(
        &self,
        encoded: &[u8],
        mut rng: ImageRng,
        write: impl FnOnce(&[u8], bool),
    ) -> Result<()> {
        SCRATCH.with_borrow_mut(|scratch| {
            let Scratch {
                decoded,
                resized,
                resizer,
            } = scratch;
            decode(encoded, decoded)?;
            let (left, top, width, height) = self.region(decoded.width, decoded.height, &mut rng);
            let flip = self.flip > 0.0 && rng.unit() < self.flip;
            // Typed RGB views: the untyped `resize` would compile the
            // resizer for every pixel type: four times this crate's build.
            let src =
                TypedImageRef::<U8x3>::from_buffer(decoded.width, decoded.height, decoded.pixels())
                    .map_err(|e| Error::InvalidArgument(e.to_string()))?;
            let len = self.image_len();
            if resized.len() < len {
                resized.resize(len, 0);
            }
            let mut dst =
                TypedImage::<U8x3>::from_buffer(self.width, self.height, &mut resized[..len])
                    .map_err(|e| Error::InvalidArgument(e.to_string()))?;
            let options = ResizeOptions::new()
                .resize_alg(ResizeAlg::Convolution(FilterType::Bilinear))
                .crop(left, top, width, height);
            resizer
                .resize_typed(&src, &mut dst, &options)
                .map_err(|e| Error::InvalidArgument(e.to_string()))?;
            write(&resized[..len], flip);
            Ok(())
        })
    }

    /// The source region `(left, top, width, height)` of an image of
    /// `width × height` pixels.
    fn region(&self, width: u32, height: u32, rng: &mut ImageRng) -> (f64, f64, f64, f64) {
        let (w, h) = (f64::from(width), f64::from(height));
        match self.crop {
            Crop::RandomResized { scale, ratio } => {
                let (cw, ch, left, top) = random_resized(width, height, scale, ratio, rng);
                (
                    f64::from(left),
                    f64::from(top),
                    f64::from(cw),
                    f64::from(ch),
                )
            }
            Crop::Center { resize } => {
                let factor = f64::from(resize) / w.min(h);
                let cw = (f64::from(self.width) / factor).min(w);
                let ch = (f64::from(self.height) / factor).min(h);
                ((w - cw) / 2.0, (h - ch) / 2.0, cw, ch)
            }
        }
    }

    /// Per channel, the `f32` value of each byte.
    fn lut(&self) -> Box<[[f32; 256]; 3]> {
        let mut lut = Box::new([[0f32; 256]; 3]);
        for (c, table) in lut.iter_mut().enumerate() {
            for (v, out) in table.iter_mut().enumerate() {
                *out = (v as f32 / 255.0 - self.mean[c]) / self.std[c];
            }
        }
        lut
    }

    /// `rgb` (`height × width × 3`) into `out` as normalised CHW planes.
    fn write_chw(&self, rgb: &[u8], flip: bool, lut: &[[f32; 256]; 3], out: &mut [f32]) {
        let (w, plane) = (
            self.width as usize,
            self.width as usize * self.height as usize,
        );
        let (r, rest) = out.split_at_mut(plane);
        let (g, b) = rest.split_at_mut(plane);
        for (y, row) in rgb.chunks_exact(w * 3).enumerate() {
            let range = y * w..(y + 1) * w;
            let (r, g, b) = (&mut r[range.clone()], &mut g[range.clone()], &mut b[range]);
            if flip {
                for (x, px) in row.chunks_exact(3).rev().enumerate() {
                    r[x] = lut[0][px[0] as usize];
                    g[x] = lut[1][px[1] as usize];
                    b[x] = lut[2][px[2] as usize];
                }
            } else {
                for (x, px) in row.chunks_exact(3).enumerate() {
                    r[x] = lut[0][px[0] as usize];
                    g[x] = lut[1][px[1] as usize];
                    b[x] = lut[2][px[2] as usize];
                }
            }
        }
    }

    /// `rgb` (`height × width × 3`) into `out`, mirrored if `flip`.
    fn write_hwc(&self, rgb: &[u8], flip: bool, out: &mut [u8]) {
        if !flip {
            out.copy_from_slice(rgb);
            return;
        }
        let w = self.width as usize * 3;
        for (src, dst) in rgb.chunks_exact(w).zip(out.chunks_exact_mut(w)) {
            for (s, d) in src.chunks_exact(3).rev().zip(dst.chunks_exact_mut(3)) {
                d.copy_from_slice(s);
            }
        }
    }
}

/// torchvision's `RandomResizedCrop.get_params`: `(width, height, left, top)`.
fn random_resized(
    width: u32,
    height: u32,
    scale: (f64, f64),
    ratio: (f64, f64),
    rng: &mut ImageRng,
) -> (u32, u32, u32, u32) {
    let (w, h) = (f64::from(width), f64::from(height));
    let area = w * h;
    let log_ratio = (ratio.0.ln(), ratio.1.ln());
    for _ in 0..10 {
        let target = area * rng.uniform(scale.0, scale.1);
        let aspect = rng.uniform(log_ratio.0, log_ratio.1).exp();
        let cw = (target * aspect).sqrt().round();
        let ch = (target / aspect).sqrt().round();
        if cw > 0.0 && cw <= w && ch > 0.0 && ch <= h {
            let (cw, ch) = (cw as u32, ch as u32);
            let top = rng.below_or_eq(height - ch);
            let left = rng.below_or_eq(width - cw);
            return (cw, ch, left, top);
        }
    }
    // Fallback: the whole image, cut to the nearest allowed ratio, centred.
    let in_ratio = w / h;
    let (cw, ch) = if in_ratio < ratio.0 {
        (width, ((w / ratio.0).round() as u32).clamp(1, height))
    } else if in_ratio > ratio.1 {
        (((h * ratio.1).round() as u32).clamp(1, width), height)
    } else {
        (width, height)
    };
    (cw, ch, (width - cw) / 2, (height - ch) / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_crops_stay_inside_and_cover_the_scale_range() {
        let (mut smallest, mut largest) = (f64::MAX, 0f64);
        for position in 0..2000 {
            let mut rng = ImageRng::new(3, 1, position);
            let (cw, ch, left, top) =
                random_resized(500, 375, (0.08, 1.0), (0.75, 4.0 / 3.0), &mut rng);
            assert!(cw >= 1 && ch >= 1 && left + cw <= 500 && top + ch <= 375);
            let fraction = f64::from(cw * ch) / (500.0 * 375.0);
            smallest = smallest.min(fraction);
            largest = largest.max(fraction);
        }
        assert!(smallest < 0.1 && largest > 0.9, "{smallest} {largest}");
    }

    #[test]
    fn impossible_ratios_fall_back_to_a_centred_crop() {
        let mut rng = ImageRng::new(0, 0, 0);
        // A 1000x10 strip cannot hold a 1:1 crop of 90 % of its area.
        assert_eq!(
            random_resized(1000, 10, (0.9, 1.0), (1.0, 1.0), &mut rng),
            (10, 10, 495, 0)
        );
    }
}
