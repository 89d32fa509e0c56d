//! Image transforms for zrecord's loader workers: decode JPEG and PNG,
//! `RandomResizedCrop`, resize + centre crop, horizontal flip, normalise —
//! written straight into a batch buffer, `f32` CHW or `u8` HWC.
//!
//! Store encoded images in a ragged `u8` stream (`zrecord import images`
//! writes one from an ImageFolder tree), and run a [`Transform`] on the
//! loader's worker threads; `zrecord-burn` and `zrecord-candle` (feature
//! `vision`) turn its output into tensors. Random choices are a pure function
//! of `(seed, step, position in batch)`, so a resumed run reproduces every
//! crop.
//!
//! ```
//! use zrecord_vision::{BatchKey, IMAGENET_MEAN, IMAGENET_STD, Transform};
//! # let encoded = zrecord_vision::testing::png_rgb(500, 375, 3);
//! let train = Transform::random_resized_crop(224).flip(0.5).normalize(IMAGENET_MEAN, IMAGENET_STD);
//! let eval = Transform::center_crop(256, 224).normalize(IMAGENET_MEAN, IMAGENET_STD);
//!
//! let mut batch = vec![0f32; 2 * train.image_len()]; // (2, 3, 224, 224)
//! let blanked = train.batch_f32([&encoded[..], &encoded[..]], BatchKey { seed: 1, step: 0, first_position: 0, records: &[] }, &mut batch)?;
//! assert!(blanked.is_empty());
//! // Two positions, two different crops of the same photo.
//! assert_ne!(batch[..train.image_len()], batch[train.image_len()..]);
//!
//! let mut one = vec![0f32; eval.image_len()];
//! eval.apply_f32(&encoded, (0, 0, 0), &mut one)?;
//! # Ok::<(), zrecord_vision::Error>(())
//! ```
//!
//! [`ImageFolder`] lists a data set's images and classes: torchvision's
//! ImageFolder layout (`root/<class>/**/<image>`) or a `path,label` list;
//! [`read_checked`] reads one and checks that it decodes, so a corrupt file
//! is left out at import rather than met in the middle of a run.
//!
//! # Decoding
//!
//! [`decode`] reads JPEG (zune-jpeg: baseline and progressive, any
//! subsampling, grayscale, CMYK/YCCK) and PNG (the `png` crate: every colour
//! type and bit depth) into 8-bit RGB by one rule — Pillow's
//! `convert("RGB")`: grey copied to three channels, alpha dropped, 16-bit
//! samples keep their high byte. JPEGs decode at full size (no DCT-domain
//! downscaling). Anything else is [`Error::UnsupportedFormat`] naming the
//! format.
//!
//! # Resizing
//!
//! Crops are resized in one step from the source region with an
//! antialiased bilinear (triangle) filter (`fast_image_resize`, SIMD), as
//! Pillow and torchvision's `antialias=True` do.

mod decode;
mod error;
mod folder;
mod rng;
pub mod testing;
mod transform;

pub use decode::{Format, MAX_PIXELS, RgbImage, decode};
pub use error::{Error, Result};
pub use folder::{IMAGE_EXTENSIONS, ImageFolder, LabelledImage, read_checked};
pub use transform::{BatchKey, Crop, IMAGENET_MEAN, IMAGENET_STD, OnCorrupt, Transform};
