//! Line charts: exceedance curves (log x, log y), DSR versus rho, time series. Series may be
//! drawn as straight segments between points or as a step function, with optional markers, a
//! style of their own (colour, dash, marker shape), labelled points (max, p99.99) and a label
//! beside their first point.

use super::scale::Scale;
use super::{styled_legend, x_axis, y_axis, Fmt, Style, Svg, BOTTOM, LEFT, RIGHT, TOP};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Draw as a step function (horizontal, then vertical) instead of straight segments.
    pub step: bool,
    /// Mark each point with a dot (with a tooltip).
    pub markers: bool,
    /// Colour, dash and marker shape; None: the palette colour of its position, solid, circles.
    pub style: Option<Style>,
    /// Points drawn with a marker and a text label beside them: (x, y, label).
    pub labelled: Vec<(f64, f64, String)>,
    /// Text written beside the series' first point (direct labelling of curves; at the low end
    /// of an x axis curves usually differ most).
    pub curve_label: Option<String>,
}

#[derive(Debug, Clone)]
pub struct LineChart {
    pub kind: &'static str,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_log: bool,
    pub y_log: bool,
    pub x_fmt: Fmt,
    pub y_fmt: Fmt,
    /// Fixed y range (e.g. 0..1 for ratios, 1e-6..1 for exceedance); otherwise from the data.
    pub y_range: Option<(f64, f64)>,
    pub series: Vec<Series>,
}

impl LineChart {
    pub fn render(&self) -> String {
        let mut svg = Svg::new(self.kind, &self.title);
        let (x, y) = self.scales();
        y_axis(&mut svg, &y, &self.y_label, self.y_fmt);
        x_axis(&mut svg, &x, &self.x_label, self.x_fmt);
        let styles: Vec<Style> =
            self.series.iter().enumerate().map(|(i, s)| s.style.unwrap_or_else(|| Style::nth(i))).collect();
        for (s, style) in self.series.iter().zip(&styles) {
            self.draw_series(&mut svg, s, style, &x, &y);
        }
        let mut labels = LabelPlacer::default();
        for (s, style) in self.series.iter().zip(&styles) {
            self.draw_labels(&mut svg, s, style, &x, &y, &mut labels);
        }
        let entries: Vec<(String, Style)> =
            self.series.iter().zip(&styles).map(|(s, st)| (s.name.clone(), *st)).collect();
        styled_legend(&mut svg, &entries);
        svg.finish()
    }

    fn scales(&self) -> (Scale, Scale) {
        let pts =
            || self.series.iter().flat_map(|s| s.points.iter().copied().chain(s.labelled.iter().map(|l| (l.0, l.1))));
        let (xmin, xmax) = min_max(pts().map(|p| p.0));
        let (ymin, ymax) = self.y_range.unwrap_or_else(|| min_max(pts().map(|p| p.1)));
        let x = if self.x_log { Scale::log(xmin, xmax, LEFT, RIGHT) } else { Scale::linear(xmin, xmax, LEFT, RIGHT) };
        let y = match (self.y_log, self.y_range) {
            (true, Some((lo, hi))) => Scale::log_decades(lo, hi, BOTTOM, TOP),
            (true, None) => Scale::log(ymin, ymax, BOTTOM, TOP),
            (false, Some((lo, hi))) => Scale::linear_exact(lo, hi, BOTTOM, TOP),
            (false, None) => Scale::linear(ymin.min(0.0), ymax, BOTTOM, TOP),
        };
        (x, y)
    }

    fn draw_series(&self, svg: &mut Svg, series: &Series, style: &Style, x_scale: &Scale, y_scale: &Scale) {
        let px: Vec<(f64, f64)> = series.points.iter().map(|&(a, b)| (x_scale.map(a), y_scale.map(b))).collect();
        let path = if series.step { step_path(&px) } else { px.clone() };
        if path.len() >= 2 {
            svg.styled_polyline(&path, style, &series.name);
        }
        if series.markers || path.len() < 2 {
            for (&(a, b), &(cx, cy)) in series.points.iter().zip(&px) {
                svg.marker(cx, cy, style, &self.tip(&series.name, a, b));
            }
        }
    }

