//! The three handshake lines.
//!
//! ```text
//! CLRPROF-COLLECT 1 <server nonce: 64 hex>\n            collector -> client
//! HELLO <mac: 64 hex> <fields>\n                          client -> collector
//! OK <proof: 64 hex> <session name>\n                      collector -> client
//! ```
//!
//! The fields are `key=value` pairs separated by tabs (`role`, `nonce`,
//! `pid`, `program`, `runtime`, `content` when the stream is not log
//! text, and for a resume `session`, `spool`, `spool_from`, `resume_mac`);
//! a value escapes `\\`, tab, newline and
//! carriage return as `\\`, `\t`, `\n`, `\r`. Written and read by hand, so
//! that the agent links no serialization crate.
//!
//! `mac` = HMAC(token, "hello", server nonce, field bytes as sent);
//! `proof` = HMAC(token, "collector", client nonce, server nonce).
//! A collector that does not accept the client closes the connection
//! without writing anything after its challenge.
//!
//! # Session keys and resumes
//!
//! Every profiled program holds the agents' token, so the token alone
//! cannot show that a `resume` comes from the agent whose session it
//! names. When the collector accepts a new session (roles `stream` and
//! `spooled`), both sides derive the session's own key from that first
//! handshake, with nothing more on the wire:
//!
//! ```text
//! key        = HMAC(token, "session", client nonce, server nonce, session name)
//! resume_mac = HMAC(key, "resume", server nonce, client nonce)     (64 hex, in a resume's hello)
//! ```
//!
//! The agent keeps the key in memory with its spool state (it resumes only
//! within its own process's lifetime); the collector keeps it in a file
//! beside the session's log. A `resume` hello carries `resume_mac` for the
//! challenge it answers (the server nonce is fresh per connection: a
//! recorded resume does not pass again), and the collector checks it, in
//! constant time, before it does anything to the session. Another token
//! holder knows neither nonce of the session's first handshake, so it
//! cannot make the key.
//!
//! Versioning: `resume_mac` was added within protocol version 1, as an
//! optional field (every side ignores keys it does not know). A collector
//! that knows it refuses a `resume` without a valid one, so the resume of
//! an agent from before it (or of a session stored before it, with no key
//! file) is refused and changes nothing: that agent's stored part and
//! spool stay as they were. A collector from before ignores the field.

use crate::token::{from_hex, to_hex, Nonce, SessionKey, Token};
use crate::WireError;

/// The first word of the challenge line, with the protocol version.
pub const CHALLENGE: &str = "CLRPROF-COLLECT 1";
/// The longest handshake line either side accepts, newline included.
pub const MAX_LINE: usize = 8192;

/// Why a client connects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// An agent that streams its log (a new session).
    Stream,
    /// An agent whose stream broke: its log goes on in a spool file,
    /// starting at byte `spool_from` of the session named `session`.
    Resume,
    /// An agent that could not reach the collector at start: its whole
    /// log is in the spool file.
    Spooled,
    /// `clrprof ctl` / `clrprof sessions` on the admin endpoint.
    Admin,
    /// A client that only checks its token before it starts anything
    /// (`clrprof record --target`): the collector answers `OK` naming no
    /// session and closes; nothing is made.
    Check,
}

impl Role {
    /// The word on the wire.
    pub fn word(self) -> &'static str {
        match self {
            Role::Stream => "stream",
            Role::Resume => "resume",
            Role::Spooled => "spooled",
            Role::Admin => "admin",
            Role::Check => "check",
        }
    }

    fn parse(word: &str) -> Result<Role, WireError> {
        Ok(match word {
            "stream" => Role::Stream,
            "resume" => Role::Resume,
            "spooled" => Role::Spooled,
            "admin" => Role::Admin,
            "check" => Role::Check,
            _ => return Err(WireError::Field { field: "role", expected: "stream, resume, spooled, admin or check" }),
        })
    }
}

