//! Object stores from URLs: each backend's builder configured from the
//! environment and then the store options, and checked before any request.
//!
//! Given no credentials, `object_store`'s builders fall back on the cloud's
//! instance metadata service; off a cloud machine the first request then
//! fails with a message about that service, not about what is missing. So
//! credentials must come from a source that a setting names, or the
//! fallback be asked for ([`INSTANCE_METADATA`] or
//! [`RemoteOptions::instance_metadata`]); a region, a storage account or a
//! permission for plain HTTP that a URL needs is asked for by the variable
//! that sets it.

use std::collections::BTreeMap;
use std::sync::Arc;

use object_store::ObjectStore;

use crate::{Error, RemoteOptions, Result};

/// Environment variables by name.
pub(crate) type Env = BTreeMap<String, String>;

/// The variable that lets credentials come from the cloud's instance
/// metadata service (an EC2 instance's role, a GCE instance's service
/// account, an Azure managed identity) when no other source is set.
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure"))]
pub(crate) const INSTANCE_METADATA: &str = "ZRECORD_INSTANCE_METADATA";

/// The process's environment: the variables whose name and value are
/// UTF-8, the only ones `object_store`'s builders read.
pub(crate) fn process_env() -> Env {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

/// The object store and folder a URL names, configured from the process's
/// environment and then the store options, with this crate's retry policy
/// in place of the backend's own.
pub(crate) fn store_for_url(
    url: &str,
    options: &RemoteOptions,
) -> Result<(Arc<dyn ObjectStore>, String)> {
    store_for_url_in(url, options, &process_env())
}

/// [`store_for_url`] with the environment `env`. Nothing is requested: a
/// store that opens here may still fail its first request.
#[cfg_attr(
    not(any(feature = "aws", feature = "gcp", feature = "azure")),
    allow(unused_variables)
)]
pub(crate) fn store_for_url_in(
    url: &str,
    options: &RemoteOptions,
    env: &Env,
) -> Result<(Arc<dyn ObjectStore>, String)> {
    let settings = &options.store_options;
    let bad = |reason: String| Error::Url {
        url: url.into(),
        reason,
    };
    let parsed = url::Url::parse(url).map_err(|e| bad(e.to_string()))?;
    let (scheme, path) =
        object_store::ObjectStoreScheme::parse(&parsed).map_err(|e| bad(e.to_string()))?;
    // A backend's builder with the variables of its prefix, read as its own
    // `from_env` reads them.
    #[allow(unused_macros)]
    macro_rules! from_env {
        ($builder:expr, $prefix:literal) => {{
            let mut builder = $builder;
            for (name, value) in env.iter().filter(|(name, _)| name.starts_with($prefix)) {
                if let Ok(key) = name.to_ascii_lowercase().parse() {
                    builder = builder.with_config(key, value);
                }
            }
            builder
        }};
    }
    // The store options, over the environment.
    #[allow(unused_macros)]
    macro_rules! with_options {
        ($builder:expr) => {{
            let mut builder = $builder;
            for (key, value) in settings {
                let key = key
                    .parse()
                    .map_err(|e: object_store::Error| bad(e.to_string()))?;
                builder = builder.with_config(key, value);
            }
            builder
        }};
    }
    #[allow(unused_macros)]
    macro_rules! build {
        ($builder:expr) => {{
            install_crypto_provider();
            let store = $builder.with_retry(no_retries()).build();
            Arc::new(store.map_err(|e| bad(e.to_string()))?) as Arc<dyn ObjectStore>
        }};
    }
    use object_store::ObjectStoreScheme as S;
    let store: Arc<dyn ObjectStore> = match scheme {
        S::Local if settings.is_empty() => Arc::new(object_store::local::LocalFileSystem::new()),
        #[cfg(feature = "aws")]
        S::AmazonS3 => {
            let builder = from_env!(object_store::aws::AmazonS3Builder::new(), "AWS_");
            let builder = with_options!(builder);
            check_s3(
                url,
                &parsed,
                &builder,
                env,
                instance_metadata(options, env)?,
            )?;
            build!(builder.with_url(url))
        }
        #[cfg(feature = "gcp")]
        S::GoogleCloudStorage => {
            let mut builder = object_store::gcp::GoogleCloudStorageBuilder::new();
            // Read without the prefix by `from_env`, and overridden by the
            // GOOGLE_ variables.
            if let Some(path) = env.get("SERVICE_ACCOUNT") {
                builder = builder.with_service_account_path(path);
            }
            let builder = with_options!(from_env!(builder, "GOOGLE_"));
            check_gcs(url, &builder, env, instance_metadata(options, env)?)?;
            build!(builder.with_url(url))
        }
        #[cfg(feature = "azure")]
        S::MicrosoftAzure => {
            let mut builder =
                from_env!(object_store::azure::MicrosoftAzureBuilder::new(), "AZURE_");
            // Read by `from_env` without the prefix: the endpoint of the
            // managed identity that App Service and Functions provide.
            if let Some(endpoint) = env.get("IDENTITY_ENDPOINT") {
                builder = builder.with_msi_endpoint(endpoint);
            }
            let builder = with_options!(builder);
            check_azure(url, &parsed, &builder, instance_metadata(options, env)?)?;
            build!(builder.with_url(url))
        }
        #[cfg(feature = "http")]
        S::Http => {
            let client = with_options!(object_store::ClientOptions::new());
            let allow_http = client.get_config_value(&object_store::ClientConfigKey::AllowHttp);
            if parsed.scheme() == "http" && !allowed(allow_http) {
                return Err(Error::HttpNotAllowed {
                    url: url.into(),
                    endpoint: parsed[..url::Position::BeforePath].into(),
                    variable: "the store option allow_http",
                });
            }
            build!(
                object_store::http::HttpBuilder::new()
                    .with_url(&parsed[..url::Position::BeforePath])
                    .with_client_options(client)
            )
        }
        S::Local => return Err(bad("file:// URLs take no store options".into())),
        other => {
            return Err(bad(format!(
                "{other:?} URLs need a feature of zrecord-remote this build lacks \
                 (aws, gcp, azure, http)"
            )));
        }
    };
    Ok((store, path.to_string()))
}

