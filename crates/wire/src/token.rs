//! The shared secret, nonces and the MACs that prove knowledge of the
//! secret without sending it.

use crate::WireError;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// A 256-bit token. Its `Debug` output never shows the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Token([u8; 32]);

/// 32 random bytes chosen by one side of a handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nonce(pub [u8; 32]);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// Parses exactly `N` bytes of hex (either case).
pub fn from_hex<const N: usize>(text: &str, field: &'static str) -> Result<[u8; N], WireError> {
    let bad = WireError::Hex { field, digits: 2 * N };
    let t = text.as_bytes();
    if t.len() != 2 * N {
        return Err(bad);
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        match (digit(t[2 * i]), digit(t[2 * i + 1])) {
            (Some(h), Some(l)) => *o = (h << 4) | l,
            _ => return Err(bad),
        }
    }
    Ok(out)
}

impl Token {
    /// A token from its 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Token {
        Token(bytes)
    }

    /// Parses the 64 hex digits of a token (surrounding white space is
    /// ignored). The error never repeats the text.
    pub fn from_hex(text: &str) -> Result<Token, WireError> {
        from_hex::<32>(text.trim(), "token").map(Token)
    }

    /// The 64 hex digits (for `CLRPROF_TOKEN` and the token file only).
    pub fn to_hex(&self) -> String {
        to_hex(&self.0)
    }

    /// HMAC-SHA256 over `parts` (each prefixed by its length, so that no two
    /// different part lists give the same input).
    pub fn sign(&self, parts: &[&[u8]]) -> [u8; 32] {
        mac(&self.0, parts).finalize().into_bytes().into()
    }

    /// Checks `mac` against HMAC-SHA256 over `parts` in constant time.
    pub fn verify(&self, parts: &[&[u8]], mac: &[u8; 32]) -> Result<(), WireError> {
        self::mac(&self.0, parts).verify_slice(mac).map_err(|_| WireError::BadProof)
    }
}

/// One session's own 256-bit secret, which only the agent that opened the
/// session and the collector know: both derive it from the token and the
/// nonces of the session's first handshake (see
/// [`handshake::session_key`](crate::handshake::session_key)). A resume
/// proves it with a MAC made with this key, so another holder of the
/// agents' token cannot pass itself off as the session's agent. Its
/// `Debug` output never shows the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKey([u8; 32]);

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(..)")
    }
}

impl SessionKey {
    /// A key from its 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> SessionKey {
        SessionKey(bytes)
    }

    /// Parses the 64 hex digits of a key (surrounding white space is
    /// ignored). The error never repeats the text.
    pub fn from_hex(text: &str) -> Result<SessionKey, WireError> {
        from_hex::<32>(text.trim(), "session key").map(SessionKey)
    }

    /// The 64 hex digits (for the collector's key file only).
    pub fn to_hex(&self) -> String {
        to_hex(&self.0)
    }

    /// HMAC-SHA256 over `parts` with this key (parts length-prefixed, as
    /// [`Token::sign`]).
    pub fn sign(&self, parts: &[&[u8]]) -> [u8; 32] {
        mac(&self.0, parts).finalize().into_bytes().into()
    }

    /// Checks `mac` against HMAC-SHA256 over `parts` in constant time.
    pub fn verify(&self, parts: &[&[u8]], mac: &[u8; 32]) -> Result<(), WireError> {
        self::mac(&self.0, parts).verify_slice(mac).map_err(|_| WireError::BadProof)
    }
}

fn mac(key: &[u8], parts: &[&[u8]]) -> HmacSha256 {
    // HMAC takes a key of any length: this cannot fail.
    let mut m = match <HmacSha256 as Mac>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => unreachable_key(),
    };
    for p in parts {
        m.update(&(p.len() as u64).to_be_bytes());
        m.update(p);
    }
    m
}

#[cold]
fn unreachable_key() -> ! {
    // HMAC accepts keys of every length; reaching this is impossible.
    std::process::abort()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_errors() {
        let t = Token::from_bytes([0xab; 32]);
        assert_eq!(Token::from_hex(&t.to_hex()).unwrap(), t);
        assert_eq!(Token::from_hex(&format!(" {}\n", t.to_hex().to_uppercase())).unwrap(), t);
        let e = Token::from_hex("abc").unwrap_err();
        assert!(!e.to_string().contains("abc"));
        assert!(Token::from_hex(&"zz".repeat(32)).is_err());
        assert_eq!(format!("{t:?}"), "Token(..)");
    }

    #[test]
    fn macs_depend_on_key_and_every_part() {
        let a = Token::from_bytes([1; 32]);
        let b = Token::from_bytes([2; 32]);
        let m = a.sign(&[b"x", b"yz"]);
        assert!(a.verify(&[b"x", b"yz"], &m).is_ok());
        assert_eq!(b.verify(&[b"x", b"yz"], &m), Err(WireError::BadProof));
        assert!(a.verify(&[b"xy", b"z"], &m).is_err());
        assert!(a.verify(&[b"x", b"yZ"], &m).is_err());
        // A session key with the token's bytes makes the same MACs; keys
        // differ by their bytes only.
        let k = SessionKey::from_bytes([1; 32]);
        assert_eq!(k.sign(&[b"x", b"yz"]), m);
        assert_eq!(SessionKey::from_bytes([2; 32]).verify(&[b"x", b"yz"], &m), Err(WireError::BadProof));
        assert_eq!(SessionKey::from_hex(&k.to_hex()).unwrap(), k);
        assert_eq!(format!("{k:?}"), "SessionKey(..)");
        assert!(!SessionKey::from_hex("secret").unwrap_err().to_string().contains("secret"));
    }
}