    /// The labelled points (max, p99.99) and the curve label of a series, placed so that no
    /// label overlaps another label or a labelled point's marker.
    fn draw_labels(
        &self,
        svg: &mut Svg,
        series: &Series,
        style: &Style,
        x_scale: &Scale,
        y_scale: &Scale,
        placer: &mut LabelPlacer,
    ) {
        for (a, b, label) in &series.labelled {
            let (cx, cy) = (x_scale.map(*a), y_scale.map(*b));
            let ring = Style { marker: super::Marker::Square, ..*style };
            svg.marker(cx, cy, &ring, &format!("{}: {label}", series.name));
            let anchor = if cx > RIGHT - 110.0 { "end" } else { "start" };
            let lx = if anchor == "end" { cx - 8.0 } else { cx + 8.0 };
            let ly = placer.place(lx, cy, anchor, label);
            svg.colored_text(lx, ly + 4.0, anchor, style.color, label);
        }
        if let (Some(label), Some(&(a, b))) = (&series.curve_label, series.points.first()) {
            let px = x_scale.map(a);
            let (lx, anchor) = if px - LEFT > 45.0 { (px - 8.0, "end") } else { (px + 8.0, "start") };
            let ly = placer.place(lx, y_scale.map(b), anchor, label);
            svg.colored_text(lx, ly + 4.0, anchor, style.color, label);
        }
    }

    fn tip(&self, name: &str, a: f64, b: f64) -> String {
        format!("{name}: {} = {}, {} = {}", self.x_label, (self.x_fmt)(a), self.y_label, (self.y_fmt)(b))
    }
}

/// Boxes of the text labels already drawn (x from, x to, y centre): a new label keeps its x and
/// moves down or up in steps until it overlaps none of them.
#[derive(Default)]
struct LabelPlacer {
    taken: Vec<(f64, f64, f64)>,
}

impl LabelPlacer {
    /// The y centre for a label of `text` anchored at (x, wanted) ("start" or "end").
    fn place(&mut self, x: f64, wanted: f64, anchor: &str, text: &str) -> f64 {
        const GAP: f64 = 13.0;
        let width = text.chars().count() as f64 * 6.5;
        let (x0, x1) = if anchor == "end" { (x - width, x) } else { (x, x + width) };
        let free = |y: f64| self.taken.iter().all(|&(a, b, t)| b < x0 || a > x1 || (t - y).abs() >= GAP);
        let candidates = (0..40).flat_map(|k| [wanted + GAP * k as f64, wanted - GAP * k as f64]);
        let y = candidates.filter(|y| (TOP + 6.0..=BOTTOM + 2.0).contains(y)).find(|&y| free(y)).unwrap_or(wanted);
        self.taken.push((x0, x1, y));
        y
    }
}

/// Points of a step function through `points`: each value holds until the next x.
fn step_path(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &pt) in points.iter().enumerate() {
        if i > 0 {
            out.push((pt.0, points[i - 1].1));
        }
        out.push(pt);
    }
    out
}

/// (min, max) of finite values, (0, 1) when there are none.
pub fn min_max(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) =
        values.filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo.is_finite() {
        (lo, hi)
    } else {
        (0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{fmt_ns, fmt_plain};

    #[test]
    fn draws_one_path_per_series_and_markers() {
        let chart = LineChart {
            kind: "cdf",
            title: "t".into(),
            x_label: "latency".into(),
            y_label: "F".into(),
            x_log: true,
            y_log: false,
            x_fmt: fmt_ns,
            y_fmt: fmt_plain,
            y_range: Some((0.0, 1.0)),
            series: vec![
                Series {
                    name: "a".into(),
                    points: vec![(1e3, 0.0), (2e3, 0.5), (1e4, 1.0)],
                    step: true,
                    markers: true,
                    ..Series::default()
                },
                Series {
                    name: "b".into(),
                    points: vec![(5e3, 0.0), (6e4, 1.0)],
                    labelled: vec![(6e4, 1.0, "max 60us".into())],
                    ..Series::default()
                },
            ],
        };
        let svg = chart.render();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let paths =
            doc.descendants().filter(|n| n.has_tag_name("path") && n.attribute("class") == Some("datum")).count();
        let dots =
            doc.descendants().filter(|n| n.has_tag_name("circle") && n.attribute("class") == Some("datum")).count();
        assert_eq!((paths, dots), (2, 3));
        let marked =
            doc.descendants().filter(|n| n.has_tag_name("rect") && n.attribute("class") == Some("datum")).count();
        assert_eq!(marked, 1, "the labelled point has its marker");
        assert!(svg.contains(">max 60us</text>"));
        assert_eq!(step_path(&[(0.0, 0.0), (1.0, 1.0)]), vec![(0.0, 0.0), (1.0, 0.0), (1.0, 1.0)]);
    }
}
