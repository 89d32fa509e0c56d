//! Codecs: how each record's bytes are stored, and zstd dictionaries.
//!
//! Every record is compressed on its own, as a standard zstd frame that
//! carries its content size and zstd's XXH64 content checksum, so random access
//! stays one read per record and a damaged record is detected when it is
//! decoded.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use zstd::zstd_safe::{
    self, CCtx, CDict, CParameter, DCtx, DDict, DParameter, InBuffer, OutBuffer, ResetDirective,
};

use crate::{Error, Result};

/// zstd level of the `zstd` codec.
pub const ZSTD_LEVEL: i32 = 3;
/// zstd level of the `zstd_dict` codec: the fastest level whose ratio with
/// the default dictionary tier is within 3 % of level 19's on small records
/// (784-byte images, token sequences), at a several times higher write
/// speed.
pub const ZSTD_DICT_LEVEL: i32 = 6;

/// How a store encodes its records. One per store, fixed at creation.
///
/// ```
/// use zrecord::Codec;
/// assert_eq!(Codec::default(), Codec::Zstd);
/// assert_eq!(Codec::Raw.name(), "raw");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Codec {
    /// Bytes as they are.
    Raw,
    /// zstd level 3 ([`ZSTD_LEVEL`]), one frame per record.
    #[default]
    Zstd,
    /// zstd level 6 ([`ZSTD_DICT_LEVEL`]) against a dictionary trained on the data
    /// ([`train_dict`]). The store keeps the dictionary in `dict.zr`.
    ZstdDict(Dictionary),
}

impl Codec {
    /// The codec's name: `raw`, `zstd` or `zstd_dict`.
    pub fn name(&self) -> &'static str {
        match self {
            Codec::Raw => "raw",
            Codec::Zstd => "zstd",
            Codec::ZstdDict(_) => "zstd_dict",
        }
    }

    /// The dictionary of a `zstd_dict` codec.
    pub fn dictionary(&self) -> Option<&Dictionary> {
        match self {
            Codec::ZstdDict(dict) => Some(dict),
            _ => None,
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A zstd dictionary: cheap to clone, shared by every thread that reads.
#[derive(Clone, PartialEq, Eq)]
pub struct Dictionary(Arc<[u8]>);

impl Dictionary {
    /// Wraps dictionary bytes (as [`train_dict`] returns them, or `zstd
    /// --train` writes them).
    ///
    /// # Errors
    /// [`Error::Dictionary`] when the bytes are empty or zstd cannot load them.
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Result<Dictionary> {
        let bytes: Vec<u8> = bytes.into();
        if bytes.len() < 8 {
            return Err(Error::Dictionary {
                reason: format!("{} bytes is too short to be a dictionary", bytes.len()),
            });
        }
        if DDict::try_create(&bytes).is_none() {
            return Err(Error::Dictionary {
                reason: "zstd cannot load these bytes as a dictionary".into(),
            });
        }
        Ok(Dictionary(bytes.into()))
    }

    /// The dictionary's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it is empty (never, for a constructed dictionary).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dictionary({} bytes)", self.0.len())
    }
}

/// Dictionary presets: the dictionary size and how much data trains it.
///
/// A larger dictionary compresses small records better but costs cache misses
/// on every gather; pick a tier, not a number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DictTier {
    /// 32 KiB dictionary trained on 4 MiB: fastest gather, ratio a little above `zstd`.
    Fast,
    /// 128 KiB trained on 16 MiB: most of the ratio at a fraction of the gather cost.
    #[default]
    Balanced,
    /// 1 MiB trained on 64 MiB: best ratio, slowest gather and training.
    Max,
}

impl DictTier {
    /// Largest dictionary size of the tier, in bytes.
    pub const fn dict_bytes(self) -> usize {
        match self {
            DictTier::Fast => 32 << 10,
            DictTier::Balanced => 128 << 10,
            DictTier::Max => 1 << 20,
        }
    }

    /// Byte budget of the training sample.
    pub const fn sample_bytes(self) -> usize {
        match self {
            DictTier::Fast => 4 << 20,
            DictTier::Balanced => 16 << 20,
            DictTier::Max => 64 << 20,
        }
    }

