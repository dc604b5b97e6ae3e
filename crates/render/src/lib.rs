//! Answers -> pictures: PNG files drawn from [`clrprof::query`] results.
//!
//! - [`canvas`]: an RGB pixel buffer, lines, rectangles, 8x8 bitmap text,
//!   PNG output.
//! - [`timeline`]: CLRProfiler's Time Line ([`render_timeline`]).
#![deny(missing_docs)]
// Input reaches most paths: no unwrap, expect or panic outside tests
// (`cargo clippy --lib` checks it).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod canvas;
pub mod timeline;

pub use canvas::{Canvas, Rgb};
pub use timeline::{render_timeline, CommentLabel, LegendEntry, PlotArea, RenderError, TimelineOptions, TimelinePicture};
