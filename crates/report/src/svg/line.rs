//! Line charts: CDFs (log x), DSR versus rho, time series. Series may be drawn as straight
//! segments between points or as a step function, with optional markers.

use super::scale::Scale;
use super::{color, legend, x_axis, y_axis, Fmt, Svg, BOTTOM, LEFT, RIGHT, TOP};

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Draw as a step function (horizontal, then vertical) instead of straight segments.
    pub step: bool,
    /// Mark each point with a dot (with a tooltip).
    pub markers: bool,
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
    /// Fixed y range (e.g. 0..1 for ratios); otherwise from the data.
    pub y_range: Option<(f64, f64)>,
    pub series: Vec<Series>,
}

impl LineChart {
    pub fn render(&self) -> String {
        let mut svg = Svg::new(self.kind, &self.title);
        let (x, y) = self.scales();
        y_axis(&mut svg, &y, &self.y_label, self.y_fmt);
        x_axis(&mut svg, &x, &self.x_label, self.x_fmt);
        for (i, s) in self.series.iter().enumerate() {
            self.draw_series(&mut svg, s, color(i), &x, &y);
        }
        let entries: Vec<(String, &str)> =
            self.series.iter().enumerate().map(|(i, s)| (s.name.clone(), color(i))).collect();
        legend(&mut svg, &entries);
        svg.finish()
    }

    fn scales(&self) -> (Scale, Scale) {
        let pts = || self.series.iter().flat_map(|s| s.points.iter());
        let (xmin, xmax) = min_max(pts().map(|p| p.0));
        let (ymin, ymax) = self.y_range.unwrap_or_else(|| min_max(pts().map(|p| p.1)));
        let x = if self.x_log { Scale::log(xmin, xmax, LEFT, RIGHT) } else { Scale::linear(xmin, xmax, LEFT, RIGHT) };
        let y = match (self.y_log, self.y_range) {
            (true, _) => Scale::log(ymin, ymax, BOTTOM, TOP),
            (false, Some((lo, hi))) => Scale::linear_exact(lo, hi, BOTTOM, TOP),
            (false, None) => Scale::linear(ymin.min(0.0), ymax, BOTTOM, TOP),
        };
        (x, y)
    }

    fn draw_series(&self, svg: &mut Svg, s: &Series, col: &str, x: &Scale, y: &Scale) {
        let px: Vec<(f64, f64)> = s.points.iter().map(|&(a, b)| (x.map(a), y.map(b))).collect();
        let path = if s.step { step_path(&px) } else { px.clone() };
        if path.len() >= 2 {
            svg.polyline(&path, col, &s.name);
        }
        if s.markers || path.len() < 2 {
            for (&(a, b), &(cx, cy)) in s.points.iter().zip(&px) {
                svg.point(
                    cx,
                    cy,
                    3.0,
                    col,
                    &format!(
                        "{}: {} = {}, {} = {}",
                        s.name,
                        self.x_label,
                        (self.x_fmt)(a),
                        self.y_label,
                        (self.y_fmt)(b)
                    ),
                );
            }
        }
    }
}

/// Points of a step function through `p`: each value holds until the next x.
fn step_path(p: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(p.len() * 2);
    for (i, &pt) in p.iter().enumerate() {
        if i > 0 {
            out.push((pt.0, p[i - 1].1));
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
                },
                Series { name: "b".into(), points: vec![(5e3, 0.0), (6e4, 1.0)], step: false, markers: false },
            ],
        };
        let svg = chart.render();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let paths =
            doc.descendants().filter(|n| n.has_tag_name("path") && n.attribute("class") == Some("datum")).count();
        let dots = doc.descendants().filter(|n| n.has_tag_name("circle")).count();
        assert_eq!((paths, dots), (2, 3));
        assert_eq!(step_path(&[(0.0, 0.0), (1.0, 1.0)]), vec![(0.0, 0.0), (1.0, 0.0), (1.0, 1.0)]);
    }
}
