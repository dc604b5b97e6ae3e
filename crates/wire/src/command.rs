//! Commands a collector sends to a connected agent.

use crate::WireError;

/// One command. Text form: `comment TEXT`, `dump`, `allocations on|off`,
/// `calls on|off`, `flush`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Write a `z` comment line with this text.
    Comment(String),
    /// Take a heap dump now.
    Dump,
    /// Allocation logging on (`true`) or off.
    Allocations(bool),
    /// Call logging on (`true`) or off.
    Calls(bool),
    /// Write everything buffered now.
    Flush,
}

fn on_off(word: &str, all: &str) -> Result<bool, WireError> {
    match word {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(WireError::Command(all.to_string())),
    }
}

impl Command {
    /// Parses the text form. A comment's text must be one line.
    pub fn parse(text: &str) -> Result<Command, WireError> {
        let (word, rest) = text.split_once(' ').unwrap_or((text, ""));
        let cmd = match word {
            "comment" if !rest.contains(['\n', '\r']) => Command::Comment(rest.to_string()),
            "dump" if rest.is_empty() => Command::Dump,
            "flush" if rest.is_empty() => Command::Flush,
            "allocations" => Command::Allocations(on_off(rest, text)?),
            "calls" => Command::Calls(on_off(rest, text)?),
            _ => return Err(WireError::Command(text.to_string())),
        };
        Ok(cmd)
    }

    /// The text form.
    pub fn text(&self) -> String {
        let oo = |b: bool| if b { "on" } else { "off" };
        match self {
            Command::Comment(t) => format!("comment {t}"),
            Command::Dump => "dump".into(),
            Command::Allocations(b) => format!("allocations {}", oo(*b)),
            Command::Calls(b) => format!("calls {}", oo(*b)),
            Command::Flush => "flush".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        for c in [
            Command::Comment("phase two starts".into()),
            Command::Comment(String::new()),
            Command::Dump,
            Command::Allocations(false),
            Command::Allocations(true),
            Command::Calls(true),
            Command::Flush,
        ] {
            assert_eq!(Command::parse(&c.text()).unwrap(), c);
        }
        for bad in ["", "dump now", "allocations maybe", "calls", "comment a\nb", "reboot"] {
            assert!(Command::parse(bad).is_err(), "{bad:?}");
        }
    }
}
