//! Bar charts over categories: stacked (per-core bandwidth by guest, latency by segment) or
//! grouped (one bar per series side by side, e.g. DSR per task simulated vs measured).

use super::scale::Scale;
use super::{color, legend, slots, x_categories, y_axis, Fmt, Svg, BOTTOM, TOP};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BarMode {
    Stacked,
    Grouped,
}

#[derive(Debug, Clone)]
pub struct BarChart {
    pub kind: &'static str,
    pub title: String,
    pub y_label: String,
    pub y_fmt: Fmt,
    pub mode: BarMode,
    pub categories: Vec<String>,
    /// Series (stack layers or groups), in legend order.
    pub series: Vec<String>,
    /// `values[category][series]`; None = no bar.
    pub values: Vec<Vec<Option<f64>>>,
    /// A dashed horizontal reference line (e.g. the bandwidth cap), with its label.
    pub reference: Option<(f64, String)>,
    /// Fixed y range (e.g. 0..1 for ratios); otherwise 0..max.
    pub y_range: Option<(f64, f64)>,
}

impl BarChart {
    pub fn render(&self) -> String {
        let mut svg = Svg::new(self.kind, &self.title);
        let y = self.y_scale();
        y_axis(&mut svg, &y, &self.y_label, self.y_fmt);
        let (centers, slot) = slots(self.categories.len());
        for (c, &cx) in centers.iter().enumerate() {
            self.draw_category(&mut svg, c, cx, slot, &y);
        }
        x_categories(&mut svg, &self.categories, &centers);
        if let Some((v, label)) = &self.reference {
            let py = y.map(*v);
            svg.line((super::LEFT, py), (super::RIGHT, py), "#c00", 1.5, true);
            svg.text(super::RIGHT - 4.0, py - 5.0, "end", 11.0, "normal", label);
        }
        let entries: Vec<(String, &str)> = self.series.iter().enumerate().map(|(i, s)| (s.clone(), color(i))).collect();
        legend(&mut svg, &entries);
        svg.finish()
    }

    fn y_scale(&self) -> Scale {
        if let Some((lo, hi)) = self.y_range {
            return Scale::linear_exact(lo, hi, BOTTOM, TOP);
        }
        let top = self.values.iter().map(|row| self.extent(row)).fold(0.0, f64::max);
        let top = top.max(self.reference.as_ref().map_or(0.0, |r| r.0));
        Scale::linear(0.0, if top > 0.0 { top } else { 1.0 }, BOTTOM, TOP)
    }

    /// Height a category's bars reach: the stack's sum or the tallest bar of the group.
    fn extent(&self, row: &[Option<f64>]) -> f64 {
        let vals = row.iter().flatten().copied();
        match self.mode {
            BarMode::Stacked => vals.sum(),
            BarMode::Grouped => vals.fold(0.0, f64::max),
        }
    }

    fn draw_category(&self, svg: &mut Svg, category: usize, cx: f64, slot: f64, y_scale: &Scale) {
        let row = &self.values[category];
        let n = self.series.len().max(1);
        let width = (slot * 0.7).min(120.0);
        let mut base = 0.0;
        for (s, v) in row.iter().enumerate() {
            let Some(v) = *v else { continue };
            let tip = format!("{} / {}: {}", self.categories[category], self.series[s], (self.y_fmt)(v));
            match self.mode {
                BarMode::Stacked => {
                    let (top, bottom) = (y_scale.map(base + v), y_scale.map(base));
                    svg.bar(cx - width / 2.0, top, width, bottom - top, color(s), &tip);
                    base += v;
                }
                BarMode::Grouped => {
                    let w = width / n as f64;
                    let x0 = cx - width / 2.0 + w * s as f64;
                    let (top, bottom) = (y_scale.map(v), y_scale.map(0.0f64.max(y_scale.lo)));
                    svg.bar(x0, top, w * 0.92, bottom - top, color(s), &tip);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::fmt_plain;

    fn chart(mode: BarMode) -> BarChart {
        BarChart {
            kind: "bandwidth",
            title: "cores".into(),
            y_label: "bandwidth".into(),
            y_fmt: fmt_plain,
            mode,
            categories: vec!["core 0".into(), "core 1".into()],
            series: vec!["vm1".into(), "vm2".into()],
            values: vec![vec![Some(0.3), Some(0.4)], vec![None, Some(0.2)]],
            reference: Some((0.95, "cap".into())),
            y_range: None,
        }
    }

    #[test]
    fn one_rect_per_present_value() {
        for mode in [BarMode::Stacked, BarMode::Grouped] {
            let svg = chart(mode).render();
            let doc = roxmltree::Document::parse(&svg).unwrap();
            let bars: Vec<_> = doc.descendants().filter(|n| n.attribute("class") == Some("datum")).collect();
            assert_eq!(bars.len(), 3);
            assert!(bars.iter().all(|b| b.attribute("height").unwrap().parse::<f64>().unwrap() > 0.0));
        }
    }
}
