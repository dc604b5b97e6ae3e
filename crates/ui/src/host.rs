//! The `Host` check against DNS rebinding: a server bound to a loopback
//! address answers only requests that name that address.
//!
//! A page of another site can make the browser send requests to
//! `127.0.0.1` under a name of its own (it points its name at 127.0.0.1:
//! "DNS rebinding"); the browser then treats the answers as that site's
//! and lets the page read them. Such requests carry the site's name in
//! their `Host` header, so a loopback server refuses (403) every request
//! whose `Host` is not, ignoring ASCII case:
//!
//! - bound to `127.0.0.1:PORT`: `127.0.0.1:PORT` or `localhost:PORT`;
//! - bound to `[::1]:PORT`: `[::1]:PORT` or `localhost:PORT`;
//! - bound to another loopback address (`127.0.0.2:PORT`): that address
//!   with its port, or `localhost:PORT`;
//!
//! and the same without `:PORT` when the port is 80. A request without a
//! `Host` header (HTTP/1.0), with more than one, or whose target names
//! another host (`GET http://evil.example/ HTTP/1.1`) is refused as well;
//! every browser sends `Host`. The check comes before the token's.
//!
//! Bound to any other address (`--listen 0.0.0.0:PORT`, reachable from
//! other machines under names the server cannot know), the server answers
//! any `Host`: the token is the only check.

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// The `Host` values a loopback server answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AllowedHosts {
    names: Vec<String>,
    /// The body of a refusal.
    refusal: String,
}

impl AllowedHosts {
    /// The names a server bound to `addr` answers, or `None` when it is
    /// not bound to a loopback address (any name).
    pub(crate) fn for_addr(addr: SocketAddr) -> Option<AllowedHosts> {
        let ip = addr.ip();
        if !ip.is_loopback() {
            return None;
        }
        let port = addr.port();
        let literal = match ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        };
        let mut names = vec![format!("{literal}:{port}"), format!("localhost:{port}")];
        if port == 80 {
            names.extend([literal.clone(), "localhost".to_string()]);
        }
        let refusal = format!(
            "clrprof ui: refused: this server answers only requests for {literal}:{port} or localhost:{port} (the Host header); open the address it printed when it started\n"
        );
        Some(AllowedHosts { names, refusal })
    }

    /// Whether `host` (a `Host` header's value or a target's authority)
    /// names this server.
    pub(crate) fn allows(&self, host: &str) -> bool {
        self.names.iter().any(|n| n.eq_ignore_ascii_case(host))
    }

    /// Whether the request names this server: one `Host` header that
    /// does, and no other host in its target.
    fn allows_request(&self, request: &Request) -> bool {
        let mut hosts = request.headers().get_all(header::HOST).iter();
        let host_ok = match (hosts.next(), hosts.next()) {
            (Some(h), None) => h.to_str().is_ok_and(|h| self.allows(h)),
            _ => false,
        };
        host_ok && request.uri().authority().map_or(true, |a| self.allows(a.as_str()))
    }
}

/// Refuses (403) a request that does not name this server (see the
/// module's documentation).
pub(crate) async fn require_host(State(allowed): State<Arc<AllowedHosts>>, request: Request, next: Next) -> Response {
    if allowed.allows_request(&request) {
        next.run(request).await
    } else {
        (StatusCode::FORBIDDEN, allowed.refusal.clone()).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    fn allowed(addr: &str) -> Option<AllowedHosts> {
        AllowedHosts::for_addr(addr.parse().unwrap())
    }

    #[test]
    fn loopback_servers_answer_their_own_address_and_localhost_only() {
        let a = allowed("127.0.0.1:8765").unwrap();
        for ok in ["127.0.0.1:8765", "localhost:8765", "LocalHost:8765"] {
            assert!(a.allows(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8765",
            "127.0.0.1",
            "localhost",
            "127.0.0.1:8766",
            "localhost:87650",
            "[::1]:8765",
            "127.0.0.2:8765",
            "localhost.:8765",
            "evil@127.0.0.1:8765",
            "127.0.0.1:8765.evil.example",
            "",
        ] {
            assert!(!a.allows(bad), "{bad}");
        }
        let v6 = allowed("[::1]:9000").unwrap();
        assert!(v6.allows("[::1]:9000") && v6.allows("localhost:9000"));
        assert!(!v6.allows("127.0.0.1:9000") && !v6.allows("::1:9000"));
        let other = allowed("127.0.0.2:9000").unwrap();
        assert!(other.allows("127.0.0.2:9000") && other.allows("localhost:9000") && !other.allows("127.0.0.1:9000"));
        let port80 = allowed("127.0.0.1:80").unwrap();
        assert!(port80.allows("127.0.0.1") && port80.allows("localhost") && port80.allows("127.0.0.1:80"));
        assert!(port80.refusal.contains("127.0.0.1:80 or localhost:80"));
    }

    #[test]
    fn other_addresses_answer_any_host() {
        assert_eq!(allowed("0.0.0.0:8765"), None);
        assert_eq!(allowed("[::]:8765"), None);
        assert_eq!(allowed("192.168.1.20:8765"), None);
    }

    #[test]
    fn requests_need_exactly_one_host_naming_the_server_and_no_other_in_their_target() {
        let a = allowed("127.0.0.1:8765").unwrap();
        let request = |uri: &str, hosts: &[&str]| {
            let mut r = Request::builder().uri(uri);
            for h in hosts {
                r = r.header(header::HOST, *h);
            }
            r.body(Body::empty()).unwrap()
        };
        assert!(a.allows_request(&request("/", &["127.0.0.1:8765"])));
        assert!(a.allows_request(&request("http://localhost:8765/api/logs", &["localhost:8765"])));
        assert!(!a.allows_request(&request("/", &[])), "no Host (HTTP/1.0)");
        assert!(!a.allows_request(&request("/", &["127.0.0.1:8765", "evil.example"])));
        assert!(!a.allows_request(&request("http://evil.example/", &["127.0.0.1:8765"])));
    }
}
