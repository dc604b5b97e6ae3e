//! `clrprof sessions` and `clrprof ctl` read a collector's folder as the
//! collector does: a folder open to other users (sticky or not) is
//! refused, and a record another user left there is not listed.

mod common;

use common::clrprof;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

#[test]
fn a_shared_folder_is_refused_and_another_users_record_is_not_listed() {
    let Some(user) = common::other_user::get("planting a session in a collector's folder") else { return };
    let d = common::other_user::shared_dir("sessions-planted");
    let name = "planted_9_20260101_000000";
    let record = serde_json::json!({"session": name, "log": format!("{name}.nettrace"), "pid": 9, "program": "planted",
        "runtime": "8.0.4", "peer": "x", "start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:00:01Z", "bytes": 8,
        "state": "ended", "reason": null, "spool": null, "spool_from": null})
    .to_string();
    let (rec_path, trace) = (d.join(format!("{name}.json")), d.join(format!("{name}.nettrace")));
    user.sh("printf '%s' \"$1\" > \"$2\" && printf 'Nettrace' > \"$3\"", &[record.as_ref(), rec_path.as_os_str(), trace.as_os_str()]);
    let dir = d.to_str().expect("a path");
    // Open to others (1777): refused, naming the folder.
    for args in [vec!["sessions", "--dir", dir], vec!["sessions", "--json", "--dir", dir], vec!["ctl", "--dir", dir, name, "dump"]] {
        let out = clrprof(&args);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "{args:?}: {text}");
        assert!(text.contains("can be written by other users") && text.contains(dir), "{args:?}: {text}");
        assert!(!text.contains("planted_9"), "{args:?} listed the planted session: {text}");
    }
    // Closed by its owner: what was planted stays, and is not listed.
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let out = clrprof(&["sessions", "--json", "--dir", dir]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(listed, serde_json::json!([]));
    let out = clrprof(&["sessions", "--dir", dir]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("no sessions"), "{}", String::from_utf8_lossy(&out.stdout));
    std::fs::remove_dir_all(Path::new(dir)).expect("clean up");
}
