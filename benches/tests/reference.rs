//! The workload generators and index plans against an independent
//! reference: `reference/golden.txt` is the output of
//! `reference/bench_data.py`, a plain Python transcription of the workload
//! definitions. The test regenerates it wherever python3 is installed.

use std::collections::HashMap;
use std::path::Path;

use zrecord_benches::checksum::{sha256_hex, sha256_hex_u32};
use zrecord_benches::splitmix::output;
use zrecord_benches::{DENSE_A, DENSE_B, RaggedTokens, plan};

const GOLDEN: &str = include_str!("../reference/golden.txt");

/// golden.txt's values by name, as text.
fn golden() -> HashMap<&'static str, Vec<&'static str>> {
    GOLDEN
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (name, values) = l.split_once(" : ").expect("`name : values`");
            (name, values.split(' ').collect())
        })
        .collect()
}

fn text<T: ToString>(values: impl IntoIterator<Item = T>) -> Vec<String> {
    values.into_iter().map(|v| v.to_string()).collect()
}

#[test]
fn generators_match_the_reference() {
    let golden = golden();
    let mut checked = 0;
    let mut check = |name: &str, got: Vec<String>| {
        let want = golden
            .get(name)
            .unwrap_or_else(|| panic!("golden.txt has no {name:?}"));
        assert_eq!(&got, want, "{name}");
        checked += 1;
    };
    check("S(1) first outputs", text((0..3).map(|k| output(1, k))));
    for (seed, n) in [(5, 2_500), (6, 200_000), (7, 100_000)] {
        let name = format!("plan({seed}, 1, 8, {n})");
        check(&name, text(plan(seed, 1, 8, n).remove(0)));
    }
    let a = DENSE_A.generate(2);
    check("a: first 16 bytes", text(&a[..16]));
    check("a: sha256 of 2 records", text([sha256_hex(&a)]));
    let b = sha256_hex(&DENSE_B.generate(1000));
    check("b: sha256 of 1000 records", text([b]));
    let c = RaggedTokens::generate(1000);
    check("c: first 12 lengths", text(&c.lengths[..12]));
    check("c: first 12 tokens", text(&c.tokens[..12]));
    check("c: tokens in 1000 records", text([c.tokens.len()]));
    let lengths = sha256_hex_u32(&c.lengths);
    check("c: sha256 of 1000 lengths as u32 LE", text([lengths]));
    let tokens = sha256_hex_u32(bytemuck::cast_slice(&c.tokens));
    check("c: sha256 of their tokens as i32 LE", text([tokens]));
    assert_eq!(checked, golden.len(), "every golden value is checked");
}

#[test]
fn golden_txt_is_what_the_reference_says() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("reference/bench_data.py");
    let output = match std::process::Command::new("python3").arg(&script).output() {
        Ok(output) => output,
        Err(e) => {
            zrecord_testkit::skip(format!(
                "python3 does not run here ({e}); golden.txt stands unchecked"
            ));
            return;
        }
    };
    assert!(
        output.status.success(),
        "bench_data.py failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        String::from_utf8_lossy(&output.stdout) == GOLDEN,
        "golden.txt differs from the reference's output: run \
         `python3 reference/bench_data.py > reference/golden.txt` and review the change"
    );
}
