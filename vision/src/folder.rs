//! [`ImageFolder`]: which files are the images of a data set, and their
//! classes — torchvision's ImageFolder layout, or a `path,label` list.

use std::path::{Path, PathBuf};

use crate::{Error, Result, RgbImage, Transform};

/// File extensions an ImageFolder scan takes (any case).
pub const IMAGE_EXTENSIONS: [&str; 3] = ["jpg", "jpeg", "png"];

/// An image and its class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelledImage {
    /// The file, relative to the folder's root.
    pub path: PathBuf,
    /// The class index into [`ImageFolder::classes`].
    pub label: i64,
}

/// The images of a data set and their class names, in a fixed order.
///
/// ```
/// use zrecord_vision::ImageFolder;
/// # let dir = tempfile::tempdir()?;
/// # for (class, name) in [("cat", "a.png"), ("cat", "b.jpg"), ("dog", "c.png")] {
/// #     std::fs::create_dir_all(dir.path().join(class))?;
/// #     std::fs::write(dir.path().join(class).join(name), b"")?;
/// # }
/// // dir/cat/a.png, dir/cat/b.jpg, dir/dog/c.png
/// let folder = ImageFolder::scan(dir.path())?;
/// assert_eq!(folder.classes, ["cat", "dog"]);
/// assert_eq!(folder.images.iter().map(|i| i.label).collect::<Vec<_>>(), [0, 0, 1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageFolder {
    /// The folder image paths are relative to.
    pub root: PathBuf,
    /// The images, in order: by class, then by path.
    pub images: Vec<LabelledImage>,
    /// Class names; label `i` is `classes[i]`.
    pub classes: Vec<String>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
}

impl ImageFolder {
    /// torchvision's ImageFolder layout: every subfolder of `root` is a
    /// class (sorted by name, hidden ones skipped), and its `.jpg`, `.jpeg`
    /// and `.png` files at any depth are its images, in sorted path order.
    /// Other files are ignored.
    ///
    /// # Errors
    /// [`Error::Io`] naming a folder that cannot be listed;
    /// [`Error::Layout`] when `root` has no class folder or no image, or a
    /// class name is not UTF-8.
    pub fn scan(root: impl AsRef<Path>) -> Result<ImageFolder> {
        let root = root.as_ref();
        let mut classes = Vec::new();
        for entry in std::fs::read_dir(root).map_err(io(root))? {
            let path = entry.map_err(io(root))?.path();
            if path.is_dir() && !is_hidden(&path) {
                let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
                    Error::Layout(format!("{} is not a UTF-8 class name", path.display()))
                })?;
                classes.push(name.to_owned());
            }
        }
        classes.sort();
        let mut images = Vec::new();
        for (label, class) in classes.iter().enumerate() {
            let mut files = Vec::new();
            walk(root, &root.join(class), &mut files)?;
            files.sort();
            images.extend(files.into_iter().map(|path| LabelledImage {
                path,
                label: label as i64,
            }));
        }
        let folder = ImageFolder {
            root: root.to_path_buf(),
            images,
            classes,
        };
        folder.non_empty()
    }

    /// A list of `path,label` lines (or `path<TAB>label`), paths relative to
    /// `root`, in the list's order; a first line `path,label` is a header.
    /// Labels that are all integers up to 65,535 are the class indices (and
    /// the classes are named `0 ..= max`); otherwise they are class names,
    /// numbered in sorted order.
    ///
    /// # Errors
    /// [`Error::Io`] naming an unreadable list; [`Error::Layout`] naming a
    /// line without a separator, or an empty list.
    pub fn from_list(root: impl AsRef<Path>, list: impl AsRef<Path>) -> Result<ImageFolder> {
        let list = list.as_ref();
        let text = std::fs::read_to_string(list).map_err(io(list))?;
        let mut rows = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            let separator = if line.contains('\t') { '\t' } else { ',' };
            let (path, label) = line.rsplit_once(separator).ok_or_else(|| {
                Error::Layout(format!(
                    "{} line {}: expected `path,label`",
                    list.display(),
                    n + 1
                ))
            })?;
            let (path, label) = (path.trim(), label.trim());
            if n == 0 && path == "path" && label == "label" {
                continue;
            }
            rows.push((PathBuf::from(path), label.to_owned()));
        }
        let numeric: Option<Vec<i64>> = rows
            .iter()
            .map(|(_, l)| l.parse::<u16>().ok().map(i64::from))
            .collect();
        let (images, classes) = match numeric {
            Some(labels) => {
                let max = labels.iter().copied().max().unwrap_or(-1);
                let classes = (0..=max).map(|c| c.to_string()).collect();
                let images = rows
                    .into_iter()
                    .zip(labels)
                    .map(|((path, _), label)| LabelledImage { path, label })
                    .collect();
                (images, classes)
            }
            None => {
                let mut classes: Vec<String> = rows.iter().map(|(_, l)| l.clone()).collect();
                classes.sort();
                classes.dedup();
                let images = rows
                    .into_iter()
                    .map(|(path, name)| LabelledImage {
                        label: classes.partition_point(|c| *c < name) as i64,
                        path,
                    })
                    .collect();
                (images, classes)
            }
        };
        let folder = ImageFolder {
            root: root.as_ref().to_path_buf(),
            images,
            classes,
        };
        folder.non_empty()
    }

    fn non_empty(self) -> Result<ImageFolder> {
        if self.images.is_empty() {
            return Err(Error::Layout(format!(
                "no images in {} (expected <class>/<image>.{{jpg,jpeg,png}} or a list)",
                self.root.display()
            )));
        }
        Ok(self)
    }

    /// Reads image `k`'s file.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file.
    pub fn read(&self, k: usize) -> Result<Vec<u8>> {
        let path = self.root.join(
            self.images
                .get(k)
                .map_or(Path::new(""), |i| i.path.as_path()),
        );
        std::fs::read(&path).map_err(io(&path))
    }
}

