//! A plotters drawing backend that writes compact SVG into a string, for the HTML report.
//!
//! plotters lays out the charts (frame, axes, ticks, labels, legend, series) and hands this
//! backend lines, paths, rectangles, polygons and texts in pixel coordinates. plotters' own
//! `SVGBackend` formats every attribute through `format!` into a fresh `String` and escapes
//! each value char by char (about 5–14 k instructions per element, most of the report's plot
//! cost); this one writes integers and colours straight into the output, leaves out
//! attributes at their SVG default, and joins strokes of one style drawn one after the other
//! (grid lines, axis ticks) into one `<path>`. Texts are held back while strokes are being
//! joined and written after them (they never overlap a tick), so the axes of a plot are a
//! few elements instead of about forty.
use std::convert::Infallible;

use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
    FontStyle, FontTransform,
};

type DrawResult = Result<(), DrawingErrorKind<Infallible>>;

/// Font of the texts unless they say otherwise (set once on the `<svg>` element).
const FONT_FAMILY: &str = "sans-serif";
/// The size plotters' SVG backend writes for its default 12-point label font (12 / 1.24).
const FONT_SIZE: &str = "9.7";

/// What makes strokes joinable: colour, opacity (in hundredths) and width.
#[derive(Clone, Copy, PartialEq, Eq)]
struct StrokeKey {
    rgb: (u8, u8, u8),
    alpha: u32,
    width: u32,
}

/// SVG drawing into a borrowed string; the document is complete after `present`.
pub struct SvgOut<'a> {
    out: &'a mut String,
    /// The document so far, as bytes: numbers are written digit by digit, and a byte push
    /// is cheaper than a `char` push (no UTF-8 encoding); checked once, at `present`.
    doc: Vec<u8>,
    size: (u32, u32),
    /// The strokes being joined and their path data.
    stroke: Option<StrokeKey>,
    path: Vec<u8>,
    /// Text elements held back until the strokes are written.
    texts: Vec<u8>,
    closed: bool,
}

impl<'a> SvgOut<'a> {
    /// Start an SVG document of `size` pixels at the end of `out`.
    pub fn new(out: &'a mut String, size: (u32, u32)) -> Self {
        let mut doc = Vec::with_capacity(16 * 1024);
        let o = &mut doc;
        push(o, "<svg width=\"");
        push_u32(o, size.0);
        push(o, "\" height=\"");
        push_u32(o, size.1);
        push(o, "\" viewBox=\"0 0 ");
        push_u32(o, size.0);
        o.push(b' ');
        push_u32(o, size.1);
        push(o, "\" xmlns=\"http://www.w3.org/2000/svg\" font-family=\"");
        push(o, FONT_FAMILY);
        push(o, "\" font-size=\"");
        push(o, FONT_SIZE);
        push(o, "\">\n");
        SvgOut {
            out,
            doc,
            size,
            stroke: None,
            path: Vec::with_capacity(1024),
            texts: Vec::with_capacity(2048),
            closed: false,
        }
    }

    /// Write the joined strokes, then the held texts.
    fn flush(&mut self) {
        if let Some(k) = self.stroke.take() {
            let o = &mut self.doc;
            push(o, "<path fill=\"none\"");
            push_stroke(o, k);
            push(o, " d=\"");
            o.extend_from_slice(&self.path);
            push(o, "\"/>\n");
            self.path.clear();
        }
        if !self.texts.is_empty() {
            self.doc.extend_from_slice(&self.texts);
            self.texts.clear();
        }
    }

    /// One more stroked polyline: joined to the current path when its style matches.
    fn stroke(&mut self, color: BackendColor, width: u32, pts: impl Iterator<Item = BackendCoord>) {
        let k = StrokeKey {
            rgb: color.rgb,
            alpha: hundredths(color.alpha),
            width,
        };
        if self.stroke != Some(k) {
            // A different stroke: what was joined so far goes first (drawing order).
            self.flush();
            self.stroke = Some(k);
        }
        let p = &mut self.path;
        for (i, (x, y)) in pts.enumerate() {
            p.push(match i {
                0 => b'M',
                1 => b'L',
                _ => b' ',
            });
            push_i32(p, x);
            p.push(b' ');
            push_i32(p, y);
        }
    }

