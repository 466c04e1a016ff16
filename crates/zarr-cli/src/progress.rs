//! Progress bars: on a terminal only, never with `--quiet`.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::Global;

/// A bar counting to `len` with `message` in front, hidden when stderr is not a terminal or
/// `--quiet` was given.
pub(crate) fn bar(global: Global, len: u64, message: &str) -> ProgressBar {
    if global.quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let style = ProgressStyle::with_template(
        "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} ({eta} left)",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_message(message.to_owned());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Print a note to stderr unless `--quiet` (for what is not a result: where output went,
/// what was skipped).
pub(crate) fn note(global: Global, text: &str) {
    if !global.quiet {
        eprintln!("{text}");
    }
}