/// What a client says about itself. Never holds the token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// Why it connects.
    pub role: Role,
    /// The client's nonce (64 hex digits), for the collector's proof.
    pub nonce: String,
    /// The profiled process's id.
    pub pid: u32,
    /// The program's name (e.g. the main assembly's file stem).
    pub program: String,
    /// The runtime's version, e.g. `8.0.4`.
    pub runtime: String,
    /// For `resume`: the session the stream belonged to.
    pub session: Option<String>,
    /// For `resume` and `spooled`: the spool file's path on the agent's machine.
    pub spool: Option<String>,
    /// For `resume`: the log's byte offset at which the spool starts.
    pub spool_from: Option<u64>,
    /// For `resume` and `spooled`: after the handshake the agent sends the
    /// spool's bytes (from its start) as `D` frames and goes on streaming,
    /// so the stored log catches up and becomes whole again.
    pub catch_up: bool,
    /// For `resume`: the proof that the client is the session's agent,
    /// 64 hex digits ([`resume_mac`]; set by [`sign_resume`]).
    pub resume_mac: Option<String>,
    /// What the stream's bytes are: CLRProfiler log text (the agent's), or
    /// a NetTrace (an EventPipe session's, `clrprof record --sampled`).
    pub content: Content,
}

/// What a stream's bytes are, and so how the collector stores them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Content {
    /// CLRProfiler log text, stored in whole lines (`<session>.log`).
    #[default]
    Log,
    /// A NetTrace (EventPipe) trace, stored byte for byte as it comes
    /// (`<session>.nettrace`).
    NetTrace,
}

impl Content {
    /// The word sent in the `content` field (absent for [`Content::Log`]).
    pub fn word(self) -> &'static str {
        match self {
            Content::Log => "log",
            Content::NetTrace => "nettrace",
        }
    }

    /// The stored file's extension.
    pub fn extension(self) -> &'static str {
        match self {
            Content::Log => "log",
            Content::NetTrace => "nettrace",
        }
    }

    fn parse(word: &str) -> Result<Content, WireError> {
        match word {
            "log" => Ok(Content::Log),
            "nettrace" => Ok(Content::NetTrace),
            _ => Err(WireError::Field { field: "content", expected: "log or nettrace" }),
        }
    }
}

fn escape(value: &str, out: &mut String) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
}

fn unescape(value: &str, field: &'static str) -> Result<String, WireError> {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('\\') => '\\',
            Some('t') => '\t',
            Some('n') => '\n',
            Some('r') => '\r',
            _ => return Err(WireError::Field { field, expected: "only \\\\, \\t, \\n and \\r escapes" }),
        });
    }
    Ok(out)
}

impl Hello {
    /// The fields as sent: `key=value` pairs separated by tabs.
    pub fn encode(&self) -> String {
        let mut s = String::new();
        let mut field = |key: &str, value: &str| {
            if !s.is_empty() {
                s.push('\t');
            }
            s.push_str(key);
            s.push('=');
            escape(value, &mut s);
        };
        field("role", self.role.word());
        field("nonce", &self.nonce);
        field("pid", &self.pid.to_string());
        field("program", &self.program);
        field("runtime", &self.runtime);
        if self.content != Content::Log {
            field("content", self.content.word());
        }
        if let Some(v) = &self.session {
            field("session", v);
        }
        if let Some(v) = &self.spool {
            field("spool", v);
        }
        if let Some(v) = self.spool_from {
            field("spool_from", &v.to_string());
        }
        if self.catch_up {
            field("catch_up", "1");
        }
        if let Some(v) = &self.resume_mac {
            field("resume_mac", v);
        }
        s
    }

    /// Reads the fields. `role` and `nonce` are required; unknown keys are
    /// ignored (a later version may add some).
    pub fn decode(text: &str) -> Result<Hello, WireError> {
        let mut role = None;
        let mut h = Hello {
            role: Role::Stream,
            nonce: String::new(),
            pid: 0,
            program: String::new(),
            runtime: String::new(),
            session: None,
            spool: None,
            spool_from: None,
            catch_up: false,
            resume_mac: None,
            content: Content::Log,
        };
        for pair in text.split('\t') {
            let (key, value) = pair.split_once('=').ok_or(WireError::Field { field: "hello", expected: "key=value pairs" })?;
            match key {
                "role" => role = Some(Role::parse(value)?),
                "nonce" => h.nonce = unescape(value, "nonce")?,
                "pid" => h.pid = value.parse().map_err(|_| WireError::Field { field: "pid", expected: "a process id" })?,
                "program" => h.program = unescape(value, "program")?,
                "runtime" => h.runtime = unescape(value, "runtime")?,
                "session" => h.session = Some(unescape(value, "session")?),
                "spool" => h.spool = Some(unescape(value, "spool")?),
                "spool_from" => {
                    h.spool_from =
                        Some(value.parse().map_err(|_| WireError::Field { field: "spool_from", expected: "a byte offset" })?)
                }
                "catch_up" => {
                    h.catch_up = match value {
                        "1" => true,
                        "0" => false,
                        _ => return Err(WireError::Field { field: "catch_up", expected: "0 or 1" }),
                    }
                }
                "resume_mac" => h.resume_mac = Some(unescape(value, "resume_mac")?),
                "content" => h.content = Content::parse(value)?,
                _ => {}
            }
        }
        h.role = role.ok_or(WireError::Field { field: "role", expected: "a role" })?;
        Ok(h)
    }
}