    /// An element other than a stroke or a text: everything held is written before it.
    fn element(&mut self) -> &mut Vec<u8> {
        self.flush();
        &mut self.doc
    }

    /// One `<tag a="v" .../>` element with integer attributes, filled or stroked in `c`.
    fn shape(&mut self, tag: &str, attrs: &[(&str, i32)], c: BackendColor, fill: bool, width: u32) {
        let o = self.element();
        o.push(b'<');
        push(o, tag);
        for (name, v) in attrs {
            o.push(b' ');
            push(o, name);
            push(o, "=\"");
            push_i32(o, *v);
            o.push(b'"');
        }
        push_paint(o, c, fill, width);
        push(o, "/>\n");
    }
}

impl DrawingBackend for SvgOut<'_> {
    type ErrorType = Infallible;

    fn get_size(&self) -> (u32, u32) {
        self.size
    }

    fn ensure_prepared(&mut self) -> DrawResult {
        Ok(())
    }

    fn present(&mut self) -> DrawResult {
        if !self.closed {
            self.flush();
            push(&mut self.doc, "</svg>\n");
            // Only `&str`s and ASCII went in: always valid (the check reads ASCII a word at
            // a time).
            if let Ok(doc) = std::str::from_utf8(&self.doc) {
                self.out.push_str(doc);
            }
            self.closed = true;
        }
        Ok(())
    }

    fn draw_pixel(&mut self, p: BackendCoord, color: BackendColor) -> DrawResult {
        self.draw_rect(p, (p.0 + 1, p.1 + 1), &color, true)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> DrawResult {
        if let Some(c) = visible(style.color()) {
            self.stroke(c, style.stroke_width(), [from, to].into_iter());
        }
        Ok(())
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> DrawResult {
        if let Some(c) = visible(style.color()) {
            self.stroke(c, style.stroke_width(), path.into_iter());
        }
        Ok(())
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        a: BackendCoord,
        z: BackendCoord,
        style: &S,
        fill: bool,
    ) -> DrawResult {
        let Some(c) = visible(style.color()) else {
            return Ok(());
        };
        let size = (z.0 - a.0, z.1 - a.1);
        let attrs = [
            ("x", a.0),
            ("y", a.1),
            ("width", size.0),
            ("height", size.1),
        ];
        self.shape("rect", &attrs, c, fill, style.stroke_width());
        Ok(())
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> DrawResult {
        let Some(c) = visible(style.color()) else {
            return Ok(());
        };
        let o = self.element();
        push(o, "<polygon");
        push_opacity(o, c.alpha);
        push(o, " fill=\"");
        push_color(o, c.rgb);
        push(o, "\" points=\"");
        for (i, (x, y)) in vert.into_iter().enumerate() {
            if i > 0 {
                o.push(b' ');
            }
            push_i32(o, x);
            o.push(b',');
            push_i32(o, y);
        }
        push(o, "\"/>\n");
        Ok(())
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> DrawResult {
        let Some(c) = visible(style.color()) else {
            return Ok(());
        };
        let r = i32::try_from(radius).unwrap_or(i32::MAX);
        let attrs = [("cx", center.0), ("cy", center.1), ("r", r)];
        self.shape("circle", &attrs, c, fill, style.stroke_width());
        Ok(())
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> DrawResult {
        let Some(c) = visible(style.color()) else {
            return Ok(());
        };
        let t = &mut self.texts;
        push(t, "<text x=\"");
        push_i32(t, pos.0);
        push(t, "\" y=\"");
        push_i32(t, pos.1);
        t.push(b'"');
        let anchor = style.anchor();
        push(
            t,
            match anchor.v_pos {
                VPos::Top => " dy=\"0.76em\"",
                VPos::Center => " dy=\"0.5ex\"",
                VPos::Bottom => " dy=\"-0.5ex\"",
            },
        );
        push(
            t,
            match anchor.h_pos {
                HPos::Left => "",
                HPos::Right => " text-anchor=\"end\"",
                HPos::Center => " text-anchor=\"middle\"",
            },
        );
        let family = style.family();
        if family.as_str() != FONT_FAMILY {
            push(t, " font-family=\"");
            push_escaped(t, family.as_str());
            t.push(b'"');
        }
        push_font_size(t, style.size() / 1.24);
        match style.style() {
            FontStyle::Normal => {}
            FontStyle::Bold => push(t, " font-weight=\"bold\""),
            other => {
                push(t, " font-style=\"");
                push(t, other.as_str());
                t.push(b'"');
            }
        }
        let angle = match style.transform() {
            FontTransform::Rotate90 => Some(90),
            FontTransform::Rotate180 => Some(180),
            FontTransform::Rotate270 => Some(270),
            _ => None,
        };
        if let Some(a) = angle {
            push(t, " transform=\"rotate(");
            push_u32(t, a);
            t.push(b',');
            push_i32(t, pos.0);
            t.push(b',');
            push_i32(t, pos.1);
            push(t, ")\"");
        }
        push_opacity(t, c.alpha);
        if c.rgb != (0, 0, 0) {
            push(t, " fill=\"");
            push_color(t, c.rgb);
            t.push(b'"');
        }
        t.push(b'>');
        push_escaped(t, text);
        push(t, "</text>\n");
        Ok(())
    }
}

/// Fill or outline of a closed shape.
/// A style's colour, unless fully transparent (then nothing is written).
fn visible(c: BackendColor) -> Option<BackendColor> {
    (c.alpha > 0.0).then_some(c)
}

fn push_paint(o: &mut Vec<u8>, c: BackendColor, fill: bool, width: u32) {
    push_opacity(o, c.alpha);
    if fill {
        push(o, " fill=\"");
        push_color(o, c.rgb);
        o.push(b'"');
    } else {
        push(o, " fill=\"none\"");
        push_stroke(
            o,
            StrokeKey {
                rgb: c.rgb,
                alpha: 100,
                width,
            },
        );
    }
}

fn push_stroke(o: &mut Vec<u8>, k: StrokeKey) {
    push_hundredths(o, k.alpha);
    push(o, " stroke=\"");
    push_color(o, k.rgb);
    o.push(b'"');
    if k.width != 1 {
        push(o, " stroke-width=\"");
        push_u32(o, k.width);
        o.push(b'"');
    }
}

fn push_opacity(o: &mut Vec<u8>, alpha: f64) {
    push_hundredths(o, hundredths(alpha));
}

/// An opacity below 1, in hundredths (1 is SVG's default and left out).
fn push_hundredths(o: &mut Vec<u8>, h: u32) {
    if h < 100 {
        push(o, " opacity=\"");
        push_fraction(o, h);
        o.push(b'"');
    }
}

fn hundredths(alpha: f64) -> u32 {
    (alpha.clamp(0.0, 1.0) * 100.0).round() as u32
}

/// `h` hundredths (below 100) as a decimal fraction: 22 → "0.22", 20 → "0.2", 5 → "0.05".
fn push_fraction(o: &mut Vec<u8>, h: u32) {
    push(o, "0.");
    let (tens, ones) = (h / 10, h % 10);
    o.push(b'0' + tens as u8);
    if ones > 0 {
        o.push(b'0' + ones as u8);
    }
}

/// A font size other than the document's, to one decimal.
fn push_font_size(o: &mut Vec<u8>, size: f64) {
    let tenths = (size * 10.0).round().max(0.0) as u32;
    let default = 97;
    if tenths != default {
        push(o, " font-size=\"");
        push_u32(o, tenths / 10);
        if tenths % 10 > 0 {
            o.push(b'.');
            o.push(b'0' + (tenths % 10) as u8);
        }
        o.push(b'"');
    }
}

fn push_color(o: &mut Vec<u8>, (r, g, b): (u8, u8, u8)) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    o.push(b'#');
    for v in [r, g, b] {
        o.push(HEX[usize::from(v >> 4)]);
        o.push(HEX[usize::from(v & 15)]);
    }
}

fn push_u32(o: &mut Vec<u8>, v: u32) {
    o.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

fn push_i32(o: &mut Vec<u8>, v: i32) {
    o.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Markup characters of a text or attribute as references (the labels are plain: the
/// common case is a copy).
fn push_escaped(o: &mut Vec<u8>, s: &str) {
    if !s.contains(['&', '<', '>', '"', '\'']) && !s.chars().any(char::is_control) {
        push(o, s);
    } else {
        push(o, &super::markup::escape(s));
    }
}

fn push(o: &mut Vec<u8>, s: &str) {
    o.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::prelude::*;

    #[test]
    fn numbers_colours_and_fractions() {
        let mut s = Vec::new();
        push_i32(&mut s, -1203);
        s.push(b' ');
        push_u32(&mut s, 0);
        s.push(b' ');
        for v in [7, 42, 900, 1000, 4_294_967_295] {
            push_u32(&mut s, v);
            s.push(b' ');
        }
        push_color(&mut s, (0xE0, 0x31, 0x0A));
        s.push(b' ');
        push_fraction(&mut s, 22);
        s.push(b' ');
        push_fraction(&mut s, 20);
        s.push(b' ');
        push_fraction(&mut s, 5);
        assert_eq!(s, b"-1203 0 7 42 900 1000 4294967295 #E0310A 0.22 0.2 0.05");
    }

    /// A chart drawn through plotters comes out as well-formed SVG: strokes of one style
    /// joined, texts after them, polygons and rectangles as they were drawn.
    #[test]
    fn a_chart_is_well_formed_and_compact() {
        let mut svg = String::new();
        {
            let root = SvgOut::new(&mut svg, (300, 100)).into_drawing_area();
            root.fill(&WHITE).unwrap();
            let mut chart = ChartBuilder::on(&root)
                .x_label_area_size(20)
                .y_label_area_size(30)
                .build_cartesian_2d(0f64..10.0, 0f64..5.0)
                .unwrap();
            chart
                .configure_mesh()
                .x_labels(3)
                .y_labels(3)
                .draw()
                .unwrap();
            chart
                .draw_series(LineSeries::new(
                    (0..10).map(|i| (f64::from(i), f64::from(i % 5))),
                    &BLUE,
                ))
                .unwrap();
            chart
                .draw_series(std::iter::once(Polygon::new(
                    vec![(1.0, 0.0), (1.0, 2.0), (2.0, 2.0), (2.0, 0.0)],
                    RED.filled(),
                )))
                .unwrap();
            root.present().unwrap();
        }
        let doc = roxmltree::Document::parse(&svg).expect("well-formed");
        let kinds: Vec<&str> = doc
            .root_element()
            .children()
            .filter(|n| n.is_element())
            .map(|n| n.tag_name().name())
            .collect();
        assert_eq!(kinds.first(), Some(&"rect"));
        assert_eq!(kinds.last(), Some(&"polygon"));
        assert!(kinds.iter().filter(|k| **k == "text").count() >= 4);
        assert!(svg.contains("fill=\"#FF0000\" points=\""));
        assert!(svg.contains("stroke=\"#0000FF\""));
        // Grid, axes and ticks: a handful of paths, not one element per line.
        assert!(
            kinds.iter().filter(|k| **k == "path").count() <= 6,
            "{kinds:?}"
        );
    }
}
