//! The crate's one error type.

use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong reading a store from object storage.
///
/// Reads made by a store (its gathers) reach the caller as a
/// [`zrecord::Error::Io`] naming the object, whose source is this error:
/// `std::error::Error::source` and `downcast_ref` recover it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The URL names no object store this build can open.
    #[error("cannot open {url}: {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The URL's object store needs credentials and neither the environment
    /// nor the store options name any; nothing was requested. (Left alone,
    /// `object_store` would ask the cloud's instance metadata service, which
    /// off a cloud machine fails with a message about that service.)
    #[error("no credentials for {url}: {advice}")]
    NoCredentials {
        /// The URL as given.
        url: String,
        /// What is missing and which variables supply it.
        advice: String,
    },

    /// The URL's object store needs a setting that neither the environment
    /// nor the store options give (a region, an account); nothing was
    /// requested.
    #[error("cannot open {url}: no {what}; set {variable}")]
    MissingSetting {
        /// The URL as given.
        url: String,
        /// The setting missing.
        what: &'static str,
        /// The environment variable that sets it, and how.
        variable: &'static str,
    },

    /// The endpoint is plain `http://` and plain HTTP is not allowed;
    /// nothing was requested.
    #[error(
        "cannot open {url}: its endpoint {endpoint} is plain http://; set {variable}=true to allow it, or use https://"
    )]
    HttpNotAllowed {
        /// The URL as given.
        url: String,
        /// The endpoint.
        endpoint: String,
        /// The setting that allows plain HTTP.
        variable: &'static str,
    },

    /// The bucket (an Azure container) that the URL names does not exist.
    #[error(
        "cannot open {url}: the bucket {bucket} does not exist; {}",
        how_to_create(url, bucket)
    )]
    NoBucket {
        /// The URL as given.
        url: String,
        /// The bucket's name.
        bucket: String,
        /// What the server answered. Not the error's source: the message
        /// already says all of it, where the store's error chain repeats the
        /// server's answer once per layer.
        answer: Box<object_store::Error>,
    },

    /// Listing the store's objects failed.
    #[error("cannot list {url}")]
    List {
        /// The store's URL.
        url: String,
        /// What the object store said.
        #[source]
        source: object_store::Error,
    },

    /// A ranged read failed for good: the object is missing, access is
    /// denied, or every retry failed.
    #[error("cannot read bytes {}..{} of {object} (after {attempts} attempts)", range.start, range.end)]
    Fetch {
        /// The object's URL.
        object: String,
        /// The bytes asked for.
        range: Range<u64>,
        /// Requests made, retries included.
        attempts: u32,
        /// The last failure.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A ranged read did not finish within its deadline, retries included.
    #[error(
        "reading bytes {}..{} of {object} took longer than the {deadline:?} deadline",
        range.start, range.end
    )]
    Deadline {
        /// The object's URL.
        object: String,
        /// The bytes asked for.
        range: Range<u64>,
        /// The deadline of one read, retries included.
        deadline: Duration,
    },

    /// A read asked for bytes past the end of an object.
    #[error("bytes {}..{} are past the end of {object} ({len} bytes)", range.start, range.end)]
    OutOfRange {
        /// The object's URL.
        object: String,
        /// The bytes asked for.
        range: Range<u64>,
        /// The object's size.
        len: u64,
    },

    /// An upload (or the check of its size) failed.
    #[error("cannot upload {object}")]
    Upload {
        /// The object's URL.
        object: String,
        /// What the object store said.
        #[source]
        source: object_store::Error,
    },

    /// Deleting an object failed.
    #[error("cannot delete {object}")]
    Delete {
        /// The object's URL.
        object: String,
        /// What the object store said.
        #[source]
        source: object_store::Error,
    },

    /// The folder holds a store's files but not its header `store.zr`,
    /// which a push uploads last: the upload did not finish.
    #[error(
        "{url} is an incomplete upload: {objects} objects but no store.zr (a push sends it last); push again"
    )]
    Incomplete {
        /// The store folder's URL.
        url: String,
        /// Objects found there.
        objects: usize,
    },

    /// A sharded dataset's manifest is damaged, or a shard differs from it
    /// (or does not open as a store).
    #[error("dataset: {0}")]
    Dataset(#[source] zrecord::Error),

    /// A push or pull cannot go on.
    #[error("cannot copy {what}: {reason}")]
    Transfer {
        /// The local folder, URL or object.
        what: String,
        /// Why.
        reason: String,
    },

    /// The local cache folder could not be used.
    #[error("cache {path}: cannot {op}")]
    Cache {
        /// What was being done.
        op: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A check of this crate's own bookkeeping failed: a bug, reported
    /// rather than acted on.
    #[error("internal error in zrecord-remote: {0}; please report it")]
    Internal(String),

    /// The options asked for something impossible.
    #[error("invalid remote options: {0}")]
    Options(String),
}

/// Results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A closure that wraps an I/O error of the cache as [`Error::Cache`].
    pub(crate) fn cache(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Cache { op, path, source }
    }

    /// A failed listing of the folder `url`: [`Error::NoBucket`] when the
    /// answer says that its bucket does not exist, [`Error::List`] otherwise.
    pub(crate) fn list(url: &str, source: object_store::Error) -> Error {
        // object_store keeps the server's answer only as the text of its
        // error chain (S3's `NoSuchBucket`, Azure's `ContainerNotFound`, GCS's
        // "The specified bucket does not exist.").
        let mut text = source.to_string();
        let mut cause = std::error::Error::source(&source);
        while let Some(e) = cause {
            text.push_str(&e.to_string());
            cause = e.source();
        }
        let missing = [
            "NoSuchBucket",
            "ContainerNotFound",
            "specified bucket does not exist",
        ];
        if !missing.iter().any(|m| text.contains(m)) {
            return Error::List {
                url: url.into(),
                source,
            };
        }
        Error::NoBucket {
            url: url.into(),
            bucket: bucket_of(url),
            answer: Box::new(source),
        }
    }

    /// This error as the store engine reports failures of its storage:
    /// [`zrecord::Error::Io`] naming `object`, with `self` as its source.
    pub(crate) fn into_store_error(self, op: &'static str, object: PathBuf) -> zrecord::Error {
        zrecord::Error::Io {
            op,
            path: object,
            source: std::io::Error::other(self),
        }
    }
}