/// A boolean as `object_store` reads one: `None` for a value it refuses.
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http"))]
fn boolean(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" | "y" => Some(true),
        "0" | "false" | "off" | "no" | "n" => Some(false),
        _ => None,
    }
}

/// Whether a boolean setting is on. A value `object_store` refuses counts
/// as on here, so that its builder, not a check of ours, reports it.
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http"))]
fn allowed(value: Option<String>) -> bool {
    value.is_some_and(|v| boolean(&v).unwrap_or(true))
}

/// A setting's value, an empty one as none.
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure"))]
fn set(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

/// Whether credentials may come from the instance metadata service:
/// [`RemoteOptions::instance_metadata`] or [`INSTANCE_METADATA`].
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure"))]
fn instance_metadata(options: &RemoteOptions, env: &Env) -> Result<bool> {
    if options.instance_metadata {
        return Ok(true);
    }
    match env.get(INSTANCE_METADATA) {
        None => Ok(false),
        Some(value) => boolean(value).ok_or_else(|| {
            Error::Options(format!(
                "{INSTANCE_METADATA}={value:?} is neither true nor false"
            ))
        }),
    }
}

/// The S3 settings a request needs, checked in the order in which
/// `AmazonS3Builder::build` picks a credential source.
#[cfg(feature = "aws")]
fn check_s3(
    url: &str,
    parsed: &url::Url,
    builder: &object_store::aws::AmazonS3Builder,
    env: &Env,
    instance_metadata: bool,
) -> Result<()> {
    use object_store::ClientConfigKey;
    use object_store::aws::AmazonS3ConfigKey as K;
    let get = |key: K| set(builder.get_config_value(&key));
    let on = |key: K| allowed(builder.get_config_value(&key));
    let no_credentials = |advice: String| Error::NoCredentials {
        url: url.into(),
        advice,
    };

    let (key_id, secret) = (get(K::AccessKeyId), get(K::SecretAccessKey));
    let web_identity = (get(K::WebIdentityTokenFile), get(K::RoleArn));
    let full_uri = (
        get(K::ContainerCredentialsFullUri),
        get(K::ContainerAuthorizationTokenFile),
    );
    let named = match (&key_id, &secret) {
        (Some(_), Some(_)) => true,
        (Some(_), None) => {
            return Err(no_credentials(
                "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not; set both".into(),
            ));
        }
        (None, Some(_)) => {
            return Err(no_credentials(
                "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not; set both".into(),
            ));
        }
        (None, None) => {
            matches!(web_identity, (Some(_), Some(_)))
                || get(K::ContainerCredentialsRelativeUri).is_some()
                || matches!(full_uri, (Some(_), Some(_)))
        }
    };
    // The metadata service is used when chosen: by this crate's switch, or
    // by a setting that only means something to it.
    let metadata = instance_metadata || get(K::MetadataEndpoint).is_some() || on(K::ImdsV1Fallback);
    if !named && !on(K::SkipSignature) && !metadata {
        let advice = match (web_identity, full_uri) {
            ((Some(_), None), _) => {
                "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not; set the role to assume"
                    .to_string()
            }
            (_, (Some(_), None)) => "AWS_CONTAINER_CREDENTIALS_FULL_URI is set but \
                 AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE is not; set both"
                .to_string(),
            _ => {
                let profile = match env.get("AWS_PROFILE") {
                    Some(profile) => format!(
                        "AWS_PROFILE is set, but profiles (~/.aws) are not read: export the \
                         profile's keys with `eval \"$(aws configure export-credentials \
                         --profile {profile} --format env)\"`, or "
                    ),
                    None => String::new(),
                };
                format!(
                    "{profile}set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY \
                     (and AWS_SESSION_TOKEN for temporary keys); or AWS_WEB_IDENTITY_TOKEN_FILE \
                     and AWS_ROLE_ARN; or AWS_CONTAINER_CREDENTIALS_RELATIVE_URI; or \
                     AWS_CONTAINER_CREDENTIALS_FULL_URI and AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE; \
                     or AWS_SKIP_SIGNATURE=true for a public bucket; or \
                     {INSTANCE_METADATA}=true on an EC2 instance with a role"
                )
            }
        };
        return Err(no_credentials(advice));
    }

    let endpoint = get(K::S3Endpoint).or_else(|| get(K::Endpoint));
    // Requests to AWS itself are signed for the bucket's region; the
    // builder's default, us-east-1, is right only for buckets there.
    // S3-compatible servers take any region, and https:// URLs of AWS name
    // theirs.
    let to_aws = match &endpoint {
        None => matches!(parsed.scheme(), "s3" | "s3a"),
        Some(endpoint) => url::Url::parse(endpoint)
            .ok()
            .and_then(|e| Some(e.host_str()?.ends_with("amazonaws.com")))
            .unwrap_or(false),
    };
    if to_aws && get(K::Region).is_none() {
        return Err(Error::MissingSetting {
            url: url.into(),
            what: "region",
            variable: "AWS_REGION to the bucket's region (AWS_ENDPOINT_URL for an S3-compatible server)",
        });
    }
    if let Some(endpoint) = endpoint
        && is_plain_http(&endpoint)
        && !on(K::Client(ClientConfigKey::AllowHttp))
    {
        return Err(Error::HttpNotAllowed {
            url: url.into(),
            endpoint,
            variable: "AWS_ALLOW_HTTP",
        });
    }
    Ok(())
}

/// The GCS settings a request needs, checked in the order in which
/// `GoogleCloudStorageBuilder::build` picks a credential source.
#[cfg(feature = "gcp")]
fn check_gcs(
    url: &str,
    builder: &object_store::gcp::GoogleCloudStorageBuilder,
    env: &Env,
    instance_metadata: bool,
) -> Result<()> {
    use object_store::ClientConfigKey;
    use object_store::gcp::GoogleConfigKey as K;
    let get = |key: K| set(builder.get_config_value(&key));
    let on = |key: K| allowed(builder.get_config_value(&key));
    // The file `gcloud auth application-default login` writes, which the
    // builder reads when no variable names one.
    let (home, file) = if cfg!(windows) {
        ("APPDATA", "gcloud/application_default_credentials.json")
    } else {
        (
            "HOME",
            ".config/gcloud/application_default_credentials.json",
        )
    };
    let well_known = env
        .get(home)
        .is_some_and(|home| std::path::Path::new(home).join(file).exists());
    let named = [
        K::ServiceAccount,
        K::ServiceAccountKey,
        K::ApplicationCredentials,
        K::BearerToken,
    ]
    .into_iter()
    .any(|key| get(key).is_some());
    if !named && !well_known && !on(K::SkipSignature) && !instance_metadata {
        return Err(Error::NoCredentials {
            url: url.into(),
            advice: format!(
                "set GOOGLE_APPLICATION_CREDENTIALS to a credentials file (`gcloud auth \
                 application-default login` writes one where it is found without it), or \
                 GOOGLE_SERVICE_ACCOUNT to a service account's key file, or \
                 GOOGLE_SERVICE_ACCOUNT_KEY to the key itself; or GOOGLE_SKIP_SIGNATURE=true \
                 for a public bucket; or {INSTANCE_METADATA}=true on a GCE instance with a \
                 service account"
            ),
        });
    }
    // The builder allows plain HTTP unless told not to (for emulators).
    if let Some(endpoint) = get(K::BaseUrl)
        && is_plain_http(&endpoint)
        && !on(K::Client(ClientConfigKey::AllowHttp))
    {
        return Err(Error::HttpNotAllowed {
            url: url.into(),
            endpoint,
            variable: "GOOGLE_ALLOW_HTTP",
        });
    }
    Ok(())
}

/// The Azure settings a request needs, checked in the order in which
/// `MicrosoftAzureBuilder::build` picks a credential source.
#[cfg(feature = "azure")]
fn check_azure(
    url: &str,
    parsed: &url::Url,
    builder: &object_store::azure::MicrosoftAzureBuilder,
    instance_metadata: bool,
) -> Result<()> {
    use object_store::ClientConfigKey;
    use object_store::azure::AzureConfigKey as K;
    let get = |key: K| set(builder.get_config_value(&key));
    let on = |key: K| allowed(builder.get_config_value(&key));
    // The emulator (Azurite) has an account, a key and plain HTTP of its own.
    if on(K::UseEmulator) {
        return Ok(());
    }
    // `az://container/path` names no account; the URLs of
    // `….blob.core.windows.net` and `container@….dfs.core.windows.net` do.
    let account_in_url = parsed.host_str().is_some_and(|host| host.contains('.'));
    if !account_in_url && get(K::AccountName).is_none() {
        return Err(Error::MissingSetting {
            url: url.into(),
            what: "storage account",
            variable: "AZURE_STORAGE_ACCOUNT_NAME",
        });
    }
    let (client_id, tenant) = (get(K::ClientId), get(K::AuthorityId));
    let (secret, token_file) = (get(K::ClientSecret), get(K::FederatedTokenFile));
    let app = client_id.is_some() && tenant.is_some();
    let fabric = [
        K::FabricTokenServiceUrl,
        K::FabricWorkloadHost,
        K::FabricSessionToken,
        K::FabricClusterIdentifier,
    ]
    .into_iter()
    .all(|key| get(key).is_some());
    let named = get(K::CredentialType).is_some_and(|t| t != "auto")
        || fabric
        || get(K::Token).is_some()
        || get(K::AccessKey).is_some()
        || (app && (token_file.is_some() || secret.is_some()))
        || get(K::SasKey).is_some()
        || on(K::UseAzureCli)
        || on(K::SkipSignature)
        // The managed identity's endpoint, set by the platform (App
        // Service, Functions) or by hand: that identity is chosen.
        || get(K::MsiEndpoint).is_some();
    if !named && !instance_metadata {
        let advice = if (secret.is_some() || token_file.is_some()) && !app {
            "AZURE_CLIENT_SECRET or AZURE_FEDERATED_TOKEN_FILE is set but not both \
             AZURE_CLIENT_ID and AZURE_TENANT_ID; set them"
                .to_string()
        } else {
            format!(
                "set AZURE_STORAGE_ACCOUNT_KEY, or AZURE_STORAGE_SAS_TOKEN, or \
                 AZURE_STORAGE_TOKEN; or AZURE_CLIENT_ID, AZURE_TENANT_ID and \
                 AZURE_CLIENT_SECRET (or AZURE_FEDERATED_TOKEN_FILE); or \
                 AZURE_USE_AZURE_CLI=true; or AZURE_SKIP_SIGNATURE=true for a public \
                 container; or {INSTANCE_METADATA}=true for an Azure machine's managed identity"
            )
        };
        return Err(Error::NoCredentials {
            url: url.into(),
            advice,
        });
    }
    if let Some(endpoint) = get(K::Endpoint)
        && is_plain_http(&endpoint)
        && !on(K::Client(ClientConfigKey::AllowHttp))
    {
        return Err(Error::HttpNotAllowed {
            url: url.into(),
            endpoint,
            variable: "AZURE_ALLOW_HTTP",
        });
    }
    Ok(())
}

/// Whether an endpoint is plain HTTP.
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure"))]
fn is_plain_http(endpoint: &str) -> bool {
    endpoint
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
}

/// The backend's own retries off: the fetcher retries every failure kind
/// itself, within one deadline.
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http"))]
fn no_retries() -> object_store::RetryConfig {
    object_store::RetryConfig {
        max_retries: 0,
        ..Default::default()
    }
}

/// Makes ring rustls' process-wide crypto provider, unless the program
/// installed one. The HTTP client is built with rustls but no provider
/// (ring's is a Rust build; aws-lc-rs, the default, is a C build that takes
/// minutes), and panics when it finds none installed.
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http"))]
pub(crate) fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Fails only when another thread installed one since the check:
        // there is one either way.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        vars.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn open(url: &str, options: &RemoteOptions, vars: &[(&str, &str)]) -> Result<()> {
        store_for_url_in(url, options, &env(vars)).map(|_| ())
    }

    const KEYS: [(&str, &str); 2] = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
    ];

    fn with_keys(more: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        KEYS.iter().chain(more).copied().collect()
    }

    #[cfg(feature = "aws")]
    #[test]
    fn no_aws_credentials_name_the_variables_and_no_metadata_service() {
        let e = open("s3://data/x", &RemoteOptions::new(), &[]).unwrap_err();
        assert!(matches!(e, Error::NoCredentials { .. }), "{e:?}");
        let message = e.to_string();
        for name in [
            "s3://data/x",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            INSTANCE_METADATA,
        ] {
            assert!(message.contains(name), "{name} missing from: {message}");
        }
        assert!(!message.contains("169.254"), "{message}");
        assert!(!message.contains('\n'), "{message}");
    }

    #[cfg(feature = "aws")]
    #[test]
    fn every_aws_credential_source_opens() {
        let region = ("AWS_REGION", "eu-west-1");
        let sources: [&[(&str, &str)]; 7] = [
            &KEYS,
            &[
                ("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token"),
                ("AWS_ROLE_ARN", "arn:aws:iam::1:role/r"),
            ],
            &[(
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "/v2/credentials/x",
            )],
            &[
                (
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                    "http://169.254.170.23/v1/credentials",
                ),
                ("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "/var/run/token"),
            ],
            &[("AWS_SKIP_SIGNATURE", "true")],
            &[(INSTANCE_METADATA, "true")],
            &[("AWS_METADATA_ENDPOINT", "http://169.254.169.254")],
        ];
        for source in sources {
            let vars: Vec<_> = source.iter().copied().chain([region]).collect();
            let opened = open("s3://data/x", &RemoteOptions::new(), &vars);
            assert!(opened.is_ok(), "{source:?}: {opened:?}");
        }
        let options = RemoteOptions::new().instance_metadata(true);
        open("s3://data/x", &options, &[region]).unwrap();
    }

    #[cfg(feature = "aws")]
    #[test]
    fn half_set_aws_sources_say_which_half_is_missing() {
        for (vars, missing) in [
            (
                vec![("AWS_ACCESS_KEY_ID", "AKID")],
                "AWS_SECRET_ACCESS_KEY is not",
            ),
            (
                vec![("AWS_SECRET_ACCESS_KEY", "s")],
                "AWS_ACCESS_KEY_ID is not",
            ),
            (
                vec![("AWS_WEB_IDENTITY_TOKEN_FILE", "/t")],
                "AWS_ROLE_ARN is not",
            ),
            (
                vec![("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://h/c")],
                "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE is not",
            ),
            (vec![("AWS_PROFILE", "work")], "--profile work"),
            // An empty key is no key.
            (
                vec![("AWS_ACCESS_KEY_ID", ""), ("AWS_SECRET_ACCESS_KEY", "")],
                "set AWS_ACCESS_KEY_ID",
            ),
        ] {
            let e = open("s3://data/x", &RemoteOptions::new(), &vars).unwrap_err();
            assert!(matches!(e, Error::NoCredentials { .. }), "{vars:?}: {e:?}");
            assert!(e.to_string().contains(missing), "{vars:?}: {e}");
        }
    }

    #[cfg(feature = "aws")]
    #[test]
    fn aws_itself_needs_a_region_and_compatible_servers_do_not() {
        let e = open("s3://data/x", &RemoteOptions::new(), &KEYS).unwrap_err();
        let Error::MissingSetting { what, variable, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(*what, "region");
        assert!(variable.contains("AWS_REGION"), "{e}");
        assert!(e.to_string().contains("s3://data/x"), "{e}");
        let endpoint = ("AWS_ENDPOINT_URL", "https://s3.eu-west-1.amazonaws.com");
        let e = open(
            "s3://data/x",
            &RemoteOptions::new(),
            &with_keys(&[endpoint]),
        )
        .unwrap_err();
        assert!(matches!(e, Error::MissingSetting { .. }), "{e:?}");

        for more in [
            ("AWS_REGION", "eu-west-1"),
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("AWS_ENDPOINT_URL", "https://minio.example:9000"),
        ] {
            let opened = open("s3://data/x", &RemoteOptions::new(), &with_keys(&[more]));
            assert!(opened.is_ok(), "{more:?}: {opened:?}");
        }
        // The URL names the region.
        let url = "https://s3.eu-west-1.amazonaws.com/data/x";
        open(url, &RemoteOptions::new(), &KEYS).unwrap();
    }

    #[cfg(feature = "aws")]
    #[test]
    fn a_plain_http_endpoint_needs_allow_http() {
        let endpoint = ("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
        let e = open(
            "s3://data/x",
            &RemoteOptions::new(),
            &with_keys(&[endpoint]),
        )
        .unwrap_err();
        let Error::HttpNotAllowed { variable, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(*variable, "AWS_ALLOW_HTTP");
        let message = e.to_string();
        assert!(message.contains("http://127.0.0.1:9000") && message.contains("s3://data/x"));

        let allowed = with_keys(&[endpoint, ("AWS_ALLOW_HTTP", "true")]);
        open("s3://data/x", &RemoteOptions::new(), &allowed).unwrap();
        let option = RemoteOptions::new().store_option("aws_allow_http", "true");
        open("s3://data/x", &option, &with_keys(&[endpoint])).unwrap();
        // AWS_ENDPOINT_URL_S3 wins over AWS_ENDPOINT_URL.
        let s3 = ("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9001");
        let https = ("AWS_ENDPOINT_URL", "https://minio.example");
        let e = open(
            "s3://data/x",
            &RemoteOptions::new(),
            &with_keys(&[https, s3]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("9001"), "{e}");
    }

    #[cfg(feature = "aws")]
    #[test]
    fn store_options_win_over_the_environment() {
        let options = RemoteOptions::new()
            .store_option("aws_access_key_id", "AKID")
            .store_option("aws_secret_access_key", "s")
            .store_option("aws_endpoint", "http://127.0.0.1:9000")
            .store_option("aws_allow_http", "true");
        open("s3://data/x", &options, &[]).unwrap();
        let no = RemoteOptions::new().store_option("aws_allow_http", "false");
        let vars = with_keys(&[
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9000"),
            ("AWS_ALLOW_HTTP", "true"),
        ]);
        let e = open("s3://data/x", &no, &vars).unwrap_err();
        assert!(matches!(e, Error::HttpNotAllowed { .. }), "{e:?}");
    }

    #[cfg(feature = "aws")]
    #[test]
    fn the_instance_metadata_switch_must_be_a_boolean() {
        let vars = [
            (INSTANCE_METADATA, "sometimes"),
            ("AWS_REGION", "eu-west-1"),
        ];
        let e = open("s3://data/x", &RemoteOptions::new(), &vars).unwrap_err();
        assert!(matches!(e, Error::Options(_)), "{e:?}");
        assert!(e.to_string().contains(INSTANCE_METADATA), "{e}");
    }

    /// reqwest, built without a TLS provider, panics building a client
    /// when none is installed.
    #[cfg(feature = "aws")]
    #[test]
    fn a_client_for_an_https_endpoint_builds() {
        let endpoint = ("AWS_ENDPOINT_URL", "https://127.0.0.1:9");
        open(
            "s3://data/x",
            &RemoteOptions::new(),
            &with_keys(&[endpoint]),
        )
        .unwrap();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }

    #[cfg(feature = "gcp")]
    #[test]
    fn gcs_needs_credentials_or_the_switch() {
        let e = open("gs://data/x", &RemoteOptions::new(), &[]).unwrap_err();
        assert!(matches!(e, Error::NoCredentials { .. }), "{e:?}");
        let message = e.to_string();
        for name in [
            "gs://data/x",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "GOOGLE_SERVICE_ACCOUNT",
            INSTANCE_METADATA,
        ] {
            assert!(message.contains(name), "{name} missing from: {message}");
        }
        assert!(
            !message.contains("169.254") && !message.contains("metadata.google"),
            "{message}"
        );
        for vars in [
            [("GOOGLE_BEARER_TOKEN", "token")],
            [("GOOGLE_SKIP_SIGNATURE", "true")],
            [(INSTANCE_METADATA, "true")],
        ] {
            let opened = open("gs://data/x", &RemoteOptions::new(), &vars);
            assert!(opened.is_ok(), "{vars:?}: {opened:?}");
        }
        // Plain HTTP is GCS's default (for emulators); refused only when asked.
        let emulator = [
            ("GOOGLE_BEARER_TOKEN", "t"),
            ("GOOGLE_BASE_URL", "http://127.0.0.1:4443"),
        ];
        open("gs://data/x", &RemoteOptions::new(), &emulator).unwrap();
        let refused = RemoteOptions::new().store_option("google_allow_http", "false");
        let e = open("gs://data/x", &refused, &emulator).unwrap_err();
        assert!(
            matches!(
                e,
                Error::HttpNotAllowed {
                    variable: "GOOGLE_ALLOW_HTTP",
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[cfg(feature = "gcp")]
    #[test]
    fn gcs_finds_the_well_known_credentials_file() {
        let home = tempfile::tempdir().unwrap();
        let home_path = home.path().to_str().unwrap();
        let vars = [("HOME", home_path)];
        assert!(open("gs://data/x", &RemoteOptions::new(), &vars).is_err());
        let dir = home.path().join(".config/gcloud");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("application_default_credentials.json"), "{}").unwrap();
        // Passes the check; what the builder then makes of the file is its own.
        let e = open("gs://data/x", &RemoteOptions::new(), &vars).err();
        assert!(!matches!(e, Some(Error::NoCredentials { .. })), "{e:?}");
    }

    #[cfg(feature = "azure")]
    #[test]
    fn azure_needs_an_account_and_credentials() {
        let e = open("az://box/x", &RemoteOptions::new(), &[]).unwrap_err();
        let Error::MissingSetting { variable, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(*variable, "AZURE_STORAGE_ACCOUNT_NAME");

        let account = ("AZURE_STORAGE_ACCOUNT_NAME", "acct");
        let e = open("az://box/x", &RemoteOptions::new(), &[account]).unwrap_err();
        assert!(matches!(e, Error::NoCredentials { .. }), "{e:?}");
        let message = e.to_string();
        for name in [
            "az://box/x",
            "AZURE_STORAGE_ACCOUNT_KEY",
            "AZURE_STORAGE_SAS_TOKEN",
            INSTANCE_METADATA,
        ] {
            assert!(message.contains(name), "{name} missing from: {message}");
        }
        assert!(!message.contains("169.254"), "{message}");

        let e = open(
            "az://box/x",
            &RemoteOptions::new(),
            &[account, ("AZURE_CLIENT_SECRET", "s")],
        )
        .unwrap_err();
        assert!(e.to_string().contains("AZURE_TENANT_ID"), "{e}");

        for more in [
            ("AZURE_STORAGE_ACCOUNT_KEY", "a2V5"),
            ("AZURE_STORAGE_SAS_TOKEN", "sv=2021&sig=x"),
            ("AZURE_SKIP_SIGNATURE", "true"),
            ("AZURE_USE_AZURE_CLI", "true"),
            ("IDENTITY_ENDPOINT", "http://127.0.0.1:41000/msi/token"),
            (INSTANCE_METADATA, "true"),
        ] {
            let opened = open("az://box/x", &RemoteOptions::new(), &[account, more]);
            assert!(opened.is_ok(), "{more:?}: {opened:?}");
        }
        // The URL names the account; the emulator needs nothing.
        let url = "https://acct.blob.core.windows.net/box/x";
        open(
            url,
            &RemoteOptions::new(),
            &[("AZURE_STORAGE_SAS_TOKEN", "sv=1&sig=x")],
        )
        .unwrap();
        open(
            "az://box/x",
            &RemoteOptions::new(),
            &[("AZURE_STORAGE_USE_EMULATOR", "true")],
        )
        .unwrap();
    }

    #[cfg(feature = "http")]
    #[test]
    fn a_plain_http_server_needs_allow_http() {
        let e = open("http://127.0.0.1:8000/sets/x", &RemoteOptions::new(), &[]).unwrap_err();
        assert!(matches!(e, Error::HttpNotAllowed { .. }), "{e:?}");
        assert!(e.to_string().contains("allow_http"), "{e}");
        let options = RemoteOptions::new().store_option("allow_http", "true");
        open("http://127.0.0.1:8000/sets/x", &options, &[]).unwrap();
        open("https://example.com/sets/x", &RemoteOptions::new(), &[]).unwrap();
    }

    #[test]
    fn file_urls_need_no_settings() {
        open("file:///tmp/x", &RemoteOptions::new(), &[]).unwrap();
    }
}
