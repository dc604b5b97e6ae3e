//! CLRProfiler's Time Line as a picture.
//!
//! Layout: a title line; a lane of comment labels; the plot (address bands
//! on the vertical axis, highest addresses on top, bands separated by a
//! grey line; time on the horizontal axis; one pixel per grid cell, free
//! space white); under it three lanes of GC ticks (gen 2 blue, gen 1 green,
//! gen 0 red, as CLRProfiler colours them) and the time axis in ms; address
//! labels on the left; the legend of the top types (by average bytes
//! occupied in the window, [`clrprof::query::timeline::GridType::bytes`]) on
//! the right. Comments are dashed green lines across the plot, their labels
//! in two lanes above it, never overlapping (cut, or dropped, where
//! comments crowd). Addresses read as hex with `_` between groups of four
//! digits (`0x01F4_000C_2C00`); legend sizes carry their unit (KiB, MiB).
//!
//! With [`ColumnAxis::LogOrder`] (a log whose heap changes all happened at
//! one tick) the horizontal axis is the heap changes in log order instead
//! of time: the title says so, the axis counts changes, and GCs and
//! comments sit where they came in that order.
//!
//! Each legend type gets a colour of a fixed palette of distinct colours;
//! the other types get muted colours derived from their type id, never
//! equal to a legend colour.

use super::canvas::{fit, Canvas, Rgb, GLYPH};
use clrprof::model::Model;
use clrprof::model::TickIndex;
use clrprof::query::timeline::{
    address_axis, changes_before, comment_marks, gc_marks, grid_on, ColumnAxis, Grid, GridSpec,
};
use serde::Serialize;

/// What to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineOptions {
    /// Picture width, pixels.
    pub width: u32,
    /// Picture height, pixels.
    pub height: u32,
    /// Window start, ms.
    pub from_ms: f64,
    /// Window end, ms.
    pub to_ms: f64,
    /// Address range `[low, high)` (`None`: all).
    pub address: Option<(u64, u64)>,
    /// A title (e.g. the log's name).
    pub title: String,
    /// What the horizontal axis stands for: time, or the heap changes in
    /// log order (for a log whose changes all happened at one tick).
    pub axis: ColumnAxis,
}

/// Smallest picture drawn.
pub const MIN_SIZE: (u32, u32) = (320, 200);
/// Largest picture drawn.
pub const MAX_SIZE: (u32, u32) = (16384, 16384);

/// Why no picture was drawn.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RenderError {
    /// Width or height outside [`MIN_SIZE`]..=[`MAX_SIZE`].
    #[error("a picture of {width}x{height} pixels cannot be drawn: between {}x{} and {}x{} pixels", MIN_SIZE.0, MIN_SIZE.1, MAX_SIZE.0, MAX_SIZE.1)]
    Size {
        /// Asked width.
        width: u32,
        /// Asked height.
        height: u32,
    },
    /// The window ends before it starts.
    #[error("the time window ends ({to_ms} ms) before it starts ({from_ms} ms)")]
    Window {
        /// Start, ms.
        from_ms: f64,
        /// End, ms.
        to_ms: f64,
    },
}

/// The legend's heading: each line's figure is the bytes the type's live
/// objects occupy, averaged over the picture's window (not an object size).
pub const LEGEND_TITLE: &str = "Types (bytes live, average)";

/// A legend line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LegendEntry {
    /// The type id.
    pub type_id: i32,
    /// Its name.
    pub name: String,
    /// Average bytes occupied in the window.
    pub bytes: u64,
    /// Its colour, `#rrggbb`.
    pub colour: String,
}

/// Where the plot is in the picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PlotArea {
    /// Left, pixels.
    pub x: u32,
    /// Top, pixels.
    pub y: u32,
    /// Width (= grid columns).
    pub width: u32,
    /// Height (grid rows plus band separators).
    pub height: u32,
}

/// A comment's label as drawn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CommentLabel {
    /// Left, pixels.
    pub x: i64,
    /// Top, pixels.
    pub y: i64,
    /// Width, pixels.
    pub width: i64,
    /// The text drawn (cut with `~` where the next label begins).
    pub text: String,
    /// The comment's line, pixels.
    pub line_x: i64,
}

