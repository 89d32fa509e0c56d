//! The command line of `compare`.

use std::path::PathBuf;

/// Workload letters, in run order.
pub const WORKLOADS: [char; 5] = ['a', 'b', 'c', 'd', 'e'];

/// Usage line.
pub const USAGE: &str = "usage: compare [--quick] [--only a,b,c,d,e] [--json PATH]";

/// What a run does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Shrunk workloads and short timing: a smoke test.
    pub quick: bool,
    /// Workloads to run, in [`WORKLOADS`] order.
    pub only: Vec<char>,
    /// Where to write the JSON results.
    pub json: Option<PathBuf>,
}

impl Options {
    /// Whether workload `w` runs.
    pub fn wants(&self, w: char) -> bool {
        self.only.contains(&w)
    }

    /// Parses the arguments after the program name.
    ///
    /// # Errors
    /// A message for an unknown argument or a bad value.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
        let mut options = Options {
            quick: false,
            only: WORKLOADS.to_vec(),
            json: None,
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--quick" => options.quick = true,
                "--only" => {
                    let value = args.next().ok_or("--only needs workload letters")?;
                    let mut only = Vec::new();
                    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                        let mut chars = part.chars();
                        match (chars.next(), chars.next()) {
                            (Some(c), None) if WORKLOADS.contains(&c) => only.push(c),
                            _ => return Err(format!("--only {part}: workloads are a, b, c, d, e")),
                        }
                    }
                    options.only = WORKLOADS
                        .iter()
                        .copied()
                        .filter(|w| only.contains(w))
                        .collect();
                }
                "--json" => {
                    let value = args.next().ok_or("--json needs a path")?;
                    options.json = Some(PathBuf::from(value));
                }
                // `cargo bench` passes `--bench`.
                "--bench" => {}
                "-h" | "--help" => return Err(USAGE.into()),
                other => return Err(format!("unknown argument {other}\n{USAGE}")),
            }
        }
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        Options::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_the_documented_flags() {
        let o = parse(&[]).unwrap();
        assert!(!o.quick && o.json.is_none());
        assert_eq!(o.only, WORKLOADS);
        let o = parse(&["--quick", "--only", "e,a", "--json", "out.json"]).unwrap();
        assert!(o.quick);
        assert_eq!(o.only, ['a', 'e']);
        assert!(o.wants('a') && !o.wants('b'));
        assert_eq!(o.json, Some(PathBuf::from("out.json")));
        assert!(parse(&["--only", "f"]).is_err());
        assert!(parse(&["--only", "ab"]).is_err());
        assert!(parse(&["--json"]).is_err());
        assert!(parse(&["--fast"]).is_err());
    }
}
