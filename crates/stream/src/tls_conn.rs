//! A TLS connection over a blocking TCP socket that two threads use at
//! once, one reading and one writing, as they use a plain socket's two
//! `try_clone` halves.
//!
//! ```text
//!  writer thread: [send lock] -> [tls lock: encrypt into a buffer] -> socket write
//!  reader thread: socket read -> [tls lock: decrypt, take plaintext]
//!                 (a record the reader must answer, such as an alert or a
//!                  key update, goes out under the send lock too)
//! ```
//!
//! The rustls state is held only for the CPU work, never across a socket
//! read or write, so a writer blocked on a full socket never keeps the
//! reader from the acknowledgements, and [`TlsConn::shutdown`] never
//! waits.

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// What the clones of one connection share.
struct Shared {
    tls: Mutex<ClientConnection>,
    /// Held while records go to the socket, so that they go in order.
    send: Mutex<()>,
}

/// One end of a TLS connection (see the module's notes).
pub struct TlsConn {
    sock: TcpStream,
    shared: Arc<Shared>,
    /// Bytes read from the socket that rustls has not taken yet.
    incoming: Vec<u8>,
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl TlsConn {
    /// Does the TLS handshake on `sock` (within its read timeout); the
    /// certificate is checked by `config`'s verifier, and a wrong one
    /// fails here, before any byte of the caller's is sent.
    pub fn connect(sock: TcpStream, config: Arc<ClientConfig>, name: ServerName<'static>) -> io::Result<TlsConn> {
        let mut tls = ClientConnection::new(config, name).map_err(tls_error)?;
        let mut s = &sock;
        while tls.is_handshaking() {
            tls.complete_io(&mut s)?;
        }
        // The client's Finished.
        while tls.wants_write() {
            tls.write_tls(&mut s)?;
        }
        Ok(TlsConn { sock, shared: Arc::new(Shared { tls: Mutex::new(tls), send: Mutex::new(()) }), incoming: Vec::new() })
    }

    /// Another handle on the same connection (one thread reads, one
    /// writes).
    pub fn try_clone(&self) -> io::Result<TlsConn> {
        Ok(TlsConn { sock: self.sock.try_clone()?, shared: Arc::clone(&self.shared), incoming: Vec::new() })
    }

    /// Ends the connection: a TLS close if no write is under way, then
    /// the socket is shut down (which also ends a blocked read or write).
    pub fn shutdown(&self) {
        if let Ok(_send) = self.shared.send.try_lock() {
            let mut out = Vec::new();
            {
                let mut tls = lock(&self.shared.tls);
                tls.send_close_notify();
                while tls.wants_write() && tls.write_tls(&mut out).is_ok() {}
            }
            let _ = (&self.sock).write_all(&out);
        }
        let _ = self.sock.shutdown(Shutdown::Both);
    }

    /// The socket's read timeout.
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.sock.set_read_timeout(t)
    }

    /// The socket's write timeout.
    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.sock.set_write_timeout(t)
    }

    /// Sends what rustls has to send (under the send lock).
    fn send_pending(&self) -> io::Result<()> {
        let _send = lock(&self.shared.send);
        let mut out = Vec::new();
        {
            let mut tls = lock(&self.shared.tls);
            while tls.wants_write() {
                tls.write_tls(&mut out)?;
            }
        }
        (&self.sock).write_all(&out)
    }
}

impl Read for TlsConn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            {
                let mut tls = lock(&self.shared.tls);
                match tls.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                if !self.incoming.is_empty() {
                    let mut rd = &self.incoming[..];
                    let took = tls.read_tls(&mut rd)?;
                    self.incoming.drain(..took);
                    let processed = tls.process_new_packets();
                    let answer = tls.wants_write();
                    drop(tls);
                    if let Err(e) = processed {
                        // The alert that says why, then the error.
                        let _ = self.send_pending();
                        return Err(tls_error(e));
                    }
                    if answer {
                        self.send_pending()?;
                    }
                    continue;
                }
            }
            let mut raw = [0u8; 32 * 1024];
            let n = (&self.sock).read(&mut raw)?;
            if n == 0 {
                // The end of the socket: rustls then says whether the
                // peer closed cleanly (Ok(0)) or not (UnexpectedEof).
                let mut tls = lock(&self.shared.tls);
                let _ = tls.read_tls(&mut &[][..]);
                tls.process_new_packets().map_err(tls_error)?;
                return match tls.reader().read(buf) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
                    other => other,
                };
            }
            self.incoming.extend_from_slice(&raw[..n]);
        }
    }
}

impl Write for TlsConn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _send = lock(&self.shared.send);
        let mut out = Vec::new();
        let n = {
            let mut tls = lock(&self.shared.tls);
            let n = tls.writer().write(buf)?;
            while tls.wants_write() {
                tls.write_tls(&mut out)?;
            }
            n
        };
        (&self.sock).write_all(&out)?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