/// A drawn Time Line.
#[derive(Clone, Debug)]
pub struct TimelinePicture {
    /// The pixels.
    pub canvas: Canvas,
    /// The grid drawn.
    pub grid: Grid,
    /// The bands' count limit the grid was computed with.
    pub max_bands: usize,
    /// The legend, top type first.
    pub legend: Vec<LegendEntry>,
    /// Types in the window not in the legend.
    pub other_types: usize,
    /// Where the plot is.
    pub plot: PlotArea,
    /// The comment labels drawn (comments whose label found no room are
    /// left out; their lines are drawn).
    pub comment_labels: Vec<CommentLabel>,
}

/// Distinct colours for the legend types (in order).
pub const PALETTE: [Rgb; 18] = [
    Rgb(230, 25, 75),
    Rgb(60, 180, 75),
    Rgb(255, 225, 25),
    Rgb(0, 130, 200),
    Rgb(245, 130, 48),
    Rgb(145, 30, 180),
    Rgb(70, 240, 240),
    Rgb(240, 50, 230),
    Rgb(210, 245, 60),
    Rgb(250, 190, 212),
    Rgb(0, 128, 128),
    Rgb(220, 190, 255),
    Rgb(170, 110, 40),
    Rgb(128, 0, 0),
    Rgb(170, 255, 195),
    Rgb(128, 128, 0),
    Rgb(255, 215, 180),
    Rgb(0, 0, 128),
];

const GEN_COLOURS: [Rgb; 3] = [Rgb(200, 0, 0), Rgb(0, 150, 0), Rgb(0, 0, 210)];
const COMMENT: Rgb = Rgb(50, 205, 50);
const GREY: Rgb = Rgb(190, 190, 190);
const DARK: Rgb = Rgb(60, 60, 60);
const BAND_SEPARATOR: u32 = 2;

/// A muted colour for a type outside the legend.
fn other_colour(type_id: i32) -> Rgb {
    let mut h = (type_id as u32).wrapping_mul(2654435761);
    h ^= h >> 15;
    // Mix a hue with grey: (c + 2 * 150) / 3 per channel.
    let c = [(h & 0xFF) as u16, ((h >> 8) & 0xFF) as u16, ((h >> 16) & 0xFF) as u16];
    let mut rgb = Rgb(((c[0] + 300) / 3) as u8, ((c[1] + 300) / 3) as u8, ((c[2] + 300) / 3) as u8);
    while PALETTE.contains(&rgb) || rgb == Rgb::WHITE || rgb == GREY {
        rgb.0 = rgb.0.wrapping_add(1);
    }
    rgb
}

/// An address as hex in `groups` groups of four digits joined by `_`, the
/// way a .NET engineer reads a pointer: `0x01F4_000C_2C00`.
fn format_address(a: u64, groups: usize) -> String {
    let parts: Vec<String> = (0..groups.max(1)).rev().map(|g| format!("{:04X}", (a >> (16 * g)) & 0xFFFF)).collect();
    format!("0x{}", parts.join("_"))
}

/// A byte count with its unit, 1,024 bytes to the KiB: `999 B`,
/// `12 KiB`, `3.4 MiB`, `1.2 GiB`.
fn short_bytes(b: u64) -> String {
    let mut v = b as f64;
    if b < 1024 {
        return format!("{b} B");
    }
    for unit in ["KiB", "MiB", "GiB"] {
        v /= 1024.0;
        if v < 1024.0 || unit == "GiB" {
            return if v < 10.0 { format!("{v:.1} {unit}") } else { format!("{v:.0} {unit}") };
        }
    }
    format!("{b} B")
}