/// Reads the image file at `path` and checks that it decodes, as `zrecord
/// import images` does before it keeps an image, so a corrupt file is found
/// at import rather than in the middle of a training run. Returns the
/// file's bytes as they are or, with `resize`, the image through that
/// transform as `u8` HWC ([`Transform::hwc`]). `scratch` is the decode
/// buffer, reused from call to call.
///
/// ```
/// use zrecord_vision::{Error, RgbImage, read_checked};
/// # let dir = tempfile::tempdir()?;
/// let png = zrecord_vision::testing::png_rgb(8, 6, 1);
/// std::fs::write(dir.path().join("good.png"), &png)?;
/// std::fs::write(dir.path().join("cut.png"), &png[..png.len() / 2])?;
///
/// let mut scratch = RgbImage::default();
/// assert_eq!(read_checked(&dir.path().join("good.png"), None, &mut scratch)?, png);
/// let cut = read_checked(&dir.path().join("cut.png"), None, &mut scratch);
/// assert!(matches!(cut, Err(Error::Png(_))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Io`] naming a file that cannot be read; for one that does not
/// decode, the errors of [`decode`](crate::decode) (or of
/// [`Transform::apply_u8`] with `resize`).
pub fn read_checked(
    path: &Path,
    resize: Option<&Transform>,
    scratch: &mut RgbImage,
) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    match resize {
        Some(transform) => {
            let mut out = vec![0u8; transform.image_len()];
            transform.apply_u8(&bytes, (0, 0, 0), &mut out)?;
            Ok(out)
        }
        None => {
            crate::decode(&bytes, scratch)?;
            Ok(bytes)
        }
    }
}

/// Collects the image files under `folder` (paths relative to `root`),
/// skipping hidden entries.
fn walk(root: &Path, folder: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(folder).map_err(io(folder))? {
        let path = entry.map_err(io(folder))?.path();
        if is_hidden(&path) {
            continue;
        }
        if path.is_dir() {
            walk(root, &path, out)?;
        } else if path.extension().is_some_and(|e| {
            IMAGE_EXTENSIONS
                .iter()
                .any(|x| e.to_string_lossy().eq_ignore_ascii_case(x))
        }) {
            out.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
        }
    }
    Ok(())
}
