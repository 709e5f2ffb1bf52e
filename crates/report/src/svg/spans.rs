//! Rows of spans on one time axis: each row a small timeline (e.g. one late wake-up from its
//! programmed expiry, its causes laid out where they happened), each span coloured by its series.

use super::scale::Scale;
use super::{color, legend, shorten, x_axis, Fmt, Svg, BOTTOM, LEFT, RIGHT, TOP};

#[derive(Debug, Clone)]
pub struct SpanChart {
    pub kind: &'static str,
    pub title: String,
    pub x_label: String,
    pub x_fmt: Fmt,
    /// Series (colours), in legend order.
    pub series: Vec<String>,
    pub rows: Vec<SpanRow>,
}

/// One timeline: its label (drawn above it) and its spans.
#[derive(Debug, Clone)]
pub struct SpanRow {
    pub label: String,
    pub spans: Vec<Span>,
}

/// `[from, to)` on the x axis, of series `series`, with a tooltip.
#[derive(Debug, Clone)]
pub struct Span {
    pub from: f64,
    pub to: f64,
    pub series: usize,
    pub tip: String,
}

impl SpanChart {
    pub fn render(&self) -> String {
        let mut svg = Svg::new(self.kind, &self.title);
        let end = self.rows.iter().flat_map(|r| r.spans.iter().map(|s| s.to)).fold(0.0, f64::max);
        let x = Scale::linear(0.0, if end > 0.0 { end } else { 1.0 }, LEFT, RIGHT);
        svg.rect(LEFT, TOP, RIGHT - LEFT, BOTTOM - TOP, "none", "#888");
        x_axis(&mut svg, &x, &self.x_label, self.x_fmt);
        let height = (BOTTOM - TOP) / self.rows.len().max(1) as f64;
        for (i, row) in self.rows.iter().enumerate() {
            let top = TOP + height * i as f64;
            svg.text(LEFT + 4.0, top + 12.0, "start", 10.0, "normal", &shorten(&row.label, 80));
            let (bar_top, bar_height) = (top + 15.0, (height - 19.0).max(3.0));
            for s in &row.spans {
                let (x0, x1) = (x.map(s.from.max(0.0)), x.map(s.to.max(s.from)));
                svg.bar(x0, bar_top, x1 - x0, bar_height, color(s.series), &s.tip);
            }
        }
        let entries: Vec<(String, &str)> = self.series.iter().enumerate().map(|(i, s)| (s.clone(), color(i))).collect();
        legend(&mut svg, &entries);
        svg.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::fmt_ns;

    #[test]
    fn one_rect_per_span_placed_on_the_shared_axis() {
        let span = |from, to, series| Span { from, to, series, tip: format!("{from}-{to}") };
        let chart = SpanChart {
            kind: "timelines",
            title: "t".into(),
            x_label: "since expiry".into(),
            x_fmt: fmt_ns,
            series: vec!["thread".into(), "irq".into()],
            rows: vec![
                SpanRow { label: "a".into(), spans: vec![span(0.0, 500.0, 0), span(500.0, 1000.0, 1)] },
                SpanRow { label: "b".into(), spans: vec![span(0.0, 250.0, 1)] },
            ],
        };
        let svg = chart.render();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let marks: Vec<_> = doc.descendants().filter(|n| n.attribute("class") == Some("datum")).collect();
        assert_eq!(marks.len(), 3);
        let x = |n: &roxmltree::Node| n.attribute("x").unwrap().parse::<f64>().unwrap();
        let w = |n: &roxmltree::Node| n.attribute("width").unwrap().parse::<f64>().unwrap();
        assert!((x(&marks[0]) - LEFT).abs() < 0.1, "the expiry is at the left edge");
        assert!((x(&marks[1]) - (x(&marks[0]) + w(&marks[0]))).abs() < 0.2, "causes follow each other");
        assert!((w(&marks[2]) - w(&marks[0]) / 2.0).abs() < 0.2, "one time scale for every row");
        let y = |n: &roxmltree::Node| n.attribute("y").unwrap().parse::<f64>().unwrap();
        assert!(y(&marks[2]) > y(&marks[0]), "a row per timeline");
    }
}