/// The bucket (an Azure container) a URL names.
fn bucket_of(url: &str) -> String {
    let Ok(parsed) = url::Url::parse(url) else {
        return url.into();
    };
    let host = parsed.host_str().unwrap_or_default();
    let first_segment = || {
        let segment = parsed.path_segments().and_then(|mut s| s.next());
        segment.unwrap_or_default().to_string()
    };
    match parsed.scheme() {
        "abfs" | "abfss" if !parsed.username().is_empty() => parsed.username().into(),
        "s3" | "s3a" | "gs" | "az" | "adl" | "azure" | "abfs" | "abfss" => host.into(),
        // Virtual-hosted AWS URLs: `bucket.s3.region.amazonaws.com`.
        _ if host.ends_with("amazonaws.com") && !host.starts_with("s3") => {
            host.split('.').next().unwrap_or_default().into()
        }
        _ => first_segment(),
    }
}

/// How to create the bucket `bucket` of `url`.
fn how_to_create(url: &str, bucket: &str) -> String {
    let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| Some(u.host_str()?.to_string()))
        .unwrap_or_default();
    let azure = matches!(scheme, "az" | "adl" | "azure" | "abfs" | "abfss")
        || host.ends_with(".windows.net")
        || host.ends_with(".microsoft.com");
    if scheme == "gs" {
        format!("create it with `gcloud storage buckets create gs://{bucket}`")
    } else if azure {
        format!(
            "create it with `az storage container create --name {bucket} --account-name ACCOUNT`"
        )
    } else {
        format!(
            "create it with `aws s3 mb s3://{bucket}` (adding `--endpoint-url URL` for an \
             S3-compatible server such as MinIO or moto)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(body: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: format!("Server returned non-2xx status code: 404 Not Found: {body}").into(),
        }
    }

    #[test]
    fn a_missing_bucket_is_told_from_other_listing_failures() {
        let url = "s3://data/sets/mnist";
        let e = Error::list(url, answer("<Error><Code>NoSuchBucket</Code></Error>"));
        let Error::NoBucket { bucket, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(bucket, "data");
        let message = e.to_string();
        assert!(
            message.contains(url) && message.contains("aws s3 mb s3://data"),
            "{message}"
        );

        let e = Error::list(url, answer("<Error><Code>AccessDenied</Code></Error>"));
        assert!(matches!(e, Error::List { .. }), "{e:?}");
    }

    #[test]
    fn the_bucket_is_found_in_every_url_form() {
        for (url, bucket) in [
            ("s3://data/x", "data"),
            ("s3a://data/x", "data"),
            ("gs://data/x", "data"),
            ("az://box/x", "box"),
            ("abfs://box@acct.dfs.core.windows.net/x", "box"),
            ("https://s3.eu-west-1.amazonaws.com/data/x", "data"),
            ("https://data.s3.eu-west-1.amazonaws.com/x", "data"),
            ("https://acct.blob.core.windows.net/box/x", "box"),
        ] {
            assert_eq!(bucket_of(url), bucket, "{url}");
        }
    }
}
