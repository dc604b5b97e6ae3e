//! Ctrl-C (SIGINT) and SIGTERM for the capture commands: counted, not
//! fatal, so that a capture stops its session, keeps what arrived and
//! says so. The first signal asks the capture to stop; a later one also
//! gives up waiting for the program's remaining processes.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

static SIGNALS: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// Installs the handlers; the returned flag is set at the first signal
/// (a thread looks every 50 ms until `done` is set).
pub fn stop_flag(done: Arc<AtomicBool>) -> Arc<AtomicBool> {
    // Safety: the handler only adds to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let flag = Arc::new(AtomicBool::new(false));
    let set = flag.clone();
    std::thread::spawn(move || {
        while !done.load(Ordering::SeqCst) {
            if count() > 0 {
                set.store(true, Ordering::SeqCst);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    flag
}

/// Signals received so far.
pub fn count() -> u32 {
    SIGNALS.load(Ordering::SeqCst)
}

/// A byte count: a number with an optional `K`, `M`, `G` or `T` (powers
/// of 1024, `KiB`, `MB`... accepted alike); 0 for no cap.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(digits);
    let n: u64 = n.parse().map_err(|_| format!("{s:?} is not a number of bytes (e.g. 4G, 512M, 1000000)"))?;
    let shift = match unit.trim().to_ascii_uppercase().trim_end_matches('B').trim_end_matches('I') {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (K, M, G or T)")),
    };
    n.checked_mul(1u64 << shift).ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("4G"), Ok(4 << 30));
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("100k"), Ok(100 << 10));
        assert_eq!(parse_bytes("1000"), Ok(1000));
        assert_eq!(parse_bytes("0"), Ok(0));
        assert!(parse_bytes("x").is_err());
        assert!(parse_bytes("3Q").is_err());
        assert!(parse_bytes("99999999999T").is_err());
    }
}