/// Places comment labels (line `x`, text) in `lanes` (their `y`), each
/// label right of its line and inside `[left, right)`, or left of its line
/// when there is no room on the right. A label goes into the first lane
/// that is free at its start; when none is, the lane whose last label ends
/// first gets it, and that last label is cut to end before it (or dropped
/// when fewer than three characters would be left). Labels never overlap.
pub(crate) fn place_labels(marks: &[(i64, &str)], left: i64, right: i64, lanes: &[i64], g: i64) -> Vec<CommentLabel> {
    let mut placed: Vec<CommentLabel> = Vec::new();
    // Per lane: the indices in `placed` of its labels, left to right.
    let mut in_lane: Vec<Vec<usize>> = vec![Vec::new(); lanes.len()];
    let end = |l: &CommentLabel| l.x + l.width;
    for &(x, text) in marks {
        let len = text.chars().count() as i64;
        if len == 0 || lanes.is_empty() {
            continue;
        }
        let right_room = (right - (x + 2)) / g;
        let (lx, chars) = if right_room >= len.min(3) {
            (x + 2, len.min(right_room))
        } else {
            let chars = len.min((x - 2 - left) / g);
            (x - 2 - chars * g, chars)
        };
        if chars < len.min(3) {
            continue;
        }
        let lane_end = |k: usize| in_lane[k].iter().map(|&i| end(&placed[i])).max().unwrap_or(i64::MIN);
        let lane = match (0..lanes.len()).find(|&k| lane_end(k).saturating_add(g) <= lx) {
            Some(k) => k,
            None => {
                let k = (0..lanes.len()).min_by_key(|&k| lane_end(k)).unwrap_or(0);
                // Cut (or drop) the lane's labels that reach into this one.
                for &i in &in_lane[k] {
                    if end(&placed[i]) + g > lx {
                        let keep = (lx - g - placed[i].x) / g;
                        if keep >= 3 {
                            placed[i].text = fit(&placed[i].text, keep as usize);
                            placed[i].width = placed[i].text.chars().count() as i64 * g;
                        } else {
                            placed[i].text.clear();
                            placed[i].width = 0;
                        }
                    }
                }
                k
            }
        };
        let text = fit(text, chars as usize);
        placed.push(CommentLabel { x: lx, y: lanes[lane], width: text.chars().count() as i64 * g, text, line_x: x });
        in_lane[lane].push(placed.len() - 1);
    }
    placed.retain(|l| !l.text.is_empty());
    placed
}

/// A time label: ms with as many decimals as the step needs.
fn format_ms(ms: f64, step: f64) -> String {
    let decimals = if step >= 1.0 { 0 } else { (-step.log10()).ceil().clamp(0.0, 6.0) as usize };
    format!("{ms:.decimals$} ms")
}

/// A step of 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !raw.is_finite() || raw <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= raw {
            return m * p;
        }
    }
    10.0 * p
}

