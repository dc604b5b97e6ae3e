//! The collector's token: read from a file, or made (256 random bits) and
//! kept in a new file that only its user can read (mode 0600).

use crate::CollectError;
use clrprof_wire::Token;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// A fresh random token.
pub fn random_token() -> Result<Token, CollectError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| CollectError::Invalid(format!("no random numbers from the system: {e}")))?;
    Ok(Token::from_bytes(bytes))
}

/// 32 random bytes (a handshake nonce).
pub fn random_nonce() -> Result<clrprof_wire::Nonce, CollectError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| CollectError::Invalid(format!("no random numbers from the system: {e}")))?;
    Ok(clrprof_wire::Nonce(bytes))
}

/// Reads the token in `path`. The error never shows the file's content.
pub fn read(path: &Path) -> Result<Token, CollectError> {
    let text = std::fs::read_to_string(path).map_err(CollectError::io(format!("cannot read the token file {}", path.display())))?;
    Token::from_hex(&text)
        .map_err(|_| CollectError::Invalid(format!("token file {}: expected 64 hex digits (a 256-bit token)", path.display())))
}

/// Reads the token in `path`, or makes one and writes it there (a new
/// file, mode 0600, never through a link). An existing file readable by
/// others, or owned by another user, is refused.
pub fn load_or_create(path: &Path) -> Result<(Token, bool), CollectError> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(meta) => {
            if meta.uid() != crate::files::euid() {
                return Err(CollectError::Invalid(format!(
                    "token file {} is owned by uid {}, not by the collector's user (uid {}): its owner chose the token",
                    path.display(),
                    meta.uid(),
                    crate::files::euid()
                )));
            }
            if meta.permissions().mode() & 0o077 != 0 {
                return Err(CollectError::Invalid(format!(
                    "token file {} can be read by other users (mode {:o}): chmod 600 it",
                    path.display(),
                    meta.permissions().mode() & 0o777
                )));
            }
            Ok((read(path)?, false))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let token = random_token()?;
            let mut f = crate::files::create_new(path)
                .map_err(CollectError::io(format!("cannot create the token file {}", path.display())))?;
            f.write_all(format!("{}\n", token.to_hex()).as_bytes())
                .map_err(CollectError::io(format!("cannot write the token file {}", path.display())))?;
            Ok((token, true))
        }
        Err(e) => Err(CollectError::Io { what: format!("cannot read the token file {}", path.display()), source: e }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_private_then_reread() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        let (a, made) = load_or_create(&p).unwrap();
        assert!(made);
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        let (b, made) = load_or_create(&p).unwrap();
        assert!(!made);
        assert_eq!(a, b);
        assert_ne!(a, random_token().unwrap());
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(load_or_create(&p).is_err());
        std::fs::write(dir.path().join("bad"), "secret-ish").unwrap();
        let e = read(&dir.path().join("bad")).unwrap_err().to_string();
        assert!(!e.contains("secret-ish"), "{e}");
    }
}
