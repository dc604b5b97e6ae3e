//! `clrprof --help`: the commands in groups, with a line that says where
//! to start.
//!
//! clap lists subcommands in one flat block, so the root command's help
//! template leaves that block out and puts this listing in its place. The
//! one-line descriptions still come from the commands' doc comments; only
//! the grouping lives here, and a test checks that every command is in
//! exactly one group.

use clap::Command;
use std::fmt::Write as _;

/// The groups of `clrprof --help`, in order, with their commands.
pub const GROUPS: &[(&str, &[&str])] = &[
    ("Load and inspect", &["summary", "stats", "types", "threads", "timeline", "diff", "check", "footprint", "ui"]),
    ("Allocation", &["functions", "modules", "classes", "who", "graph", "flame", "calls"]),
    ("Lifetime", &["lifetime", "ages", "survivors", "handles"]),
    ("Heap dumps", &["dumps", "dump", "dump-diff", "leaks"]),
    ("Capture", &["record", "heap-dump", "gen"]),
    ("Running processes", &["ps", "watch"]),
    ("Services", &["collect", "sessions", "ctl", "join", "cache"]),
    ("Export", &["export"]),
];

/// The line printed before the groups.
pub const START_HERE: &str = "Start here: `clrprof summary LOG` for a log's figures, `clrprof ui LOG` for every view \
in the browser, `clrprof help COMMAND` for one command's options.";

/// The root command with its subcommands listed in groups.
pub fn grouped(cmd: Command) -> Command {
    let width = cmd.get_subcommands().filter(|c| !c.is_hide_set()).map(|c| c.get_name().len()).max().unwrap_or(0);
    let mut list = String::new();
    for (heading, names) in GROUPS {
        let _ = writeln!(list, "{heading}:");
        for name in *names {
            let about = cmd
                .find_subcommand(name)
                .and_then(|c| c.get_about())
                .map(|a| a.to_string())
                .unwrap_or_default();
            let _ = writeln!(list, "  {name:<width$}  {about}");
        }
        list.push('\n');
    }
    let template = format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{START_HERE}\n\n{}\n\nOptions:\n{{options}}{{after-help}}",
        list.trim_end()
    );
    cmd.help_template(template)
}

#[cfg(test)]
mod tests {
    use super::GROUPS;
    use crate::Cli;
    use clap::CommandFactory;

    /// Every command is in exactly one group, and every grouped name is a
    /// command.
    #[test]
    fn every_command_is_in_one_group() {
        let cmd = Cli::command();
        for sub in cmd.get_subcommands().filter(|c| !c.is_hide_set()) {
            let n = GROUPS.iter().flat_map(|(_, names)| names.iter()).filter(|&&g| g == sub.get_name()).count();
            assert_eq!(n, 1, "{} is in {n} groups", sub.get_name());
        }
        for name in GROUPS.iter().flat_map(|(_, names)| names.iter()) {
            assert!(cmd.find_subcommand(name).is_some(), "{name} is not a command");
        }
    }
}
