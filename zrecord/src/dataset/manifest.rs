//! [`Manifest`]: the `dataset.zr` file — a dataset's streams and shards, as
//! checksummed text (see FORMAT.md).

use std::fmt::Write as _;
use std::path::Path;

use crate::{DType, Error, Result, Schema};

/// The manifest's file name in a dataset folder.
pub const MANIFEST_FILE: &str = "dataset.zr";
/// The manifest format this crate writes and reads.
pub const MANIFEST_VERSION: u32 = 1;
const MAGIC: &str = "zrecord-dataset";
/// A stream's path when the shard folder is itself its store.
const SHARD_ITSELF: &str = ".";
/// The stream name of shards that are single stores.
const WHOLE_SHARD_STREAM: &str = "records";

/// One stream of a dataset: its name, where its store lies in each shard
/// folder (`"."` for the shard folder itself) and what its records are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestStream {
    /// The stream's name (`records` for shards that are single stores).
    pub name: String,
    /// The store's folder inside each shard, or `"."`.
    pub path: String,
    /// Kind, dtype and item shape; the same in every shard.
    pub schema: Schema,
}

impl ManifestStream {
    /// The one stream of a shard folder that is itself a store: named
    /// `records`, its path `"."`.
    pub fn whole_shard(schema: Schema) -> Self {
        ManifestStream {
            name: WHOLE_SHARD_STREAM.into(),
            path: SHARD_ITSELF.into(),
            schema,
        }
    }

    /// Where this stream's store of shard `folder` lies, relative to the
    /// dataset folder (`/`-separated).
    pub fn store_path(&self, folder: &str) -> String {
        if self.path == SHARD_ITSELF {
            folder.to_string()
        } else {
            format!("{folder}/{}", self.path)
        }
    }
}

/// One shard: its folder (relative to the dataset folder) and its records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestShard {
    /// The shard's folder name.
    pub folder: String,
    /// Records in each of its streams.
    pub records: u64,
}

/// What one shard folder holds, as [`Manifest::join`] checks it: its
/// streams with their record counts, and its `classes.txt`.
pub type ShardContents = (Vec<(ManifestStream, u64)>, Option<Vec<u8>>);

/// What `dataset.zr` says: the streams every shard holds and the shards in
/// index order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// The streams, in the order they are listed.
    pub streams: Vec<ManifestStream>,
    /// The shards, in index order.
    pub shards: Vec<ManifestShard>,
}

impl Manifest {
    /// Records in all shards.
    pub fn len(&self) -> u64 {
        self.shards.iter().map(|s| s.records).sum()
    }

    /// Whether the shards hold no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks the shard folders `folders` of the dataset at `location` and
    /// returns their manifest, shards in name order: `contents` gives one
    /// folder's streams with their record counts (in name order) and its
    /// `classes.txt`, if any. Every shard must hold the same streams, each
    /// the same number of records, and the same `classes.txt`; with folders
    /// named by [`shard_folder`](super::shard_folder), all `N` of `N` must
    /// be there. How [`Dataset::join`](super::Dataset::join) and a join in
    /// other storage check what they found.
    ///
    /// # Errors
    /// [`Error::Dataset`] naming the shard that is missing or differs;
    /// `contents`' errors.
    pub fn join(
        location: &Path,
        mut folders: Vec<String>,
        mut contents: impl FnMut(&str) -> Result<ShardContents>,
    ) -> Result<Manifest> {
        let bad = |reason: String| Error::Dataset {
            path: location.into(),
            reason,
        };
        folders.sort();
        if folders.is_empty() {
            return Err(bad("it holds no shard folders".into()));
        }
        check_numbered(&folders).map_err(bad)?;

        let mut streams: Option<Vec<ManifestStream>> = None;
        let mut classes: Option<(&str, Option<Vec<u8>>)> = None;
        let mut shards = Vec::with_capacity(folders.len());
        for folder in &folders {
            let (found, these) = contents(folder)?;
            if found.is_empty() {
                return Err(bad(format!("shard {folder} holds no store")));
            }
            let records = found[0].1;
            if let Some((stream, len)) = found.iter().find(|(_, len)| *len != records) {
                return Err(bad(format!(
                    "in shard {folder}, stream {} holds {len} records and another {records}",
                    stream.name
                )));
            }
            let found: Vec<ManifestStream> = found.into_iter().map(|(s, _)| s).collect();
            match &streams {
                None => streams = Some(found),
                Some(first) if *first != found => {
                    return Err(bad(format!(
                        "shard {folder} holds {}, but shard {} holds {}",
                        describe(&found),
                        folders[0],
                        describe(first)
                    )));
                }
                Some(_) => {}
            }
            match &classes {
                None => classes = Some((folder, these)),
                Some((first, theirs)) if *theirs != these => {
                    return Err(bad(format!(
                        "shard {folder}'s classes.txt differs from shard {first}'s: \
                         its labels would mean other classes"
                    )));
                }
                Some(_) => {}
            }
            shards.push(ManifestShard {
                folder: folder.clone(),
                records,
            });
        }
        Ok(Manifest {
            streams: streams.unwrap_or_default(),
            shards,
        })
    }