/// The challenge line for `nonce`.
pub fn challenge_line(nonce: &Nonce) -> String {
    format!("{CHALLENGE} {}\n", to_hex(&nonce.0))
}

fn line_text(line: &[u8]) -> Result<&str, WireError> {
    let line = line.strip_suffix(b"\n").ok_or(WireError::Line("the line does not end with a newline"))?;
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    std::str::from_utf8(line).map_err(|_| WireError::Line("the line is not UTF-8"))
}

/// Reads the server nonce from a challenge line.
pub fn parse_challenge(line: &[u8]) -> Result<Nonce, WireError> {
    let text = line_text(line)?;
    let rest = text.strip_prefix(CHALLENGE).and_then(|r| r.strip_prefix(' ')).ok_or(WireError::Expected { expected: CHALLENGE })?;
    from_hex::<32>(rest, "challenge nonce").map(Nonce)
}

/// The `HELLO` line: `hello` signed for `server` with `token`.
pub fn hello_line(token: &Token, server: &Nonce, hello: &Hello) -> Result<String, WireError> {
    let fields = hello.encode();
    let mac = token.sign(&[b"hello", &server.0, fields.as_bytes()]);
    Ok(format!("HELLO {} {fields}\n", to_hex(&mac)))
}

/// Checks a `HELLO` line against `token` and the nonce the collector sent.
/// The MAC is checked before the fields are read, in constant time.
pub fn parse_hello(line: &[u8], token: &Token, server: &Nonce) -> Result<Hello, WireError> {
    let text = line_text(line)?;
    let rest = text.strip_prefix("HELLO ").ok_or(WireError::Expected { expected: "HELLO" })?;
    let (mac, fields) = rest.split_once(' ').ok_or(WireError::Expected { expected: "HELLO <mac> <fields>" })?;
    let mac = from_hex::<32>(mac, "hello mac")?;
    token.verify(&[b"hello", &server.0, fields.as_bytes()], &mac)?;
    let hello = Hello::decode(fields)?;
    from_hex::<32>(&hello.nonce, "client nonce")?;
    Ok(hello)
}

/// The collector's `OK` line.
pub fn ok_line(token: &Token, client: &Nonce, server: &Nonce, session: &str) -> String {
    let proof = token.sign(&[b"collector", &client.0, &server.0]);
    format!("OK {} {session}\n", to_hex(&proof))
}

/// Checks the collector's `OK` line; gives the session name.
pub fn parse_ok(line: &[u8], token: &Token, client: &Nonce, server: &Nonce) -> Result<String, WireError> {
    let text = line_text(line)?;
    let rest = text.strip_prefix("OK ").ok_or(WireError::Expected { expected: "OK" })?;
    let (proof, session) = rest.split_once(' ').unwrap_or((rest, ""));
    let proof = from_hex::<32>(proof, "collector proof")?;
    token.verify(&[b"collector", &client.0, &server.0], &proof)?;
    Ok(session.to_string())
}

/// The client nonce of a `Hello` as bytes.
pub fn client_nonce(hello: &Hello) -> Result<Nonce, WireError> {
    from_hex::<32>(&hello.nonce, "client nonce").map(Nonce)
}

/// The key of the session named `session`, accepted (`OK` line) in the
/// handshake with these nonces: `HMAC(token, "session", client nonce,
/// server nonce, session name)`. Both sides compute it for the roles
/// `stream` and `spooled`; a resume keeps the key of the session's first
/// handshake.
pub fn session_key(token: &Token, client: &Nonce, server: &Nonce, session: &str) -> SessionKey {
    SessionKey::from_bytes(token.sign(&[b"session", &client.0, &server.0, session.as_bytes()]))
}

