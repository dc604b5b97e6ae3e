//! A connection to the collector: TCP, TLS over TCP, or a Unix socket,
//! behind one type whose clones one thread reads and another writes.

use crate::config::Tls;
use crate::tls_conn::TlsConn;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// How long a connection attempt may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Why a connection was not made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnectError {
    /// The collector at `target` could not be reached (or the target does
    /// not read): why.
    Unreachable {
        /// The address.
        target: String,
        /// Why.
        why: String,
    },
    /// TLS failed: the collector's certificate is not the expected one,
    /// the TLS settings do not read, or the other end speaks no TLS.
    /// Nothing of the caller's was sent.
    Tls(String),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Unreachable { target, why } => write!(f, "cannot connect to {target}: {why}"),
            ConnectError::Tls(s) => f.write_str(s),
        }
    }
}

impl From<ConnectError> for String {
    fn from(e: ConnectError) -> String {
        e.to_string()
    }
}

/// A connection to the collector.
pub enum Conn {
    /// Plain TCP.
    Tcp(TcpStream),
    /// TLS over TCP, the collector's certificate checked.
    Tls(TlsConn),
    /// A Unix socket.
    Unix(UnixStream),
}

impl Conn {
    /// Connects to `target` (`HOST:PORT` or `unix:/path`), waiting at most
    /// `connect` for the socket, and with `tls`, does the TLS handshake
    /// within `read_timeout` (the socket's read timeout, which stays set):
    /// a collector whose certificate is not the expected one is refused
    /// here, before anything of the caller's is sent. The error says
    /// which.
    pub fn connect(target: &str, tls: &Tls, connect: Duration, read_timeout: Duration) -> Result<Conn, ConnectError> {
        let unreachable = |e: std::io::Error| ConnectError::Unreachable { target: target.to_string(), why: e.to_string() };
        if let Some(path) = target.strip_prefix("unix:") {
            if *tls != Tls::Plain {
                return Err(ConnectError::Tls(format!("{target}: TLS is for TCP collectors; a Unix socket is local")));
            }
            let s = UnixStream::connect(path).map_err(unreachable)?;
            let _ = s.set_read_timeout(Some(read_timeout));
            return Ok(Conn::Unix(s));
        }
        if let Tls::Invalid(why) = tls {
            return Err(ConnectError::Tls(why.clone()));
        }
        let mut last = std::io::Error::new(std::io::ErrorKind::InvalidInput, "expected HOST:PORT or unix:/path");
        let mut sock = None;
        for addr in target.to_socket_addrs().map_err(unreachable)? {
            match TcpStream::connect_timeout(&addr, connect) {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    sock = Some(s);
                    break;
                }
                Err(e) => last = e,
            }
        }
        let sock = sock.ok_or_else(|| unreachable(last))?;
        let _ = sock.set_read_timeout(Some(read_timeout));
        match tls {
            Tls::Verify(trust) => {
                let config = clrprof_wire::tls::client_config(trust).map_err(ConnectError::Tls)?;
                let name = clrprof_wire::tls::server_name(target).map_err(ConnectError::Tls)?;
                TlsConn::connect(sock, config, name)
                    .map(Conn::Tls)
                    .map_err(|e| ConnectError::Tls(format!("TLS with the collector at {target} failed, nothing was sent: {e}")))
            }
            Tls::Plain | Tls::Invalid(_) => Ok(Conn::Tcp(sock)),
        }
    }

    /// Another handle on the same connection.
    pub fn try_clone(&self) -> std::io::Result<Conn> {
        match self {
            Conn::Tcp(s) => s.try_clone().map(Conn::Tcp),
            Conn::Tls(s) => s.try_clone().map(Conn::Tls),
            Conn::Unix(s) => s.try_clone().map(Conn::Unix),
        }
    }

    /// Shuts the connection down (a blocked read or write then returns).
    pub fn shutdown(&self) {
        let _ = match self {
            Conn::Tcp(s) => s.shutdown(Shutdown::Both),
            Conn::Tls(s) => {
                s.shutdown();
                Ok(())
            }
            Conn::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }

    /// The read timeout (`None`: reads wait).
    pub fn set_read_timeout(&self, t: Option<Duration>) {
        let _ = match self {
            Conn::Tcp(s) => s.set_read_timeout(t),
            Conn::Tls(s) => s.set_read_timeout(t),
            Conn::Unix(s) => s.set_read_timeout(t),
        };
    }

    /// The write timeout (`None`: writes wait).
    pub fn set_write_timeout(&self, t: Option<Duration>) {
        let _ = match self {
            Conn::Tcp(s) => s.set_write_timeout(t),
            Conn::Tls(s) => s.set_write_timeout(t),
            Conn::Unix(s) => s.set_write_timeout(t),
        };
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.read(buf),
            Conn::Tls(s) => s.read(buf),
            Conn::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.write(buf),
            Conn::Tls(s) => s.write(buf),
            Conn::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
