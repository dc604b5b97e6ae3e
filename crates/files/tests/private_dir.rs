//! `PrivateDir` and `user_temp_dir` against another local user
//! (`tests/common/other_user.rs`): a folder of theirs, a link of theirs
//! at the folder's name, and the user's private temporary folder name
//! taken first.

#[path = "../../../tests/common/other_user.rs"]
mod other_user;

use clrprof_files::{is_refusal, user_temp_dir, PrivateDir};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// The tests one at a time: one of them sets `TMPDIR`, which the other's
/// shared folder is made in.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn entries(p: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(p).unwrap().flatten().map(|e| e.path()).collect()
}

#[test]
fn folders_and_links_of_another_user_are_refused() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(user) = other_user::get("a folder owned by another user") else { return };
    let shared = other_user::shared_dir("files-private-dir");
    let top = tempfile::tempdir().unwrap();
    let victim = top.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let (theirs, link) = (shared.join("theirs"), shared.join("link"));
    user.sh(r#"mkdir -m 755 "$1" && ln -s "$3" "$2""#, &[theirs.as_os_str(), link.as_os_str(), victim.as_os_str()]);
    let e = PrivateDir::create_or_check(&theirs).unwrap_err();
    assert!(is_refusal(&e) && e.to_string().contains(&format!("owned by uid {}", user.uid)), "{e}");
    let e = PrivateDir::create_or_check(&link).unwrap_err();
    assert!(is_refusal(&e) && e.to_string().contains("symbolic link"), "{e}");
    // A folder the user made in the shared folder is theirs: accepted, 0700.
    let mine = PrivateDir::create_or_check(&shared.join("mine")).unwrap();
    assert_eq!(std::fs::metadata(mine.path()).unwrap().permissions().mode() & 0o777, 0o700);
    assert!(entries(&theirs).is_empty() && entries(&victim).is_empty());
    std::fs::remove_dir_all(&shared).unwrap();
}

/// The spool folder's name taken by another user: a fresh private folder
/// is used, and the caller is told why.
#[test]
fn a_squatted_user_temp_dir_is_passed_over() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(user) = other_user::get("squatting the user's private temporary folder") else { return };
    let shared = other_user::shared_dir("files-user-temp");
    std::env::set_var("TMPDIR", &shared);
    let fixed = shared.join(format!("clrprof-{}", clrprof_files::my_uid()));
    user.sh(r#"mkdir -m 777 "$1""#, &[fixed.as_os_str()]);
    let (dir, note) = user_temp_dir().unwrap();
    assert_ne!(dir.path(), fixed);
    assert!(dir.path().starts_with(&shared), "{}", dir.path().display());
    let m = std::fs::metadata(dir.path()).unwrap();
    assert_eq!((m.permissions().mode() & 0o777, m.uid()), (0o700, clrprof_files::my_uid()));
    let note = note.expect("why another folder");
    assert!(note.contains(&format!("owned by uid {}", user.uid)) && note.contains(&dir.path().display().to_string()), "{note}");
    dir.create_file("clrprof_1.spool.log").unwrap();
    assert!(entries(&fixed).is_empty(), "nothing in the squatted folder");
    // Once free, the usual place is made and used.
    std::fs::remove_dir(&fixed).unwrap();
    let (again, note) = user_temp_dir().unwrap();
    assert_eq!((again.path(), note), (fixed.as_path(), None));
    assert_eq!(std::fs::metadata(&fixed).unwrap().permissions().mode() & 0o777, 0o700);
    std::env::remove_var("TMPDIR");
    std::fs::remove_dir_all(&shared).unwrap();
}