    /// The tier's name: `fast`, `balanced` or `max`.
    pub const fn name(self) -> &'static str {
        match self {
            DictTier::Fast => "fast",
            DictTier::Balanced => "balanced",
            DictTier::Max => "max",
        }
    }
}

impl std::str::FromStr for DictTier {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "fast" => Ok(DictTier::Fast),
            "balanced" => Ok(DictTier::Balanced),
            "max" => Ok(DictTier::Max),
            _ => Err(Error::InvalidArgument(format!(
                "unknown dictionary tier {s:?} (fast, balanced or max)"
            ))),
        }
    }
}

/// Trains a zstd dictionary on sample records.
///
/// Takes an evenly strided subset of `samples` up to the tier's sample
/// budget, so training costs about the same whatever the data size. The
/// dictionary is at most the tier's size, and smaller when the sample is small
/// (zstd needs roughly ten times the dictionary size in samples).
///
/// Stores train on their own records with `DenseStore::train_dict` and
/// `RaggedStore::train_dict`.
///
/// # Errors
/// [`Error::Dictionary`] when there are too few or too uniform samples to
/// train on.
///
/// ```
/// use zrecord::{train_dict, DictTier};
/// let samples: Vec<Vec<u8>> = (0..2000u32)
///     .map(|i| format!("{{\"id\": {i}, \"label\": \"class-{}\", \"ok\": true}}", i % 7).into_bytes())
///     .collect();
/// let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
/// let dict = train_dict(&refs, DictTier::Fast)?;
/// assert!(dict.len() <= DictTier::Fast.dict_bytes());
/// # Ok::<(), zrecord::Error>(())
/// ```
pub fn train_dict(samples: &[&[u8]], tier: DictTier) -> Result<Dictionary> {
    let total: usize = samples.iter().map(|s| s.len()).sum();
    let stride = total.div_ceil(tier.sample_bytes()).max(1);
    let mut data = Vec::with_capacity(total.min(tier.sample_bytes()) + 1);
    let mut sizes = Vec::new();
    for sample in samples.iter().step_by(stride) {
        if sample.is_empty() {
            continue;
        }
        data.extend_from_slice(sample);
        sizes.push(sample.len());
    }
    train_from_continuous(&data, &sizes, tier)
}

/// Trains on samples already laid end to end (`sizes` splits `data`).
pub(crate) fn train_from_continuous(
    data: &[u8],
    sizes: &[usize],
    tier: DictTier,
) -> Result<Dictionary> {
    if sizes.len() < 8 {
        return Err(Error::Dictionary {
            reason: format!(
                "{} samples are too few to train a dictionary (at least 8)",
                sizes.len()
            ),
        });
    }
    let capacity = tier.dict_bytes().min(data.len() / 10).max(1024);
    let bytes =
        zstd::dict::from_continuous(data, sizes, capacity).map_err(|e| Error::Dictionary {
            reason: format!(
                "zstd could not train on {} samples ({} bytes): {e}",
                sizes.len(),
                data.len()
            ),
        })?;
    Dictionary::from_bytes(bytes)
}

/// What a store needs at run time to encode and decode its records.
pub(crate) struct CodecRuntime {
    codec: Codec,
    /// The zstd level appends compress at.
    level: i32,
    ddict: Option<DDict<'static>>,
    cdict: std::sync::OnceLock<CDict<'static>>,
}

impl CodecRuntime {
    /// The run time of `codec`, compressing at `level` (`None`: the
    /// codec's default).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a level zstd does not have;
    /// [`Error::Dictionary`] for a dictionary zstd cannot load.
    pub(crate) fn new(codec: Codec, level: Option<i32>) -> Result<CodecRuntime> {
        let range = zstd_safe::min_c_level()..=zstd_safe::max_c_level();
        let level = match (level, &codec) {
            (Some(level), _) if !range.contains(&level) => {
                return Err(Error::InvalidArgument(format!(
                    "zstd level {level} is outside {}..={}",
                    range.start(),
                    range.end()
                )));
            }
            (Some(level), _) => level,
            (None, Codec::ZstdDict(_)) => ZSTD_DICT_LEVEL,
            (None, _) => ZSTD_LEVEL,
        };
        let ddict =
            match &codec {
                Codec::ZstdDict(dict) => Some(DDict::try_create(dict.as_bytes()).ok_or_else(
                    || Error::Dictionary {
                        reason: "zstd cannot load the store's dictionary".into(),
                    },
                )?),
                _ => None,
            };
        Ok(CodecRuntime {
            codec,
            level,
            ddict,
            cdict: std::sync::OnceLock::new(),
        })
    }

