//! TLS between clients and a collector started with `--tls`: how a client
//! knows it reached the right collector.
//!
//! ```text
//! client                                      collector (--tls)
//!    |== TLS 1.3 handshake ======================|  certificate checked by the client:
//!    |   (wrong certificate: the client aborts;  |  its SHA-256 fingerprint is the pinned one
//!    |    nothing of clrprof's protocol is sent) |  (CLRPROF_TLS_FINGERPRINT), or a CA vouches
//!    |-- the token handshake, frames, unchanged -|  for it (CLRPROF_TLS_CA)
//! ```
//!
//! The collector makes its own key and a self-signed certificate (or loads
//! the user's) and prints the certificate's fingerprint beside the target
//! and the token. A client that pins it needs no CA; one given a CA file
//! checks the chain and the collector's name. TLS 1.3 only, with rustls'
//! `ring` provider: both ends are clrprof's.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::Arc;

/// The SHA-256 of a certificate (its DER bytes), as `openssl x509
/// -fingerprint -sha256` computes it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// The fingerprint of a DER certificate.
    pub fn of(der: &[u8]) -> Fingerprint {
        Fingerprint(Sha256::digest(der).into())
    }

    /// Reads 64 hex digits, with or without `:` between the bytes (as
    /// openssl prints them) and an optional `sha256:` or `SHA256
    /// Fingerprint=` in front.
    pub fn parse(text: &str) -> Result<Fingerprint, String> {
        let t = text.trim();
        let t = t.rsplit_once('=').map_or(t, |(_, v)| v);
        let t = t.strip_prefix("sha256:").unwrap_or(t);
        let digits: String = t.chars().filter(|c| *c != ':').collect();
        let bad = || format!("a TLS fingerprint is 64 hex digits (the SHA-256 of the collector's certificate), not {:?}", text.trim());
        if digits.len() != 64 || !digits.is_ascii() {
            return Err(bad());
        }
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&digits[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(Fingerprint(out))
    }
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::token::to_hex(&self.0))
    }
}

impl std::fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// How a client knows the collector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trust {
    /// The certificate's SHA-256 must be this (`CLRPROF_TLS_FINGERPRINT`).
    Fingerprint(Fingerprint),
    /// A CA in this PEM file must vouch for the certificate, issued to the
    /// name or address the client dials (`CLRPROF_TLS_CA`).
    CaFile(PathBuf),
}

impl Trust {
    /// The trust a client's settings give: `CLRPROF_TLS_FINGERPRINT`,
    /// else `CLRPROF_TLS_CA`; `Ok(None)` when neither is set (plain TCP).
    /// A malformed fingerprint is an error, never plain TCP.
    pub fn from_settings(fingerprint: Option<&str>, ca: Option<&str>) -> Result<Option<Trust>, String> {
        match (fingerprint.map(str::trim).filter(|s| !s.is_empty()), ca.map(str::trim).filter(|s| !s.is_empty())) {
            (Some(f), _) => Fingerprint::parse(f).map(|f| Some(Trust::Fingerprint(f))),
            (None, Some(ca)) => Ok(Some(Trust::CaFile(PathBuf::from(ca)))),
            (None, None) => Ok(None),
        }
    }
}

/// The crypto provider both ends use.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client's TLS settings for `trust` (TLS 1.3; the CA file is read
/// now).
pub fn client_config(trust: &Trust) -> Result<Arc<ClientConfig>, String> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("TLS: {e}"))?;
    let config = match trust {
        Trust::Fingerprint(f) => {
            builder.dangerous().with_custom_certificate_verifier(Arc::new(Pinned { want: *f, provider })).with_no_client_auth()
        }
        Trust::CaFile(path) => {
            let shown = path.display();
            let bytes = std::fs::read(path).map_err(|e| format!("cannot read the CA file {shown}: {e}"))?;
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(&bytes) {
                let cert = cert.map_err(|e| format!("the CA file {shown}: {e}"))?;
                roots.add(cert).map_err(|e| format!("the CA file {shown}: {e}"))?;
            }
            if roots.is_empty() {
                return Err(format!("the CA file {shown} holds no certificate (PEM)"));
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    Ok(Arc::new(config))
}

/// The name the client checks the certificate against: the host of a
/// `HOST:PORT` target (an address or a DNS name).
pub fn server_name(target: &str) -> Result<ServerName<'static>, String> {
    let host = match target.rsplit_once(':') {
        Some((h, _)) => h,
        None => target,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string()).map_err(|e| format!("{host:?} is not a name a TLS certificate can hold: {e}"))
}

/// Accepts exactly the certificate of one fingerprint (the collector's
/// self-signed one), and checks that the collector holds its key (the
/// handshake's signature).
#[derive(Debug)]
struct Pinned {
    want: Fingerprint,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let got = Fingerprint::of(end_entity.as_ref());
        if got == self.want {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the collector's certificate has the fingerprint {got}, not the expected {} (CLRPROF_TLS_FINGERPRINT)",
                self.want
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_read_as_openssl_and_clrprof_print_them() {
        let f = Fingerprint::of(b"not a certificate");
        let plain = f.to_string();
        assert_eq!(Fingerprint::parse(&plain).unwrap(), f);
        let colons: Vec<String> = f.0.iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(Fingerprint::parse(&format!("SHA256 Fingerprint={}", colons.join(":"))).unwrap(), f);
        assert_eq!(Fingerprint::parse(&format!("sha256:{plain}")).unwrap(), f);
        assert!(Fingerprint::parse(&plain[1..]).is_err());
        assert!(Fingerprint::parse(&format!("{}zz", &plain[2..])).is_err());
        assert!(Fingerprint::parse("é").is_err());
    }

    #[test]
    fn settings_pick_the_fingerprint_and_never_fall_back_to_plain_on_a_bad_one() {
        let f = Fingerprint::of(b"x").to_string();
        assert!(matches!(Trust::from_settings(Some(&f), Some("/ca.pem")), Ok(Some(Trust::Fingerprint(_)))));
        assert_eq!(Trust::from_settings(None, Some("/ca.pem")), Ok(Some(Trust::CaFile("/ca.pem".into()))));
        assert_eq!(Trust::from_settings(Some(" "), None), Ok(None));
        assert!(Trust::from_settings(Some("12ab"), None).is_err());
    }

    #[test]
    fn server_names_come_from_the_target() {
        assert!(matches!(server_name("127.0.0.1:7420"), Ok(ServerName::IpAddress(_))));
        assert!(matches!(server_name("[::1]:7420"), Ok(ServerName::IpAddress(_))));
        assert!(matches!(server_name("collector.example:7420"), Ok(ServerName::DnsName(_))));
    }
}
