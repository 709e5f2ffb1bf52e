//! Hand-written SVG charts. Written by hand because the report must be one self-contained file
//! viewable offline (no JS charting library from the net) and the charts are few and simple; the
//! Rust plotting crates (plotters) add a large dependency tree for what is ~500 lines here.
//!
//! Every data mark (bar, box, line, point) has the class `datum` and a `<title>` tooltip, so
//! that tests (and people hovering) can tell data from decoration.

pub mod bars;
pub mod boxplot;
pub mod histogram;
pub mod line;
pub mod scale;
pub mod spans;
pub mod tail;

use scale::Scale;
use std::fmt::Write;

/// Okabe-Ito colour-blind-safe palette.
pub const PALETTE: [&str; 8] = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#7F7F7F", "#000000"];

pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// A value formatter for axis labels and tooltips.
pub type Fmt = fn(f64) -> String;

/// Canvas and plot-area geometry shared by every chart.
pub const WIDTH: f64 = 820.0;
pub const HEIGHT: f64 = 380.0;
pub const LEFT: f64 = 76.0;
pub const RIGHT: f64 = 580.0;
pub const TOP: f64 = 40.0;
pub const BOTTOM: f64 = 320.0;
const LEGEND_X: f64 = 596.0;

/// Escape text for XML content and attribute values (the codebase's one escaper).
pub use rtvirt_model::xml::escape as esc;

/// An SVG document being written.
pub struct Svg {
    out: String,
}