    pub(crate) fn codec(&self) -> &Codec {
        &self.codec
    }

    pub(crate) fn is_raw(&self) -> bool {
        self.codec == Codec::Raw
    }

    /// A compression context for this codec; each thread of an append makes one.
    pub(crate) fn compressor(&self) -> Result<Compressor<'_>> {
        let mut cctx = CCtx::try_create().ok_or_else(|| Error::Compress {
            position: 0,
            reason: "cannot allocate a zstd context".into(),
        })?;
        let zerr = |e| Error::Compress {
            position: 0,
            reason: zstd_safe::get_error_name(e).to_string(),
        };
        cctx.set_parameter(CParameter::ChecksumFlag(true))
            .map_err(zerr)?;
        cctx.set_parameter(CParameter::ContentSizeFlag(true))
            .map_err(zerr)?;
        match &self.codec {
            Codec::Raw => {}
            Codec::Zstd => {
                cctx.set_parameter(CParameter::CompressionLevel(self.level))
                    .map_err(zerr)?;
            }
            Codec::ZstdDict(dict) => {
                let cdict = self
                    .cdict
                    .get_or_init(|| CDict::create(dict.as_bytes(), self.level));
                cctx.ref_cdict(cdict).map_err(zerr)?;
            }
        }
        Ok(Compressor { cctx })
    }

    /// Decodes one stored frame into `dst`, which must be exactly the
    /// record's logical size. Returns a reason on failure.
    #[inline]
    pub(crate) fn decode(&self, frame: &[u8], dst: &mut [u8]) -> std::result::Result<(), String> {
        if self.is_raw() {
            return if frame.len() == dst.len() {
                dst.copy_from_slice(frame);
                Ok(())
            } else {
                Err(format!(
                    "stored {} bytes for a {}-byte record",
                    frame.len(),
                    dst.len()
                ))
            };
        }
        let written = with_dctx(|dctx| match &self.ddict {
            Some(ddict) => dctx.decompress_using_ddict(dst, frame, ddict),
            None => dctx.decompress(dst, frame),
        })
        .map_err(|code| format!("zstd: {}", zstd_safe::get_error_name(code)))?;
        if written != dst.len() {
            return Err(format!(
                "frame decodes to {written} bytes, the record is {}",
                dst.len()
            ));
        }
        Ok(())
    }
}

/// Bytes a [`FrameChecker`] decodes at a time.
const CHECK_PIECE: usize = 1 << 20;

/// The largest zstd window a checked frame may use: 2^24 bytes. zrecord's
/// levels use at most 2^23, and a crafted frame cannot make a check
/// allocate more.
const CHECK_WINDOW_LOG: u32 = 24;

/// One thread's state for checking frames without decoding them whole.
pub(crate) struct FrameChecker<'a> {
    dctx: DCtx<'a>,
    out: Vec<u8>,
}

impl CodecRuntime {
    /// A checker for this codec's frames (one per verifying thread).
    pub(crate) fn frame_checker(&self) -> std::result::Result<FrameChecker<'_>, String> {
        let zerr = |e| zstd_safe::get_error_name(e).to_string();
        let mut dctx = DCtx::try_create().ok_or("cannot allocate a zstd context")?;
        dctx.set_parameter(DParameter::WindowLogMax(CHECK_WINDOW_LOG))
            .map_err(zerr)?;
        if let Some(ddict) = &self.ddict {
            dctx.ref_ddict(ddict).map_err(zerr)?;
        }
        Ok(FrameChecker {
            dctx,
            out: vec![0; CHECK_PIECE],
        })
    }
}

