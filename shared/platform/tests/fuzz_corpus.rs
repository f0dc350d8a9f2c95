//! Replays the fuzzers' kept corpus (`fuzz/corpus/<target>/`) through the
//! same invariant checks the fuzz targets run: the bounded, deterministic
//! slice of fuzzing that every test run includes, on stable Rust.

use std::path::Path;

use meridian_platform::checks;

#[test]
fn every_kept_fuzz_input_still_holds_its_invariants() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut replayed = 0;
    for (target, check) in checks::ALL {
        let dir = corpus.join(target);
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e} (every target keeps a corpus)", dir.display()));
        let mut files = 0;
        for entry in entries {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            check(&data);
            files += 1;
        }
        assert!(files > 0, "{target} has an empty corpus");
        replayed += files;
    }
    println!("replayed {replayed} corpus inputs");
}