/// Draws the Time Line (see the module documentation).
pub fn render_timeline(model: &Model, opts: &TimelineOptions) -> Result<TimelinePicture, RenderError> {
    let (w, h) = (opts.width, opts.height);
    if w < MIN_SIZE.0 || h < MIN_SIZE.1 || w > MAX_SIZE.0 || h > MAX_SIZE.1 {
        return Err(RenderError::Size { width: w, height: h });
    }
    if opts.from_ms.is_nan() || opts.to_ms.is_nan() || opts.to_ms < opts.from_ms {
        return Err(RenderError::Window { from_ms: opts.from_ms, to_ms: opts.to_ms });
    }
    let g = GLYPH as i64;
    // Address labels: enough groups of four hex digits for every grain.
    let max_addr = model.samples().grains().grains_in_order().last().map_or(0, |(a, _)| a);
    let groups = if max_addr >> 48 != 0 {
        4
    } else if max_addr >> 32 != 0 {
        3
    } else {
        2
    };
    let addr_chars = groups * 5 + 1;
    let left = (addr_chars as i64 + 1) * g + 8;
    let legend_w = ((w as i64) / 3).min(36 * g + 24);
    // Title, then two lanes of comment labels.
    let lanes = [2 * g - 2, 3 * g + 1];
    let top = 4 * g + 6;
    let bottom = 3 * 10 + 2 * g + 14;
    let px = left;
    let pw = w as i64 - left - legend_w - 8;
    let py = top;
    let ph = h as i64 - top - bottom;
    if pw < 16 || ph < 16 {
        return Err(RenderError::Size { width: w, height: h });
    }
    let (pw, ph) = (pw as u32, ph as u32);

    // The grid: bands first, then as many rows as fit between separators.
    let max_bands = (ph as usize / 12).max(1);
    let axis = address_axis(model, opts.address, max_bands);
    let separators = axis.bands.len().saturating_sub(1) as u32 * BAND_SEPARATOR;
    let rows = ph.saturating_sub(separators).max(1);
    let spec = GridSpec { columns: pw, rows, from_ms: opts.from_ms, to_ms: opts.to_ms };
    let grid = grid_on(model, &axis, &spec, opts.axis);
    let changes = model.samples().len() as f64;

    // Colours.
    let legend_lines = ((ph as i64 - 2 * g) / 12).max(1) as usize;
    let legend_n = grid.types.len().min(PALETTE.len()).min(legend_lines);
    let legend: Vec<LegendEntry> = grid.types[..legend_n]
        .iter()
        .zip(PALETTE)
        .map(|(t, c)| LegendEntry { type_id: t.type_id, name: t.name.clone(), bytes: t.bytes, colour: c.hex() })
        .collect();
    let colour_of = |t: i32| -> Rgb {
        if t == 0 {
            return Rgb::WHITE;
        }
        match grid.types[..legend_n].iter().position(|x| x.type_id == t) {
            Some(i) => PALETTE[i],
            None => other_colour(t),
        }
    };
    let mut cache: std::collections::HashMap<i32, Rgb> = std::collections::HashMap::new();
    for t in &grid.types {
        cache.insert(t.type_id, colour_of(t.type_id));
    }
    let colour = |t: i32| -> Rgb { cache.get(&t).copied().unwrap_or(Rgb::WHITE) };

    let mut c = Canvas::new(w, h, Rgb::WHITE);

    // Title.
    let bands = format!("{} {}", axis.bands.len(), if axis.bands.len() == 1 { "band" } else { "bands" });
    let title = match opts.axis {
        ColumnAxis::Time => format!(
            "Time Line {}  {:.0}-{:.0} ms  {bands}, {} KB per row",
            opts.title, opts.from_ms, opts.to_ms, grid.grains_per_row
        ),
        ColumnAxis::LogOrder => format!(
            "Time Line {}  heap changes in log order (the log's clock does not move: all at {:.0} ms)  {bands}, {} KB per row",
            opts.title, opts.to_ms, grid.grains_per_row
        ),
    };
    c.text(8, 4, &fit(&title, (w as usize - 16) / GLYPH as usize), Rgb::BLACK);

    // The plot.
    let mut y = py;
    let mut row_y = Vec::with_capacity(grid.rows.len());
    let ncol = grid.columns as usize;
    for (i, row) in grid.rows.iter().enumerate() {
        if i > 0 && grid.rows[i - 1].band != row.band {
            c.fill(px, y, pw as i64, BAND_SEPARATOR as i64, GREY);
            y += BAND_SEPARATOR as i64;
        }
        if y >= py + ph as i64 {
            break;
        }
        let line = &grid.cells[i * ncol..(i + 1) * ncol];
        c.row_span(px as u32, y as u32, line.iter().map(|&t| colour(t)));
        row_y.push(y);
        y += 1;
    }
    // Frame.
    c.hline(px - 1, py - 1, pw as i64 + 2, DARK);
    c.hline(px - 1, py + ph as i64, pw as i64 + 2, DARK);
    c.vline(px - 1, py - 1, ph as i64 + 2, DARK);
    c.vline(px + pw as i64, py - 1, ph as i64 + 2, DARK);

    let span = (opts.to_ms - opts.from_ms).max(f64::MIN_POSITIVE);
    let x_of_fraction = |f: f64| -> i64 { px + (f * pw as f64).floor().clamp(0.0, pw as f64 - 1.0) as i64 };
    let x_of = |ms: f64| -> i64 { x_of_fraction((ms - opts.from_ms) / span) };
    // Where an event of a tick (a GC, a comment) goes.
    let x_of_event = |tick: u32, ms: f64| -> i64 {
        match opts.axis {
            ColumnAxis::Time => x_of(ms),
            ColumnAxis::LogOrder => x_of_fraction(changes_before(model, TickIndex(tick)) as f64 / changes.max(1.0)),
        }
    };

    // Comments: dashed lines across the plot, labels above it.
    let comments = comment_marks(model, opts.from_ms, opts.to_ms);
    let xs: Vec<i64> = comments.iter().map(|cm| x_of_event(cm.tick, cm.ms)).collect();
    let marks: Vec<(i64, &str)> = xs.iter().zip(&comments).map(|(&x, cm)| (x, cm.text.as_str())).collect();
    let comment_labels = place_labels(&marks, px, w as i64 - 2, &lanes, g);
    for &x in &xs {
        for yy in (py..py + ph as i64).step_by(2) {
            c.set(x, yy, COMMENT);
        }
        c.vline(x, lanes[1] + g, py - lanes[1] - g, COMMENT);
    }
    for l in &comment_labels {
        c.vline(l.line_x, l.y, lanes[1] + g - l.y, COMMENT);
        c.text(l.x, l.y, &l.text, Rgb(0, 120, 0));
    }

    // GC lanes: gen 2 on top.
    let lanes_y = py + ph as i64 + 4;
    for lane in 0..3i64 {
        let gen = 2 - lane;
        let ly = lanes_y + lane * 10;
        let label = format!("gen{gen}");
        c.text(px - 4 - label.len() as i64 * g, ly + 1, &label, GEN_COLOURS[gen as usize]);
        c.hline(px, ly + 9, pw as i64, Rgb(230, 230, 230));
    }
    for m in gc_marks(model, opts.from_ms, opts.to_ms) {
        let gen = m.generation.clamp(0, 2) as i64;
        let ly = lanes_y + (2 - gen) * 10;
        c.vline(x_of_event(m.tick, m.ms), ly, 9, GEN_COLOURS[gen as usize]);
    }

    // Time axis (or heap changes, counted).
    let ay = lanes_y + 32;
    c.hline(px, ay, pw as i64, DARK);
    let label_px = 12 * g;
    let (first, last, unit_span) = match opts.axis {
        ColumnAxis::Time => (opts.from_ms, opts.to_ms, span),
        ColumnAxis::LogOrder => {
            let caption = "changes";
            c.text(px - 2 * g - caption.len() as i64 * g, ay + 6, caption, DARK);
            (0.0, changes, changes.max(1.0))
        }
    };
    let step = nice_step(unit_span * label_px as f64 / pw as f64).max(if opts.axis == ColumnAxis::LogOrder { 1.0 } else { 0.0 });
    let mut t = (first / step).ceil() * step;
    let mut last_end: Option<i64> = None;
    let mut guard = 0;
    while t <= last && guard < 10_000 {
        let x = x_of_fraction((t - first) / unit_span);
        c.vline(x, ay, 4, DARK);
        let s = match opts.axis {
            ColumnAxis::Time => format_ms(t, step),
            ColumnAxis::LogOrder => format!("{t:.0}"),
        };
        let lw = s.len() as i64 * g;
        let lx = (x - lw / 2).max(px - 4).min(w as i64 - lw - 2);
        if last_end.map_or(true, |e| lx > e + g) {
            c.text(lx, ay + 6, &s, Rgb::BLACK);
            last_end = Some(lx + lw);
        }
        t += step;
        guard += 1;
    }

    // Address labels: each band's highest and lowest rows, and between
    // them every 40 pixels or so.
    let mut last_label_y: Option<i64> = None;
    for (i, row) in grid.rows.iter().enumerate() {
        let Some(&ry) = row_y.get(i) else { break };
        let first_of_band = i == 0 || grid.rows[i - 1].band != row.band;
        let last_of_band = grid.rows.get(i + 1).map_or(true, |n| n.band != row.band);
        let addr = if last_of_band { row.low } else { row.high };
        let gap = last_label_y.map_or(i64::MAX, |l| ry - l);
        let due = first_of_band || last_of_band || gap >= 40;
        if due && gap >= g + 2 {
            let s = format_address(addr, groups);
            c.text(px - 4 - s.len() as i64 * g, (ry - g / 2).max(py - g / 2), &s, Rgb::BLACK);
            c.hline(px - 3, ry, 3, DARK);
            last_label_y = Some(ry);
        }
    }

    // Legend.
    let lx = px + pw as i64 + 12;
    let chars = ((w as i64 - lx - 12 - 2 * g) / g).max(0) as usize;
    c.text(lx, py, &fit(LEGEND_TITLE, chars + 2), Rgb::BLACK);
    let mut ly = py + 2 * g;
    for (e, col) in legend.iter().zip(PALETTE) {
        c.fill(lx, ly, g, g, col);
        let s = format!("{:>7} {}", short_bytes(e.bytes), e.name);
        c.text(lx + g + 4, ly, &fit(&s, chars), Rgb::BLACK);
        ly += 12;
    }
    let other_types = grid.types.len() - legend_n;
    if other_types > 0 && ly + g <= h as i64 {
        let noun = if other_types == 1 { "type" } else { "types" };
        c.text(lx, ly, &fit(&format!("+ {other_types} other {noun}"), chars + 2), DARK);
    }

    Ok(TimelinePicture {
        canvas: c,
        grid,
        max_bands,
        legend,
        other_types,
        plot: PlotArea { x: px as u32, y: py as u32, width: pw, height: ph },
        comment_labels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(format_address(0x1234_5678, 2), "0x1234_5678");
        assert_eq!(format_address(0x213_0022_9400, 3), "0x0213_0022_9400");
        assert_eq!(nice_step(3.2), 5.0);
        assert_eq!(nice_step(0.013), 0.02);
        assert_eq!(format_ms(0.5, 0.1), "0.5 ms");
        assert_eq!(short_bytes(1_234_567), "1.2 MiB");
        assert_eq!(short_bytes(888_000), "867 KiB");
        assert_eq!(short_bytes(1000), "1000 B");
        assert_eq!(short_bytes(5 << 30), "5.0 GiB");
        for t in 0..5000 {
            let c = other_colour(t);
            assert!(!PALETTE.contains(&c) && c != Rgb::WHITE);
        }
    }

    #[test]
    fn too_small_and_bad_window() {
        let m = clrprof::model::load(b"i 5\n", &Default::default()).unwrap();
        let mut o = TimelineOptions {
            width: 10,
            height: 10,
            from_ms: 0.0,
            to_ms: 5.0,
            address: None,
            title: String::new(),
            axis: ColumnAxis::Time,
        };
        assert!(matches!(render_timeline(&m, &o), Err(RenderError::Size { .. })));
        o.width = 400;
        o.height = 300;
        o.to_ms = -1.0;
        assert!(matches!(render_timeline(&m, &o), Err(RenderError::Window { .. })));
        o.to_ms = 5.0;
        let p = render_timeline(&m, &o).unwrap();
        assert_eq!((p.canvas.width(), p.canvas.height()), (400, 300));
        assert!(p.legend.is_empty());
    }

    /// The legend's heading is drawn as [`LEGEND_TITLE`] says: the
    /// average bytes live, not the "(avg size)" that read as an object
    /// size. Compared pixel by pixel with the text drawn alone.
    #[test]
    fn legend_heading_says_bytes_live() {
        assert!(LEGEND_TITLE.contains("bytes live") && !LEGEND_TITLE.contains("size"));
        let m = clrprof::model::load(b"i 5\n", &Default::default()).unwrap();
        let o = TimelineOptions {
            width: 900,
            height: 300,
            from_ms: 0.0,
            to_ms: 5.0,
            address: None,
            title: String::new(),
            axis: ColumnAxis::Time,
        };
        let p = render_timeline(&m, &o).unwrap();
        let (lx, y) = ((p.plot.x + p.plot.width) as i64 + 12, p.plot.y as i64);
        let band = |title: &str| {
            let mut c = Canvas::new(p.canvas.width(), p.canvas.height(), Rgb::WHITE);
            c.text(lx, y, title, Rgb::BLACK);
            c
        };
        let black = |c: &Canvas| -> Vec<(u32, u32)> {
            (y as u32..y as u32 + GLYPH)
                .flat_map(|yy| (lx as u32..c.width()).map(move |xx| (xx, yy)))
                .filter(|&(xx, yy)| c.get(xx, yy) == Some(Rgb::BLACK))
                .collect()
        };
        let drawn = black(&p.canvas);
        assert!(!drawn.is_empty());
        assert_eq!(drawn, black(&band(LEGEND_TITLE)));
        assert_ne!(drawn, black(&band("Types (avg size)")));
    }

    /// Crowded comments: labels never overlap, stay inside the picture,
    /// and use both lanes; a comment at the right edge is labelled on the
    /// left of its line.
    #[test]
    fn comment_labels_do_not_overlap() {
        let g = GLYPH as i64;
        let marks: Vec<(i64, String)> =
            [100, 104, 110, 130, 131, 132, 300, 590].iter().map(|&x| (x, format!("Checkpoint at {x} px"))).collect();
        let marks: Vec<(i64, &str)> = marks.iter().map(|(x, t)| (*x, t.as_str())).collect();
        let labels = place_labels(&marks, 80, 600, &[14, 25], g);
        assert!(labels.iter().any(|l| l.y == 14) && labels.iter().any(|l| l.y == 25), "{labels:?}");
        for (i, a) in labels.iter().enumerate() {
            assert!(a.x >= 80 && a.x + a.width <= 600, "{a:?}");
            assert!(a.text.chars().count() >= 3);
            for b in &labels[i + 1..] {
                let apart = a.y != b.y || a.x + a.width < b.x || b.x + b.width < a.x;
                assert!(apart, "{a:?} overlaps {b:?}");
            }
        }
        let edge = labels.iter().find(|l| l.line_x == 590).expect("the last comment is labelled");
        assert!(edge.x + edge.width <= 590, "{edge:?}");
        // Room enough: whole labels.
        let labels = place_labels(&[(100, "one"), (400, "two")], 80, 600, &[14, 25], g);
        assert_eq!(labels.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(), ["one", "two"]);
        assert!(labels.iter().all(|l| l.y == 14));
    }
}