impl FrameChecker<'_> {
    /// Decodes `frame` a piece at a time, handing each piece to `visit`,
    /// and checks it is one whole frame of `logic_len` bytes whose content
    /// checksum matches. Memory stays bounded whatever the record's size.
    pub(crate) fn check(
        &mut self,
        frame: &[u8],
        logic_len: usize,
        mut visit: impl FnMut(&[u8]) -> std::result::Result<(), String>,
    ) -> std::result::Result<(), String> {
        let zerr = |e| format!("zstd: {}", zstd_safe::get_error_name(e));
        match zstd_safe::get_frame_content_size(frame) {
            Ok(Some(n)) if n == logic_len as u64 => {}
            Ok(Some(n)) => {
                return Err(format!(
                    "its frame holds {n} bytes, the record is {logic_len}"
                ));
            }
            _ => return Err("its frame header names no content size".into()),
        }
        self.dctx.reset(ResetDirective::SessionOnly).map_err(zerr)?;
        let mut input = InBuffer::around(frame);
        let mut total = 0usize;
        loop {
            let (hint, n) = {
                let mut output = OutBuffer::around(&mut self.out[..]);
                let hint = self
                    .dctx
                    .decompress_stream(&mut output, &mut input)
                    .map_err(zerr)?;
                (hint, output.pos())
            };
            total += n;
            if total > logic_len {
                return Err(format!("its frame decodes to more than {logic_len} bytes"));
            }
            visit(&self.out[..n])?;
            if hint == 0 {
                break;
            }
            if n == 0 && input.pos() == frame.len() {
                return Err("its frame is truncated".into());
            }
        }
        if input.pos() != frame.len() {
            return Err(format!(
                "{} bytes follow its frame",
                frame.len() - input.pos()
            ));
        }
        if total != logic_len {
            return Err(format!(
                "its frame decodes to {total} bytes, the record is {logic_len}"
            ));
        }
        Ok(())
    }
}

/// One thread's zstd compression context.
pub(crate) struct Compressor<'a> {
    cctx: CCtx<'a>,
}

impl Compressor<'_> {
    /// Appends the frame of `src` to `out` and returns its length.
    pub(crate) fn compress(
        &mut self,
        src: &[u8],
        out: &mut Vec<u8>,
    ) -> std::result::Result<usize, String> {
        // zstd writes a `Vec` from its start, so compress into the slice past `out`'s end.
        let start = out.len();
        out.resize(start + zstd_safe::compress_bound(src.len()), 0);
        let written = self
            .cctx
            .compress2(&mut out[start..], src)
            .map_err(|e| zstd_safe::get_error_name(e).to_string());
        out.truncate(start + *written.as_ref().unwrap_or(&0));
        written
    }
}

thread_local! {
    /// One decompression context per thread, reused by every gather on it:
    /// creating one costs more than decoding a small record.
    static DCTX: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
}