/// The resume proof for one handshake: `HMAC(key, "resume", server nonce,
/// client nonce)`.
pub fn resume_mac(key: &SessionKey, server: &Nonce, client: &Nonce) -> [u8; 32] {
    key.sign(&[b"resume", &server.0, &client.0])
}

/// Sets `hello.resume_mac` for the challenge `server` (the hello's nonce
/// must be set first: the proof covers it).
pub fn sign_resume(hello: &mut Hello, key: &SessionKey, server: &Nonce) -> Result<(), WireError> {
    let client = client_nonce(hello)?;
    hello.resume_mac = Some(to_hex(&resume_mac(key, server, &client)));
    Ok(())
}

/// Checks a resume's proof against the session's `key`, in constant time:
/// a missing or malformed `resume_mac` is a [`WireError::Field`], a wrong
/// one [`WireError::BadProof`].
pub fn verify_resume(hello: &Hello, key: &SessionKey, server: &Nonce) -> Result<(), WireError> {
    let text = hello.resume_mac.as_deref().ok_or(WireError::Field { field: "resume_mac", expected: "the session's resume proof" })?;
    let mac = from_hex::<32>(text, "resume_mac")?;
    let client = client_nonce(hello)?;
    key.verify(&[b"resume", &server.0, &client.0], &mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello() -> Hello {
        Hello {
            role: Role::Stream,
            nonce: to_hex(&[7; 32]),
            pid: 42,
            program: "my app".into(),
            runtime: "8.0.4".into(),
            session: None,
            spool: None,
            spool_from: None,
            catch_up: false,
            resume_mac: None,
            content: Content::Log,
        }
    }

    #[test]
    fn full_handshake() {
        let token = Token::from_bytes([9; 32]);
        let server = Nonce([3; 32]);
        let c = challenge_line(&server);
        assert_eq!(parse_challenge(c.as_bytes()).unwrap(), server);
        let h = hello_line(&token, &server, &hello()).unwrap();
        assert!(!h.contains(&token.to_hex()));
        let got = parse_hello(h.as_bytes(), &token, &server).unwrap();
        assert_eq!(got, hello());
        let client = client_nonce(&got).unwrap();
        let ok = ok_line(&token, &client, &server, "app_42_x");
        assert_eq!(parse_ok(ok.as_bytes(), &token, &client, &server).unwrap(), "app_42_x");
        // An impostor collector without the token fails the client's check.
        let fake = ok_line(&Token::from_bytes([1; 32]), &client, &server, "x");
        assert_eq!(parse_ok(fake.as_bytes(), &token, &client, &server), Err(WireError::BadProof));
    }

    #[test]
    fn fields_round_trip_with_escapes() {
        let mut h = hello();
        h.role = Role::Resume;
        h.program = "a\tb\\c\nd=e".into();
        h.session = Some("s_1".into());
        h.spool = Some("/tmp/x y.log".into());
        h.spool_from = Some(12345);
        let text = h.encode();
        assert!(!text.contains('\n'));
        assert!(!text.contains("catch_up"), "sent only when set: {text}");
        assert_eq!(Hello::decode(&text).unwrap(), h);
        h.catch_up = true;
        let text = h.encode();
        assert!(text.ends_with("\tcatch_up=1"), "{text}");
        assert_eq!(Hello::decode(&text).unwrap(), h);
        h.resume_mac = Some(to_hex(&[0xcd; 32]));
        let text = h.encode();
        assert!(text.ends_with(&format!("\tresume_mac={}", to_hex(&[0xcd; 32]))), "{text}");
        assert_eq!(Hello::decode(&text).unwrap(), h);
        // A stream's content: absent for log text, `content=nettrace` for
        // a trace; an unknown word is refused.
        assert!(!text.contains("content"), "{text}");
        h.content = Content::NetTrace;
        let text = h.encode();
        assert!(text.contains("\tcontent=nettrace"), "{text}");
        assert_eq!(Hello::decode(&text).unwrap(), h);
        assert!(Hello::decode("role=stream\tcontent=pcap").is_err());
        assert!(Hello::decode("role=resume\tcatch_up=yes").is_err());
        assert!(!Hello::decode("role=resume\tcatch_up=0").unwrap().catch_up);
        assert!(Hello::decode("nonce=00").is_err());
        assert!(Hello::decode("role=king").is_err());
        assert!(Hello::decode("role=stream\tpid=x").is_err());
        assert!(Hello::decode("role=stream\tprogram=a\\q").is_err());
        assert_eq!(Hello::decode("role=admin\tfuture=1").unwrap().role, Role::Admin);
        assert_eq!(Hello::decode("role=check").unwrap().role, Role::Check);
    }

    #[test]
    fn a_resume_proves_the_session_key_of_its_first_handshake() {
        let token = Token::from_bytes([9; 32]);
        let (client, server) = (Nonce([7; 32]), Nonce([3; 32]));
        // Both sides derive the key when the first OK line is exchanged.
        let key = session_key(&token, &client, &server, "app_42_x");
        assert_ne!(key, session_key(&token, &client, &server, "app_42_y"));
        assert_ne!(key, session_key(&token, &Nonce([8; 32]), &server, "app_42_x"));
        assert_ne!(key, session_key(&token, &client, &Nonce([4; 32]), "app_42_x"));
        assert_ne!(key, session_key(&Token::from_bytes([1; 32]), &client, &server, "app_42_x"));
        assert_ne!(key.to_hex(), token.to_hex());
        // A later resume, answering a new challenge with a new nonce.
        let (client2, server2) = (Nonce([17; 32]), Nonce([13; 32]));
        let mut h = hello();
        h.role = Role::Resume;
        h.nonce = to_hex(&client2.0);
        h.session = Some("app_42_x".into());
        sign_resume(&mut h, &key, &server2).unwrap();
        let line = hello_line(&token, &server2, &h).unwrap();
        let got = parse_hello(line.as_bytes(), &token, &server2).unwrap();
        assert_eq!(verify_resume(&got, &key, &server2), Ok(()));
        // Not against another challenge (a replay), not with another key,
        // not with the token, not without the field, not malformed.
        assert_eq!(verify_resume(&got, &key, &server), Err(WireError::BadProof));
        let other = session_key(&token, &Nonce([1; 32]), &Nonce([2; 32]), "app_42_x");
        assert_eq!(verify_resume(&got, &other, &server2), Err(WireError::BadProof));
        assert_eq!(verify_resume(&got, &SessionKey::from_bytes([9; 32]), &server2), Err(WireError::BadProof));
        let mut bare = got.clone();
        bare.resume_mac = None;
        assert!(matches!(verify_resume(&bare, &key, &server2), Err(WireError::Field { field: "resume_mac", .. })));
        bare.resume_mac = Some("00".into());
        assert!(matches!(verify_resume(&bare, &key, &server2), Err(WireError::Hex { .. })));
        // The proof is bound to the client nonce too.
        let mut moved = got.clone();
        moved.nonce = to_hex(&[18; 32]);
        assert_eq!(verify_resume(&moved, &key, &server2), Err(WireError::BadProof));
        // It travels inside the token-signed fields.
        let tampered = line.replace(got.resume_mac.as_deref().unwrap(), &to_hex(&[0; 32]));
        assert_eq!(parse_hello(tampered.as_bytes(), &token, &server2), Err(WireError::BadProof));
    }

    #[test]
    fn refuses_wrong_token_replay_and_tampering() {
        let token = Token::from_bytes([9; 32]);
        let server = Nonce([3; 32]);
        let h = hello_line(&Token::from_bytes([8; 32]), &server, &hello()).unwrap();
        assert_eq!(parse_hello(h.as_bytes(), &token, &server), Err(WireError::BadProof));
        // The same line against another challenge (a replay).
        let h = hello_line(&token, &server, &hello()).unwrap();
        assert_eq!(parse_hello(h.as_bytes(), &token, &Nonce([4; 32])), Err(WireError::BadProof));
        // Changed JSON.
        let tampered = h.replace("pid=42", "pid=43");
        assert_ne!(tampered, h);
        assert_eq!(parse_hello(tampered.as_bytes(), &token, &server), Err(WireError::BadProof));
        assert!(matches!(parse_hello(b"GET / HTTP/1.1\r\n", &token, &server), Err(WireError::Expected { .. })));
        assert!(parse_hello(b"HELLO 12 role=stream\n", &token, &server).is_err());
        assert!(parse_hello(b"HELLO", &token, &server).is_err());
    }
}
