//! `clrprof collect --tls`: the collector's key and certificate, made or
//! loaded, and the TLS side of its agents' endpoint.
//!
//! Without files of the user's (`--tls-cert`, `--tls-key`), the collector
//! keeps its own in `DIR/tls/` (a private folder: made 0700 or checked,
//! see `clrprof_files::PrivateDir`): `key.pem` (a new ECDSA P-256 key, in
//! a file created exclusively, mode 0600, never through a link) and
//! `cert.pem` (self-signed, naming localhost, the loopback addresses, the
//! machine's host name and the listening address). They are made at the
//! first start and loaded at every later one, so the fingerprint agents
//! pin stays the same across restarts. A key file is used only when it
//! is a regular file of the collector's user (not a link) that no one
//! else can read; a certificate only when it is the user's regular file.
//!
//! Clients know the collector by the SHA-256 of its certificate (printed
//! as `CLRPROF_TLS_FINGERPRINT`) or by a CA that signed a certificate of
//! the user's (see [`clrprof_wire::tls`]). TLS 1.3 only.

use crate::{CollectError, ListenAddr};
use clrprof_wire::tls::Fingerprint;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The folder in the collector's directory for its own key and
/// certificate.
pub const TLS_DIR: &str = "tls";
/// The key's file name in [`TLS_DIR`].
pub const KEY_FILE: &str = "key.pem";
/// The certificate's file name in [`TLS_DIR`].
pub const CERT_FILE: &str = "cert.pem";

/// Where the key and certificate come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain (PEM, the collector's first), with `key`;
    /// `None`: the collector's own, in `DIR/tls/`.
    pub cert: Option<PathBuf>,
    /// The private key (PEM), with `cert`.
    pub key: Option<PathBuf>,
}

/// The collector's TLS: the acceptor and what to tell the user.
pub struct TlsServer {
    pub(crate) acceptor: tokio_rustls::TlsAcceptor,
    fingerprint: Fingerprint,
    cert: PathBuf,
    made: bool,
}

impl TlsServer {
    /// The SHA-256 of the certificate (`CLRPROF_TLS_FINGERPRINT`).
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// The certificate file, and whether this start made it.
    pub fn cert_file(&self) -> (&Path, bool) {
        (&self.cert, self.made)
    }
}

fn invalid(what: String) -> CollectError {
    CollectError::Invalid(what)
}

/// Reads a file that must be the collector user's regular file (opened
/// without following a link, checked on the descriptor); with `secret`,
/// also closed to group and others.
fn read_trusted(path: &Path, secret: bool) -> Result<Vec<u8>, CollectError> {
    let shown = path.display();
    let mut f = clrprof_files::open_existing(path, clrprof_files::Access::Read, Some(clrprof_files::my_uid()))
        .map_err(CollectError::io(format!("cannot use {shown}")))?;
    if secret {
        let mode = f.metadata().map_err(CollectError::io(format!("cannot read {shown}")))?.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(invalid(format!("the TLS key {shown} can be read by other users (mode {:o}): chmod 600 it", mode & 0o777)));
        }
    }
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(CollectError::io(format!("cannot read {shown}")))?;
    Ok(bytes)
}

/// The names the collector's own certificate holds.
fn names(listen: &ListenAddr) -> Vec<String> {
    let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()];
    let mut host = [0u8; 256];
    // Safety: a buffer of the given length; gethostname NUL-terminates
    // what fits.
    if unsafe { libc::gethostname(host.as_mut_ptr().cast(), host.len()) } == 0 {
        let end = host.iter().position(|&b| b == 0).unwrap_or(host.len());
        if let Ok(h) = std::str::from_utf8(&host[..end]) {
            if !h.is_empty() && !names.iter().any(|n| n == h) {
                names.push(h.to_string());
            }
        }
    }
    if let ListenAddr::Tcp(a) = listen {
        let ip = a.ip();
        if !ip.is_unspecified() && !names.contains(&ip.to_string()) {
            names.push(ip.to_string());
        }
    }
    names
}

/// Makes the collector's key and certificate in `dir` (created
/// exclusively: the certificate first, so a key is never left without
/// one).
fn make(dir: &clrprof_files::PrivateDir, listen: &ListenAddr) -> Result<(), CollectError> {
    let made = rcgen::generate_simple_self_signed(names(listen)).map_err(|e| invalid(format!("cannot make a TLS certificate: {e}")))?;
    for (name, text) in [(CERT_FILE, made.cert.pem()), (KEY_FILE, made.key_pair.serialize_pem())] {
        let mut f = dir.create_file(name).map_err(CollectError::io(format!("cannot create {}", dir.shown(name).display())))?;
        f.write_all(text.as_bytes()).map_err(CollectError::io(format!("cannot write {}", dir.shown(name).display())))?;
        f.sync_all().map_err(CollectError::io(format!("cannot write {}", dir.shown(name).display())))?;
    }
    Ok(())
}