    /// The manifest as the bytes of `dataset.zr`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a name the format cannot hold (empty,
    /// or with whitespace or control characters).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut text = format!("{MAGIC} {MANIFEST_VERSION}\n");
        for stream in &self.streams {
            check_name(&stream.name)?;
            check_name(&stream.path)?;
            let _ = write!(text, "stream {} {} ", stream.name, stream.path);
            let _ = match &stream.schema {
                Schema::Dense { dtype, item_shape } => {
                    let shape: Vec<String> = item_shape.iter().map(usize::to_string).collect();
                    let shape = if shape.is_empty() {
                        "scalar".to_string()
                    } else {
                        shape.join("x")
                    };
                    writeln!(text, "dense {dtype} {shape}")
                }
                Schema::Ragged { dtype } => writeln!(text, "ragged {dtype}"),
            };
        }
        for shard in &self.shards {
            check_name(&shard.folder)?;
            let _ = writeln!(text, "shard {} {}", shard.folder, shard.records);
        }
        let crc = crc32c::crc32c(text.as_bytes());
        let _ = writeln!(text, "crc32c {crc:08x}");
        Ok(text.into_bytes())
    }

    /// Reads the bytes of `dataset.zr`; `path` names it in errors.
    ///
    /// # Errors
    /// [`Error::Dataset`] naming the line that is wrong, a checksum that
    /// does not match, or a version this crate does not read.
    pub fn decode(path: &Path, bytes: &[u8]) -> Result<Manifest> {
        let bad = |reason: String| Error::Dataset {
            path: path.into(),
            reason: format!("{MANIFEST_FILE}: {reason}"),
        };
        let text = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8 text".into()))?;
        let body_end = text
            .trim_end_matches('\n')
            .rfind('\n')
            .map(|i| i + 1)
            .ok_or_else(|| bad("too short".into()))?;
        let (body, last) = text.split_at(body_end);
        let stored = last
            .trim_end()
            .strip_prefix("crc32c ")
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .ok_or_else(|| bad("the last line is not `crc32c <hex>`".into()))?;
        let crc = crc32c::crc32c(body.as_bytes());
        if crc != stored {
            return Err(bad(format!(
                "checksum {crc:08x} does not match the stored {stored:08x}: the file is damaged"
            )));
        }
        let mut lines = body.lines().enumerate();
        let header = lines.next().map(|(_, l)| l).unwrap_or_default();
        match header.split_once(' ') {
            Some((MAGIC, version)) if version == MANIFEST_VERSION.to_string() => {}
            Some((MAGIC, version)) => {
                return Err(bad(format!(
                    "format version {version}; this zrecord reads version {MANIFEST_VERSION}"
                )));
            }
            _ => return Err(bad(format!("it does not start with `{MAGIC}`"))),
        }
        let mut manifest = Manifest {
            streams: Vec::new(),
            shards: Vec::new(),
        };
        for (n, line) in lines {
            let at = |reason: &str| bad(format!("line {}: {reason}: {line:?}", n + 1));
            let words: Vec<&str> = line.split(' ').collect();
            match words[..] {
                ["stream", name, path, kind, dtype, ref rest @ ..] => {
                    let dtype: DType = dtype.parse().map_err(|_| at("unknown dtype"))?;
                    let schema = match (kind, rest) {
                        ("dense", [shape]) => Schema::Dense {
                            dtype,
                            item_shape: parse_shape(shape).ok_or_else(|| at("bad item shape"))?,
                        },
                        ("ragged", []) => Schema::Ragged { dtype },
                        _ => return Err(at("not `dense DTYPE SHAPE` or `ragged DTYPE`")),
                    };
                    manifest.streams.push(ManifestStream {
                        name: name.into(),
                        path: path.into(),
                        schema,
                    });
                }
                ["shard", folder, records] => manifest.shards.push(ManifestShard {
                    folder: folder.into(),
                    records: records.parse().map_err(|_| at("bad record count"))?,
                }),
                _ => return Err(at("not a `stream` or `shard` line")),
            }
        }
        if manifest.streams.is_empty() || manifest.shards.is_empty() {
            return Err(bad("it lists no streams or no shards".into()));
        }
        manifest
            .shards
            .iter()
            .try_fold(0u64, |sum, s| sum.checked_add(s.records))
            .ok_or_else(|| bad("the shards hold over 2^64 records".into()))?;
        Ok(manifest)
    }
}

