//! Image folders for the image examples: Fashion-MNIST's IDX files written
//! out as PNG files in the ImageFolder layout, and an ImageFolder imported
//! into an encoded-image store and a label store (what `zrecord import
//! images` writes, without its decode check).

use std::error::Error;
use std::path::Path;

use zrecord::{Codec, DenseStore, RaggedStore};
use zrecord_burn::vision::ImageFolder;

use crate::idx;

/// Fashion-MNIST's class names, label order.
pub const FASHION_CLASSES: [&str; 10] = [
    "0-tshirt",
    "1-trouser",
    "2-pullover",
    "3-dress",
    "4-coat",
    "5-sandal",
    "6-shirt",
    "7-sneaker",
    "8-bag",
    "9-boot",
];

/// Writes the images of IDX split `split` (e.g. `t10k`) in `idx_dir` as
/// grey PNG files: images `0..train` to `out/train/<class>/<n>.png` and the
/// next `test` to `out/test/<class>/<n>.png`.
///
/// # Errors
/// A missing or malformed IDX file, too few images, or a failed write.
pub fn write_fashion_pngs(
    idx_dir: &Path,
    split: &str,
    out: &Path,
    train: usize,
    test: usize,
) -> Result<(), Box<dyn Error>> {
    let find = |name: String| {
        idx::find(idx_dir, &name).ok_or_else(|| format!("{} has no {name}[.gz]", idx_dir.display()))
    };
    let images = idx::read_u8(&find(format!("{split}-images-idx3-ubyte"))?)?;
    let labels = idx::read_u8(&find(format!("{split}-labels-idx1-ubyte"))?)?;
    let [n, h, w] = images.dims[..] else {
        return Err(format!("images shaped {:?}, not (N, H, W)", images.dims).into());
    };
    if n < train + test || labels.data.len() != n {
        return Err(format!(
            "{n} images, {} labels: fewer than {}",
            labels.data.len(),
            train + test
        )
        .into());
    }
    for (k, (pixels, &label)) in images
        .data
        .chunks_exact(h * w)
        .zip(&labels.data)
        .take(train + test)
        .enumerate()
    {
        let part = if k < train { "train" } else { "test" };
        let class = FASHION_CLASSES
            .get(usize::from(label))
            .ok_or_else(|| format!("label {label} of image {k} is not a Fashion-MNIST class"))?;
        let dir = out.join(part).join(class);
        std::fs::create_dir_all(&dir)?;
        let mut png = Vec::new();
        let mut encoder = png::Encoder::new(&mut png, w as u32, h as u32);
        encoder.set_color(png::ColorType::Grayscale);
        let mut writer = encoder.write_header()?;
        writer.write_image_data(pixels)?;
        writer.finish()?;
        std::fs::write(dir.join(format!("{k:05}.png")), png)?;
    }
    Ok(())
}

/// Imports the images of `folder` as they are (encoded) into a ragged `u8`
/// store `stores/images` and their labels into `stores/labels`.
///
/// # Errors
/// A file that cannot be read, or a store that cannot be written.
pub fn import(
    folder: &ImageFolder,
    stores: &Path,
) -> Result<(RaggedStore<u8>, DenseStore<i64>), Box<dyn Error>> {
    let _ = std::fs::remove_dir_all(stores);
    let images = RaggedStore::<u8>::create(stores.join("images"), Codec::Raw)?;
    let labels = DenseStore::<i64>::create(stores.join("labels"), &[], Codec::Raw)?;
    for chunk in (0..folder.images.len()).collect::<Vec<_>>().chunks(1024) {
        let files = chunk
            .iter()
            .map(|&k| folder.read(k))
            .collect::<Result<Vec<_>, _>>()?;
        images.append_slices(&files)?;
    }
    labels.append(&folder.images.iter().map(|i| i.label).collect::<Vec<_>>())?;
    Ok((images, labels))
}