/// Loads the key and certificate of `files`, or the collector's own in
/// `DIR/tls/` (made at the first start), and builds the acceptor.
pub fn load_or_make(files: &TlsFiles, dir: &Path, listen: &ListenAddr) -> Result<TlsServer, CollectError> {
    let (cert_path, key_path, made) = match (&files.cert, &files.key) {
        (Some(c), Some(k)) => (c.clone(), k.clone(), false),
        (None, None) => {
            let tls_dir = clrprof_files::PrivateDir::create_or_check(&dir.join(TLS_DIR))
                .map_err(CollectError::io(format!("cannot use {}", dir.join(TLS_DIR).display())))?;
            let has = |n: &str| tls_dir.contains(n).map_err(CollectError::io(format!("cannot read {}", tls_dir.shown(n).display())));
            let made = match (has(CERT_FILE)?, has(KEY_FILE)?) {
                (false, false) => {
                    make(&tls_dir, listen)?;
                    true
                }
                (true, true) => false,
                (cert, _) => {
                    return Err(invalid(format!(
                        "{} holds a TLS {} without its {}: remove it to have a new pair made, or give --tls-cert and --tls-key",
                        tls_dir.path().display(),
                        if cert { "certificate" } else { "key" },
                        if cert { "key" } else { "certificate" }
                    )))
                }
            };
            (tls_dir.shown(CERT_FILE), tls_dir.shown(KEY_FILE), made)
        }
        _ => return Err(invalid("--tls-cert and --tls-key go together".into())),
    };
    let cert_pem = read_trusted(&cert_path, false)?;
    let key_pem = read_trusted(&key_path, true)?;
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("the certificate {}: {e}", cert_path.display())))?;
    let first = certs.first().ok_or_else(|| invalid(format!("{} holds no certificate (PEM)", cert_path.display())))?;
    let fingerprint = Fingerprint::of(first.as_ref());
    // The key's bytes are never shown.
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|_| invalid(format!("{} holds no private key this collector reads (PEM: PKCS#8, SEC1 or PKCS#1)", key_path.display())))?;
    let config = rustls::ServerConfig::builder_with_provider(clrprof_wire::tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| invalid(format!("TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| invalid(format!("the TLS key {} and certificate {}: {e}", key_path.display(), cert_path.display())))?;
    Ok(TlsServer { acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)), fingerprint, cert: cert_path, made })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn local() -> ListenAddr {
        ListenAddr::default()
    }

    #[test]
    fn made_once_private_then_loaded_with_the_same_fingerprint() {
        let d = tempfile::tempdir().unwrap();
        let a = load_or_make(&TlsFiles::default(), d.path(), &local()).unwrap();
        assert!(a.cert_file().1);
        let key = d.path().join(TLS_DIR).join(KEY_FILE);
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(d.path().join(TLS_DIR)).unwrap().permissions().mode() & 0o777, 0o700);
        let b = load_or_make(&TlsFiles::default(), d.path(), &local()).unwrap();
        assert!(!b.cert_file().1);
        assert_eq!(a.fingerprint(), b.fingerprint());
        // The fingerprint is the certificate's DER SHA-256.
        let pem = std::fs::read(d.path().join(TLS_DIR).join(CERT_FILE)).unwrap();
        let der = CertificateDer::pem_slice_iter(&pem).next().unwrap().unwrap();
        assert_eq!(Fingerprint::of(der.as_ref()), a.fingerprint());
    }

    #[test]
    fn a_key_others_can_read_or_a_link_is_refused() {
        let d = tempfile::tempdir().unwrap();
        load_or_make(&TlsFiles::default(), d.path(), &local()).unwrap();
        let key = d.path().join(TLS_DIR).join(KEY_FILE);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = load_or_make(&TlsFiles::default(), d.path(), &local()).err().unwrap().to_string();
        assert!(e.contains("can be read by other users"), "{e}");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        // Files given by the user: a link at the key's path is not followed.
        let link = d.path().join("key-link.pem");
        symlink(&key, &link).unwrap();
        let files = TlsFiles { cert: Some(d.path().join(TLS_DIR).join(CERT_FILE)), key: Some(link) };
        let e = load_or_make(&files, d.path(), &local()).err().unwrap().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let files = TlsFiles { cert: files.cert, key: Some(key) };
        load_or_make(&files, d.path(), &local()).unwrap();
    }

    #[test]
    fn a_key_without_its_certificate_is_not_replaced() {
        let d = tempfile::tempdir().unwrap();
        load_or_make(&TlsFiles::default(), d.path(), &local()).unwrap();
        let key = d.path().join(TLS_DIR).join(KEY_FILE);
        let before = std::fs::read(&key).unwrap();
        std::fs::remove_file(d.path().join(TLS_DIR).join(CERT_FILE)).unwrap();
        let e = load_or_make(&TlsFiles::default(), d.path(), &local()).err().unwrap().to_string();
        assert!(e.contains("without its certificate"), "{e}");
        assert_eq!(std::fs::read(&key).unwrap(), before);
    }
}
