//! The random token every request must carry (as notebook servers do).

use std::fmt;

/// A random token: 32 lowercase hex digits from the operating system's
/// random source.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A fresh random token.
    pub fn random() -> Result<Token, getrandom::Error> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)?;
        Ok(Token(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// A token with a given text (tests and benchmarks).
    pub fn from_text(text: &str) -> Token {
        Token(text.to_string())
    }

    /// The token's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `given` is this token; the comparison takes the same time
    /// wherever the first difference is.
    pub fn matches(&self, given: &str) -> bool {
        let a = self.0.as_bytes();
        let b = given.as_bytes();
        if a.len() != b.len() {
            return false;
        }
        a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

/// The `token` parameter of a query string, if any (no decoding: the token
/// is hex).
pub fn from_query(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|kv| kv.strip_prefix("token="))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_tokens_differ_and_match_themselves_only() {
        let a = Token::random().unwrap();
        let b = Token::random().unwrap();
        assert_eq!(a.as_str().len(), 32);
        assert_ne!(a, b);
        assert!(a.matches(a.as_str()));
        assert!(!a.matches(b.as_str()));
        assert!(!a.matches(""));
        assert!(!a.matches(&a.as_str()[..31]));
    }

    #[test]
    fn token_is_read_from_the_query() {
        assert_eq!(from_query(Some("a=1&token=abc&b=2")), Some("abc"));
        assert_eq!(from_query(Some("xtoken=abc")), None);
        assert_eq!(from_query(None), None);
    }
}