/// `28x28x1` or `scalar`.
fn parse_shape(text: &str) -> Option<Vec<usize>> {
    if text == "scalar" {
        return Some(Vec::new());
    }
    text.split('x').map(|d| d.parse().ok()).collect()
}

/// Names are single words: the manifest is split at spaces and lines.
fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(Error::InvalidArgument(format!(
            "{name:?} cannot be a name in a dataset manifest (empty, or with whitespace)"
        )));
    }
    Ok(())
}

/// With folders named `shard-K-of-N`, every `K` of one `N` must be there.
fn check_numbered(folders: &[String]) -> std::result::Result<(), String> {
    let numbered: Vec<(u64, u64)> = folders
        .iter()
        .filter_map(|f| {
            let (k, n) = f.strip_prefix("shard-")?.split_once("-of-")?;
            Some((k.parse().ok()?, n.parse().ok()?))
        })
        .collect();
    let Some(&(_, n)) = numbered.first() else {
        return Ok(());
    };
    if let Some((_, other)) = numbered.iter().find(|(_, m)| *m != n) {
        return Err(format!("it holds shards of {n} and of {other}"));
    }
    for k in 0..n {
        if !numbered.contains(&(k, n)) {
            return Err(format!(
                "shard {} is missing (its import has not finished, or failed)",
                super::shard_folder(k, n)
            ));
        }
    }
    Ok(())
}

fn describe(streams: &[ManifestStream]) -> String {
    let names: Vec<String> = streams
        .iter()
        .map(|s| format!("{} ({:?})", s.name, s.schema))
        .collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Manifest {
        Manifest {
            streams: vec![
                ManifestStream {
                    name: "image".into(),
                    path: "image".into(),
                    schema: Schema::Dense {
                        dtype: DType::U8,
                        item_shape: vec![28, 28],
                    },
                },
                ManifestStream {
                    name: "label".into(),
                    path: "label".into(),
                    schema: Schema::Dense {
                        dtype: DType::I64,
                        item_shape: vec![],
                    },
                },
                ManifestStream {
                    name: "tokens".into(),
                    path: "tokens".into(),
                    schema: Schema::Ragged { dtype: DType::U32 },
                },
            ],
            shards: vec![
                ManifestShard {
                    folder: "shard-00000-of-00002".into(),
                    records: 30000,
                },
                ManifestShard {
                    folder: "shard-00001-of-00002".into(),
                    records: 29999,
                },
            ],
        }
    }

    /// `example()` encoded (FORMAT.md's example is checked by `tests/format_doc.rs`).
    const ENCODED: &str = "zrecord-dataset 1
stream image image dense u8 28x28
stream label label dense i64 scalar
stream tokens tokens ragged u32
shard shard-00000-of-00002 30000
shard shard-00001-of-00002 29999
crc32c 6ceb8f0f
";

    #[test]
    fn the_encoding_round_trips() {
        let bytes = example().encode().unwrap();
        assert_eq!(String::from_utf8(bytes.clone()).unwrap(), ENCODED);
        assert_eq!(Manifest::decode(Path::new("d"), &bytes).unwrap(), example());
        assert_eq!(example().len(), 59999);
    }

    #[test]
    fn damage_a_newer_version_and_bad_lines_are_named() {
        let bytes = example().encode().unwrap();
        let mut damaged = bytes.clone();
        damaged[40] ^= 1;
        let err = Manifest::decode(Path::new("d"), &damaged).unwrap_err();
        assert!(err.to_string().contains("damaged"), "{err}");

        let sealed = |body: &str| format!("{body}crc32c {:08x}\n", crc32c::crc32c(body.as_bytes()));
        let newer = sealed("zrecord-dataset 2\nstream a . ragged u8\nshard s 1\n");
        let err = Manifest::decode(Path::new("d"), newer.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("version 2"), "{err}");
        let odd = sealed("zrecord-dataset 1\nstream a . dense f33 scalar\nshard s 1\n");
        let err = Manifest::decode(Path::new("d"), odd.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("line 2: unknown dtype"), "{err}");
        let empty = sealed("zrecord-dataset 1\nstream a . ragged u8\n");
        assert!(Manifest::decode(Path::new("d"), empty.as_bytes()).is_err());
    }

    #[test]
    fn names_with_spaces_are_refused_at_encode() {
        let mut m = example();
        m.shards[0].folder = "my shard".into();
        assert!(m.encode().is_err());
    }
}
