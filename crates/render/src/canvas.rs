//! An RGB pixel buffer with the few drawing operations the pictures need
//! (rectangles, lines, 8x8 bitmap text from the `font8x8` crate) and PNG
//! output (the `png` crate).

use std::io::Write;

/// A colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// White.
    pub const WHITE: Rgb = Rgb(255, 255, 255);
    /// Black.
    pub const BLACK: Rgb = Rgb(0, 0, 0);

    /// `#rrggbb`.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// Width and height of one character of text, pixels.
pub const GLYPH: u32 = 8;

/// An RGB picture.
#[derive(Clone, Debug)]
pub struct Canvas {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
}

impl Canvas {
    /// A canvas filled with `background`.
    pub fn new(width: u32, height: u32, background: Rgb) -> Canvas {
        let n = width as usize * height as usize;
        let mut pixels = Vec::with_capacity(n * 3);
        for _ in 0..n {
            pixels.extend_from_slice(&[background.0, background.1, background.2]);
        }
        Canvas { width, height, pixels }
    }

    /// Width, pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height, pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The pixel at `(x, y)` (`None` outside).
    pub fn get(&self, x: u32, y: u32) -> Option<Rgb> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = (y as usize * self.width as usize + x as usize) * 3;
        Some(Rgb(self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]))
    }

    /// Sets one pixel (ignored outside).
    #[inline]
    pub fn set(&mut self, x: i64, y: i64, c: Rgb) {
        if x < 0 || y < 0 || x >= self.width as i64 || y >= self.height as i64 {
            return;
        }
        let i = (y as usize * self.width as usize + x as usize) * 3;
        self.pixels[i] = c.0;
        self.pixels[i + 1] = c.1;
        self.pixels[i + 2] = c.2;
    }

    /// A run of pixels of one row, from `x` on, one colour per pixel
    /// (clipped).
    pub fn row_span(&mut self, x: u32, y: u32, colours: impl Iterator<Item = Rgb>) {
        if y >= self.height {
            return;
        }
        let start = (y as usize * self.width as usize) * 3;
        let row = &mut self.pixels[start..start + self.width as usize * 3];
        for (k, c) in colours.enumerate() {
            let xx = x as usize + k;
            if xx >= self.width as usize {
                break;
            }
            row[xx * 3] = c.0;
            row[xx * 3 + 1] = c.1;
            row[xx * 3 + 2] = c.2;
        }
    }

    /// Fills a rectangle (clipped).
    pub fn fill(&mut self, x: i64, y: i64, w: i64, h: i64, c: Rgb) {
        let x0 = x.max(0);
        let y0 = y.max(0);
        let x1 = (x + w).min(self.width as i64);
        let y1 = (y + h).min(self.height as i64);
        for yy in y0..y1 {
            for xx in x0..x1 {
                self.set(xx, yy, c);
            }
        }
    }

    /// A horizontal line of `len` pixels.
    pub fn hline(&mut self, x: i64, y: i64, len: i64, c: Rgb) {
        self.fill(x, y, len, 1, c);
    }

    /// A vertical line of `len` pixels.
    pub fn vline(&mut self, x: i64, y: i64, len: i64, c: Rgb) {
        self.fill(x, y, 1, len, c);
    }

    /// Text in the 8x8 font with its top left corner at `(x, y)`;
    /// characters outside ASCII are drawn as `?`. Returns the width drawn.
    pub fn text(&mut self, x: i64, y: i64, s: &str, c: Rgb) -> i64 {
        let mut cx = x;
        for ch in s.chars() {
            let code = if ch.is_ascii() && !ch.is_ascii_control() { ch as usize } else { b'?' as usize };
            let glyph = font8x8::legacy::BASIC_LEGACY[code];
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..8 {
                    if bits & (1 << col) != 0 {
                        self.set(cx + col, y + row as i64, c);
                    }
                }
            }
            cx += GLYPH as i64;
        }
        cx - x
    }

    /// Writes the picture as an 8-bit RGB PNG.
    pub fn write_png<W: Write>(&self, out: W) -> std::io::Result<()> {
        let mut enc = png::Encoder::new(out, self.width, self.height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Default);
        let mut w = enc.write_header().map_err(std::io::Error::other)?;
        w.write_image_data(&self.pixels).map_err(std::io::Error::other)?;
        w.finish().map_err(std::io::Error::other)
    }
}

/// Text cut to at most `chars` characters (with `~` at the cut).
pub fn fit(s: &str, chars: usize) -> String {
    let n = s.chars().count();
    if n <= chars {
        return s.to_string();
    }
    if chars == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(chars - 1).collect();
    out.push('~');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_and_encodes() {
        let mut c = Canvas::new(40, 20, Rgb::WHITE);
        c.fill(-5, -5, 10, 10, Rgb(1, 2, 3));
        assert_eq!(c.get(4, 4), Some(Rgb(1, 2, 3)));
        assert_eq!(c.get(5, 5), Some(Rgb::WHITE));
        assert_eq!(c.text(10, 10, "Hi", Rgb::BLACK), 16);
        let mut bytes = Vec::new();
        c.write_png(&mut bytes).unwrap();
        let dec = png::Decoder::new(&bytes[..]);
        let r = dec.read_info().unwrap();
        assert_eq!((r.info().width, r.info().height), (40, 20));
        assert_eq!(fit("abcdef", 4), "abc~");
        assert_eq!(fit("ab", 4), "ab");
    }
}
