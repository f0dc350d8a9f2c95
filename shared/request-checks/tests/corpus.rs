//! Replays the whole-request fuzzers' kept corpus (`fuzz/corpus/<target>/`)
//! through the same checks the fuzz targets run, then a fixed stream of
//! pseudo-random inputs: the bounded, deterministic slice of fuzzing every
//! test run includes, on stable Rust.

use std::path::Path;

#[test]
fn every_kept_whole_request_input_is_answered_cleanly() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    for (target, check) in meridian_request_checks::ALL {
        let dir = corpus.join(target);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e} (every target keeps a corpus)", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{target} has an empty corpus");
        for path in &files {
            check(&std::fs::read(path).unwrap());
        }
        println!("{target}: replayed {} inputs", files.len());
    }
}

/// xorshift64*: the same inputs on every run.
fn stream(seed: u64) -> impl Iterator<Item = u8> {
    let mut state = seed;
    std::iter::from_fn(move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        Some((state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8)
    })
}

#[test]
fn a_fixed_stream_of_random_requests_is_answered_cleanly() {
    for (i, (_, check)) in meridian_request_checks::ALL.into_iter().enumerate() {
        let mut bytes = stream(0x9e37_79b9_7f4a_7c15 ^ i as u64);
        for n in 0..1000 {
            let len = 8 + n % 180;
            let input: Vec<u8> = bytes.by_ref().take(len).collect();
            check(&input);
        }
    }
}
