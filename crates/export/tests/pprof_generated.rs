//! `proto/perftools.profiles.rs`, which the build copies instead of
//! generating it (see `build.rs`), is what prost-build generates from
//! `proto/profile.proto` today: a change to the `.proto` or to prost-build
//! that the kept copy lacks fails here. `UPDATE_GOLDEN=1` rewrites the copy.

use std::path::Path;

#[test]
fn kept_pprof_structs_are_what_prost_build_generates() {
    let dir = tempfile::tempdir().unwrap();
    let descriptors = protox::compile(["proto/profile.proto"], ["proto"]).unwrap();
    prost_build::Config::new().out_dir(dir.path()).compile_fds(descriptors).unwrap();
    let generated = std::fs::read_to_string(dir.path().join("perftools.profiles.rs")).unwrap();
    let kept_path = Path::new("proto/perftools.profiles.rs");
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::write(kept_path, &generated).unwrap();
    }
    let kept = std::fs::read_to_string(kept_path).unwrap();
    assert!(generated.contains("pub struct Profile"), "prost-build generated no Profile:\n{generated}");
    assert!(
        kept == generated,
        "{} differs from what prost-build generates from proto/profile.proto; \
         rerun with UPDATE_GOLDEN=1 and review the diff",
        kept_path.display()
    );
}