fn with_dctx<R>(
    f: impl FnOnce(&mut DCtx<'static>) -> std::result::Result<R, zstd_safe::ErrorCode>,
) -> std::result::Result<R, zstd_safe::ErrorCode> {
    DCTX.with(|slot| {
        let mut slot = slot.borrow_mut();
        let dctx = slot.get_or_insert_with(DCtx::create);
        f(dctx)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_level_changes_the_frames_not_what_they_decode_to() {
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * i % 7 + i % 13) as u8).collect();
        let samples: Vec<&[u8]> = data.chunks(100).collect();
        let dict = train_dict(&samples, DictTier::Fast).unwrap();
        for codec in [Codec::Zstd, Codec::ZstdDict(dict)] {
            let frame = |level| {
                let rt = CodecRuntime::new(codec.clone(), level).unwrap();
                let mut frame = Vec::new();
                rt.compressor()
                    .unwrap()
                    .compress(&data, &mut frame)
                    .unwrap();
                let mut out = vec![0; data.len()];
                rt.decode(&frame, &mut out).unwrap();
                assert_eq!(out, data);
                frame
            };
            // The level reaches the compressor (with a dictionary this data
            // is no smaller at 19, but it is compressed differently).
            assert_ne!(frame(Some(1)), frame(Some(19)), "{codec}");
            assert!(
                frame(None)
                    == frame(Some(if codec == Codec::Zstd {
                        ZSTD_LEVEL
                    } else {
                        ZSTD_DICT_LEVEL
                    }))
            );
            for level in [0, 23, -1_000_000] {
                if !(zstd_safe::min_c_level()..=zstd_safe::max_c_level()).contains(&level) {
                    assert!(matches!(
                        CodecRuntime::new(codec.clone(), Some(level)),
                        Err(Error::InvalidArgument(_))
                    ));
                }
            }
        }
    }

    fn round_trip(codec: Codec, data: &[u8]) {
        let rt = CodecRuntime::new(codec, None).unwrap();
        let mut frame = Vec::new();
        if rt.is_raw() {
            frame.extend_from_slice(data);
        } else {
            rt.compressor().unwrap().compress(data, &mut frame).unwrap();
            assert_eq!(
                zstd_safe::get_frame_content_size(&frame).unwrap(),
                Some(data.len() as u64),
                "frames carry their content size"
            );
        }
        let mut out = vec![0u8; data.len()];
        rt.decode(&frame, &mut out).unwrap();
        assert_eq!(out, data);
        // One byte too small or too large a destination is an error, not a short read.
        assert!(rt.decode(&frame, &mut vec![0u8; data.len() + 1]).is_err());
    }

    fn samples() -> Vec<Vec<u8>> {
        (0..3000u32)
            .map(|i| format!("record {i} of class {} with some shared text", i % 13).into_bytes())
            .collect()
    }

    #[test]
    fn every_codec_round_trips() {
        let data = b"hello hello hello hello zrecord".repeat(10);
        round_trip(Codec::Raw, &data);
        round_trip(Codec::Zstd, &data);
        let s = samples();
        let refs: Vec<&[u8]> = s.iter().map(Vec::as_slice).collect();
        let dict = train_dict(&refs, DictTier::Fast).unwrap();
        round_trip(Codec::ZstdDict(dict), &data);
    }

    #[test]
    fn frames_append_to_one_buffer() {
        let rt = CodecRuntime::new(Codec::Zstd, None).unwrap();
        let mut c = rt.compressor().unwrap();
        let (a, b) = (vec![1u8; 1000], vec![2u8; 500]);
        let mut out = vec![9u8];
        let na = c.compress(&a, &mut out).unwrap();
        let nb = c.compress(&b, &mut out).unwrap();
        assert_eq!(out.len(), 1 + na + nb);
        let mut back = vec![0u8; 500];
        rt.decode(&out[1 + na..], &mut back).unwrap();
        assert_eq!(back, b);
    }

    #[test]
    fn checksum_catches_a_flipped_byte() {
        let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        let rt = CodecRuntime::new(Codec::Zstd, None).unwrap();
        let mut frame = Vec::new();
        rt.compressor()
            .unwrap()
            .compress(&data, &mut frame)
            .unwrap();
        // The last four bytes of a frame are the checksum.
        let n = frame.len();
        frame[n - 1] ^= 0x40;
        let mut out = vec![0u8; data.len()];
        let err = rt.decode(&frame, &mut out).unwrap_err();
        assert!(err.contains("checksum"), "{err}");
    }

    #[test]
    fn frames_are_checked_a_piece_at_a_time() {
        let data: Vec<u8> = (0..3 * CHECK_PIECE as u32 + 5)
            .map(|i| (i % 251) as u8)
            .collect();
        let rt = CodecRuntime::new(Codec::Zstd, None).unwrap();
        let mut frame = Vec::new();
        rt.compressor()
            .unwrap()
            .compress(&data, &mut frame)
            .unwrap();
        let mut checker = rt.frame_checker().unwrap();
        let mut seen = Vec::new();
        checker
            .check(&frame, data.len(), |piece| {
                assert!(piece.len() <= CHECK_PIECE);
                seen.extend_from_slice(piece);
                Ok(())
            })
            .unwrap();
        assert_eq!(seen, data);
        assert!(checker.check(&frame, data.len() - 1, |_| Ok(())).is_err());
        assert!(
            checker
                .check(&frame[..frame.len() - 1], data.len(), |_| Ok(()))
                .is_err()
        );
        let mut longer = frame.clone();
        longer.push(0);
        assert!(checker.check(&longer, data.len(), |_| Ok(())).is_err());
        let n = frame.len();
        frame[n - 2] ^= 1;
        let err = checker.check(&frame, data.len(), |_| Ok(())).unwrap_err();
        assert!(err.contains("checksum"), "{err}");
    }

    #[test]
    fn bad_dictionaries_are_refused() {
        assert!(matches!(
            Dictionary::from_bytes(vec![]),
            Err(Error::Dictionary { .. })
        ));
        assert!(train_dict(&[b"abc".as_slice(); 3], DictTier::Fast).is_err());
        assert!("huge".parse::<DictTier>().is_err());
    }
}
