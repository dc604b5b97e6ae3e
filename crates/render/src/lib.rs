//! Answers -> pictures: PNG files drawn from [`clrprof::query`] results.
//!
//! - [`canvas`]: an RGB pixel buffer, lines, rectangles, 8x8 bitmap text,
//!   PNG output.
//! - [`timeline`]: CLRProfiler's Time Line ([`render_timeline`]).

pub mod canvas;
pub mod timeline;

pub use canvas::{Canvas, Rgb};
pub use timeline::{render_timeline, LegendEntry, PlotArea, RenderError, TimelineOptions, TimelinePicture};
