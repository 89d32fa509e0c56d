//! The scikit-learn digits set shipped in `examples/data/digits.csv.gz`.

use std::io::Read;
use std::path::{Path, PathBuf};

/// 8×8 images of handwritten digits with their labels.
#[derive(Clone, Debug)]
pub struct Digits {
    /// Pixels of every image, row-major, scaled from 0..=16 to 0.0..=1.0.
    pub pixels: Vec<f32>,
    /// The digit each image shows, 0..=9.
    pub labels: Vec<i64>,
}

impl Digits {
    /// Number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no images.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
}

/// Where the copy shipped with the examples lies.
pub fn shipped_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/digits.csv.gz")
}

/// Reads `digits.csv.gz`: rows of 64 pixels (0–16) and a label, no header.
///
/// # Errors
/// An I/O error, or `InvalidData` naming the first bad line.
pub fn read(path: &Path) -> std::io::Result<Digits> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path)?).read_to_string(&mut text)?;
    let bad = |line: usize, what: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} line {}: {what}", path.display(), line + 1),
        )
    };
    let mut digits = Digits {
        pixels: Vec::new(),
        labels: Vec::new(),
    };
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
        let values: Vec<u8> = line
            .split(',')
            .map(|v| v.trim().parse::<u8>())
            .collect::<Result<_, _>>()
            .map_err(|e| bad(n, &e.to_string()))?;
        let (pixels, label) = match values.split_last() {
            Some((&label, pixels)) if pixels.len() == 64 && label <= 9 => (pixels, label),
            _ => return Err(bad(n, "expected 64 pixels and a label 0-9")),
        };
        digits
            .pixels
            .extend(pixels.iter().map(|&p| f32::from(p) / 16.0));
        digits.labels.push(i64::from(label));
    }
    Ok(digits)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_shipped_file_has_1797_digits() {
        let digits = super::read(&super::shipped_path()).unwrap();
        assert_eq!(digits.len(), 1797);
        assert_eq!(digits.pixels.len(), 1797 * 64);
        assert_eq!(&digits.labels[..3], &[0, 1, 2]);
        assert!(digits.pixels.iter().all(|p| (0.0..=1.0).contains(p)));
    }
}
