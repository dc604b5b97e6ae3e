//! Listen addresses: TCP (`127.0.0.1:7420`, `[::1]:0`) or a Unix socket
//! (`unix:/run/clrprof.sock`).

use crate::CollectError;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

/// Where a collector listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenAddr {
    /// A TCP address (port 0: any free port).
    Tcp(SocketAddr),
    /// A Unix socket path.
    Unix(PathBuf),
}

impl Default for ListenAddr {
    /// Loopback, any free port.
    fn default() -> Self {
        ListenAddr::Tcp(SocketAddr::from(([127, 0, 0, 1], 0)))
    }
}

impl FromStr for ListenAddr {
    type Err = CollectError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(CollectError::Invalid("unix: needs a path, e.g. unix:/tmp/clrprof.sock".into()));
            }
            return Ok(ListenAddr::Unix(PathBuf::from(path)));
        }
        s.parse::<SocketAddr>()
            .map(ListenAddr::Tcp)
            .map_err(|_| CollectError::Invalid(format!("listen address {s:?}: expected IP:PORT (e.g. 127.0.0.1:7420) or unix:/path")))
    }
}

impl ListenAddr {
    /// True when no network is crossed (loopback TCP or a Unix socket).
    pub fn is_local(&self) -> bool {
        match self {
            ListenAddr::Tcp(a) => a.ip().is_loopback(),
            ListenAddr::Unix(_) => true,
        }
    }
}

impl std::fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenAddr::Tcp(a) => write!(f, "{a}"),
            ListenAddr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let a: ListenAddr = "127.0.0.1:7420".parse().unwrap();
        assert!(a.is_local());
        assert_eq!(a.to_string(), "127.0.0.1:7420");
        let u: ListenAddr = "unix:/tmp/x.sock".parse().unwrap();
        assert_eq!(u, ListenAddr::Unix("/tmp/x.sock".into()));
        assert_eq!(u.to_string(), "unix:/tmp/x.sock");
        assert!(!"0.0.0.0:1".parse::<ListenAddr>().unwrap().is_local());
        assert!("unix:".parse::<ListenAddr>().is_err());
        assert!("localhost".parse::<ListenAddr>().is_err());
    }
}