impl Svg {
    /// Start a chart of the given kind with its title drawn at the top.
    pub fn new(kind: &str, title: &str) -> Svg {
        let mut out = String::new();
        let _ = write!(out, r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{}" "#, esc(kind));
        let _ = write!(
            out,
            r#"viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{}" "#,
            esc(title)
        );
        let _ = write!(out, r#"font-family="sans-serif">"#);
        let _ = write!(out, r#"<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#);
        let mut svg = Svg { out };
        svg.text(WIDTH / 2.0, 22.0, "middle", 15.0, "bold", title);
        svg
    }

    pub fn raw(&mut self, markup: &str) {
        self.out.push_str(markup);
    }

    /// A data rectangle with a tooltip.
    pub fn bar(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, tip: &str) {
        let (w, h) = (w.max(0.5), h.max(0.5));
        let _ = write!(self.out, r#"<rect class="datum" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" "#);
        let _ = write!(self.out, r#"fill="{fill}"><title>{}</title></rect>"#, esc(tip));
    }

    /// A decorative rectangle (frames, legend swatches).
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: &str) {
        let _ = write!(
            self.out,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{fill}" stroke="{stroke}"/>"#
        );
    }

    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: &str, width: f64, dash: bool) {
        let dash = if dash { r#" stroke-dasharray="5 4""# } else { "" };
        let _ = write!(self.out, r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" "#);
        let _ = write!(self.out, r#"stroke="{stroke}" stroke-width="{width}"{dash}/>"#);
    }

    /// A data polyline with a tooltip (the series name).
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, tip: &str) {
        let mut d = String::new();
        for (i, (x, y)) in points.iter().enumerate() {
            let _ = write!(d, "{}{x:.1},{y:.1}", if i == 0 { "M" } else { " L" });
        }
        let _ = write!(self.out, r#"<path class="datum" d="{d}" fill="none" stroke="{stroke}" stroke-width="2" "#);
        let _ = write!(self.out, r#"stroke-linejoin="round"><title>{}</title></path>"#, esc(tip));
    }

    /// A data point with a tooltip.
    pub fn point(&mut self, x: f64, y: f64, r: f64, fill: &str, tip: &str) {
        let _ = write!(
            self.out,
            r#"<circle class="datum" cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{fill}"><title>{}</title></circle>"#,
            esc(tip)
        );
    }

    /// A data marker of the style's shape; a tooltip when `tip` is not empty.
    pub fn marker(&mut self, x: f64, y: f64, style: &Style, tip: &str) {
        let class = if tip.is_empty() { "" } else { r#" class="datum""# };
        let title = if tip.is_empty() { String::new() } else { format!("<title>{}</title>", esc(tip)) };
        let c = style.color;
        let _ = match style.marker {
            Marker::Circle => {
                write!(self.out, r#"<circle{class} cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{c}">{title}</circle>"#)
            }
            Marker::Square => {
                let (left, top) = (x - 5.0, y - 5.0);
                let _ = write!(self.out, r#"<rect{class} x="{left:.1}" y="{top:.1}" width="10" height="10" "#);
                write!(self.out, r#"fill="none" stroke="{c}" stroke-width="2">{title}</rect>"#)
            }
        };
    }

    /// A data polyline in a style (dashed or solid) with a tooltip (the series name).
    pub fn styled_polyline(&mut self, points: &[(f64, f64)], style: &Style, tip: &str) {
        let mut d = String::new();
        for (i, (x, y)) in points.iter().enumerate() {
            let _ = write!(d, "{}{x:.1},{y:.1}", if i == 0 { "M" } else { " L" });
        }
        let dash = if style.dashed { r#" stroke-dasharray="6 4""# } else { "" };
        let color = style.color;
        let _ = write!(self.out, r#"<path class="datum" d="{d}" fill="none" stroke="{color}" stroke-width="2" "#);
        let _ = write!(self.out, r#"stroke-linejoin="round"{dash}><title>{}</title></path>"#, esc(tip));
    }

    pub fn text(&mut self, x: f64, y: f64, anchor: &str, size: f64, weight: &str, text: &str) {
        let _ = write!(self.out, r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}" font-size="{size}" "#);
        let _ = write!(self.out, r##"font-weight="{weight}" fill="#222">{}</text>"##, esc(text));
    }

    /// Text in a series' colour (labels of points and curves).
    pub fn colored_text(&mut self, x: f64, y: f64, anchor: &str, fill: &str, text: &str) {
        let _ = write!(self.out, r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}" font-size="11" "#);
        let _ = write!(self.out, r#"font-weight="bold" fill="{fill}">{}</text>"#, esc(text));
    }

    /// Text rotated about its anchor point (y-axis titles, crowded category labels).
    pub fn text_rotated(&mut self, x: f64, y: f64, angle: f64, anchor: &str, text: &str) {
        let _ = write!(self.out, r#"<text x="{x:.1}" y="{y:.1}" transform="rotate({angle} {x:.1} {y:.1})" "#);
        let _ = write!(self.out, r##"text-anchor="{anchor}" font-size="12" fill="#222">{}</text>"##, esc(text));
    }

    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }
}

/// Frame, horizontal grid lines and labelled ticks of a y axis, plus its title.
pub fn y_axis(svg: &mut Svg, y_scale: &Scale, label: &str, fmt: Fmt) {
    svg.rect(LEFT, TOP, RIGHT - LEFT, BOTTOM - TOP, "none", "#888");
    for t in y_scale.ticks() {
        let py = y_scale.map(t.value);
        svg.line((LEFT, py), (RIGHT, py), if t.major { "#ddd" } else { "#f0f0f0" }, 1.0, false);
        if t.major {
            svg.text(LEFT - 6.0, py + 4.0, "end", 11.0, "normal", &crate::units::tidy(&fmt(t.value)));
        }
    }
    svg.text_rotated(18.0, (TOP + BOTTOM) / 2.0, -90.0, "middle", label);
}

/// Vertical grid lines and labelled ticks of a numeric x axis, plus its title.
pub fn x_axis(svg: &mut Svg, x_scale: &Scale, label: &str, fmt: Fmt) {
    for t in x_scale.ticks() {
        let px = x_scale.map(t.value);
        svg.line((px, TOP), (px, BOTTOM), if t.major { "#ddd" } else { "#f0f0f0" }, 1.0, false);
        if t.major {
            svg.text(px, BOTTOM + 16.0, "middle", 11.0, "normal", &crate::units::tidy(&fmt(t.value)));
        }
    }
    svg.text((LEFT + RIGHT) / 2.0, BOTTOM + 40.0, "middle", 12.0, "normal", label);
}

/// Category labels under a categorical x axis (rotated when crowded, shortened when long).
pub fn x_categories(svg: &mut Svg, names: &[String], centers: &[f64]) {
    let crowded = names.len() > 6
        || names.iter().any(|n| n.chars().count() * 7 > ((RIGHT - LEFT) / names.len().max(1) as f64) as usize);
    for (name, &cx) in names.iter().zip(centers) {
        let short = shorten(name, if crowded { 22 } else { 40 });
        if crowded {
            svg.text_rotated(cx, BOTTOM + 14.0, -20.0, "end", &short);
        } else {
            svg.text(cx, BOTTOM + 18.0, "middle", 12.0, "normal", &short);
        }
    }
}

/// Legend in the right-hand column: colour swatch and name per series.
pub fn legend(svg: &mut Svg, entries: &[(String, &'static str)]) {
    let styled: Vec<(String, Style)> = entries.iter().map(|(n, c)| (n.clone(), Style::swatch(c))).collect();
    styled_legend(svg, &styled);
}

/// How a series is drawn: its colour, a dashed or solid line, and the shape of its markers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Style {
    pub color: &'static str,
    pub dashed: bool,
    pub marker: Marker,
    /// Legend shows a filled square (bars, boxes) instead of a line sample.
    pub swatch: bool,
}

impl Style {
    /// A solid line with round markers in palette colour `i`.
    pub fn nth(i: usize) -> Style {
        Style { color: color(i), dashed: false, marker: Marker::Circle, swatch: false }
    }
    fn swatch(color: &'static str) -> Style {
        Style { color, dashed: false, marker: Marker::Circle, swatch: true }
    }
}

/// Marker shapes: filled circles, and hollow squares drawn larger so that a point under another
/// stays visible (measured over simulated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
}

/// Legend in the right-hand column: per series its line sample (dash, marker) or swatch, and name.
pub fn styled_legend(svg: &mut Svg, entries: &[(String, Style)]) {
    for (i, (name, style)) in entries.iter().enumerate() {
        let y = TOP + 8.0 + i as f64 * 20.0;
        if y > HEIGHT - 10.0 {
            svg.text(LEGEND_X, y, "start", 11.0, "normal", &format!("... and {} more", entries.len() - i));
            break;
        }
        if style.swatch {
            svg.rect(LEGEND_X, y - 9.0, 12.0, 12.0, style.color, "none");
        } else {
            svg.line((LEGEND_X - 4.0, y - 3.0), (LEGEND_X + 16.0, y - 3.0), style.color, 2.0, style.dashed);
            svg.marker(LEGEND_X + 6.0, y - 3.0, style, "");
        }
        svg.text(LEGEND_X + 22.0, y + 1.0, "start", 12.0, "normal", &shorten(name, 30));
    }
}

/// `text` cut to at most `max` characters with an ellipsis.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let cut: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Centers of `count` equal slots across the plot area, and the slot width.
pub fn slots(count: usize) -> (Vec<f64>, f64) {
    let w = (RIGHT - LEFT) / count.max(1) as f64;
    ((0..count).map(|i| LEFT + w * (i as f64 + 0.5)).collect(), w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(esc(r#"a<b & "c">'"#), "a&lt;b &amp; &quot;c&quot;&gt;&#39;");
    }

    #[test]
    fn svg_is_well_formed_xml() {
        let mut s = Svg::new("test", "A <title> & more");
        s.bar(1.0, 2.0, 3.0, 4.0, "red", "x < y");
        s.polyline(&[(0.0, 0.0), (1.0, 1.0)], "blue", "series \"1\"");
        let text = s.finish();
        let doc = roxmltree::Document::parse(&text).expect("well-formed");
        assert_eq!(doc.descendants().filter(|n| n.attribute("class") == Some("datum")).count(), 2);
    }
}
