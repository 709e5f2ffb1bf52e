//! Box plots per configuration (Garcia Alvarado 2019-3 show latency this way).
//!
//! Results carry percentiles, not samples, so the box and whiskers are derived from them:
//! - box: lower quartile p25 to upper quartile p75, line at the median p50 (when p25 is not in
//!   the result, the box starts at the median and the chart says so);
//! - whiskers (Tukey's 1.5 IQR rule restricted to known values): the upper whisker reaches the
//!   largest known value among p90, p95, p99, p99.9, p99.99 and max that is within
//!   p75 + 1.5 x IQR; the lower whisker reaches min if it is within p25 - 1.5 x IQR, else p25;
//! - outliers: every known value beyond a whisker is drawn as a point labelled with its name
//!   (e.g. "p99.9", "max"), so the tail stays visible instead of being hidden.

use super::line::min_max;
use super::scale::Scale;
use super::{color, slots, x_categories, y_axis, Fmt, Svg, BOTTOM, TOP};
use rtvirt_model::stats::Summary;

#[derive(Debug, Clone, PartialEq)]
pub struct BoxStats {
    pub name: String,
    pub q1: Option<f64>,
    pub median: f64,
    pub q3: f64,
    pub whisker_lo: f64,
    pub whisker_hi: f64,
    /// Known values beyond the whiskers: (name, value).
    pub outliers: Vec<(String, f64)>,
}

impl BoxStats {
    pub fn from_summary(name: &str, summary: &Summary) -> BoxStats {
        let (median, q3) = (summary.p50 as f64, summary.p75 as f64);
        let q1 = summary.p25.map(|v| v as f64);
        let iqr = q1.map_or(2.0 * (q3 - median), |q1| q3 - q1);
        let (fence_lo, fence_hi) = (q1.unwrap_or(median) - 1.5 * iqr, q3 + 1.5 * iqr);
        let upper = [
            ("p90", summary.p90),
            ("p95", summary.p95),
            ("p99", summary.p99),
            ("p99.9", summary.p999),
            ("p99.99", summary.p9999),
            ("max", summary.max),
        ];
        let whisker_hi = upper.iter().map(|&(_, v)| v as f64).filter(|&v| v <= fence_hi).fold(q3, f64::max);
        let mut outliers: Vec<(String, f64)> = Vec::new();
        for (label, v) in upper.iter().map(|&(l, v)| (l, v as f64)).filter(|&(_, v)| v > whisker_hi) {
            match outliers.last_mut() {
                Some(last) if last.1 == v => last.0 = label.to_string(),
                _ => outliers.push((label.to_string(), v)),
            }
        }
        let min = summary.min as f64;
        let whisker_lo = if min >= fence_lo { min } else { q1.unwrap_or(median) };
        if min < whisker_lo {
            outliers.insert(0, ("min".into(), min));
        }
        BoxStats { name: name.to_string(), q1, median, q3, whisker_lo, whisker_hi, outliers }
    }

    fn values(&self) -> impl Iterator<Item = f64> + '_ {
        [self.whisker_lo, self.whisker_hi, self.median, self.q3].into_iter().chain(self.outliers.iter().map(|o| o.1))
    }
}

#[derive(Debug, Clone)]
pub struct BoxChart {
    pub title: String,
    pub y_label: String,
    pub y_fmt: Fmt,
    pub boxes: Vec<BoxStats>,
}

impl BoxChart {
    pub fn render(&self) -> String {
        let mut svg = Svg::new("boxplot", &self.title);
        let y = self.y_scale();
        y_axis(&mut svg, &y, &self.y_label, self.y_fmt);
        let (centers, slot) = slots(self.boxes.len());
        for (i, (b, &cx)) in self.boxes.iter().zip(&centers).enumerate() {
            self.draw_box(&mut svg, b, cx, (slot * 0.45).min(90.0), color(i), &y);
        }
        let names: Vec<String> = self.boxes.iter().map(|b| b.name.clone()).collect();
        x_categories(&mut svg, &names, &centers);
        if self.boxes.iter().any(|b| b.q1.is_none()) {
            svg.text(
                super::LEFT + 4.0,
                TOP - 6.0,
                "start",
                10.0,
                "normal",
                "box from p50 where p25 is not in the result",
            );
        }
        svg.finish()
    }

    /// Log scale when the values span more than a factor of 30, else linear from 0.
    fn y_scale(&self) -> Scale {
        let (lo, hi) = min_max(self.boxes.iter().flat_map(|b| b.values()));
        if lo > 0.0 && hi / lo > 30.0 {
            Scale::log(lo, hi, BOTTOM, TOP)
        } else {
            Scale::linear(0.0, hi, BOTTOM, TOP)
        }
    }

    fn draw_box(&self, svg: &mut Svg, stats: &BoxStats, cx: f64, w: f64, col: &str, y_scale: &Scale) {
        let f = self.y_fmt;
        let bottom = stats.q1.unwrap_or(stats.median);
        svg.line((cx, y_scale.map(stats.whisker_lo)), (cx, y_scale.map(bottom)), "#333", 1.2, false);
        svg.line((cx, y_scale.map(stats.q3)), (cx, y_scale.map(stats.whisker_hi)), "#333", 1.2, false);
        for v in [stats.whisker_lo, stats.whisker_hi] {
            svg.line((cx - w / 4.0, y_scale.map(v)), (cx + w / 4.0, y_scale.map(v)), "#333", 1.2, false);
        }
        let q1 = stats.q1.map_or("not in result".to_string(), f);
        let tip = format!(
            "{}: median {}, quartiles {} .. {}, whiskers {} .. {}",
            stats.name,
            f(stats.median),
            q1,
            f(stats.q3),
            f(stats.whisker_lo),
            f(stats.whisker_hi)
        );
        let (top, bot) = (y_scale.map(stats.q3), y_scale.map(bottom));
        svg.bar(cx - w / 2.0, top, w, bot - top, col, &tip);
        svg.raw(&format!(
            r##"<rect x="{:.1}" y="{top:.1}" width="{w:.1}" height="{:.1}" fill="none" stroke="#333"/>"##,
            cx - w / 2.0,
            (bot - top).max(0.5)
        ));
        svg.line(
            (cx - w / 2.0, y_scale.map(stats.median)),
            (cx + w / 2.0, y_scale.map(stats.median)),
            "white",
            2.5,
            false,
        );
        let mut last_label_y = f64::INFINITY;
        for (label, v) in stats.outliers.iter().rev() {
            let py = y_scale.map(*v);
            svg.point(cx, py, 3.5, col, &format!("{}: {label} = {}", stats.name, f(*v)));
            if py - last_label_y >= 11.0 || last_label_y == f64::INFINITY {
                svg.text(cx + 7.0, py + 4.0, "start", 10.0, "normal", &format!("{label} {}", f(*v)));
                last_label_y = py;
            }
        }
    }
}

/// Boxes grouped by category (e.g. per task), one box per series (result) in the series'
/// colour, with an optional reference value per category (the task's deadline) drawn as a red
/// dash across the group. Outliers are dots with tooltips, unlabelled: a group is too narrow.
#[derive(Debug, Clone)]
pub struct GroupedBoxChart {
    pub title: String,
    pub y_label: String,
    pub y_fmt: Fmt,
    pub categories: Vec<String>,
    pub series: Vec<String>,
    /// `boxes[category][series]`.
    pub boxes: Vec<Vec<Option<BoxStats>>>,
    pub references: Vec<Option<f64>>,
}

impl GroupedBoxChart {
    pub fn render(&self) -> String {
        let mut svg = Svg::new("response-times", &self.title);
        let all = || self.boxes.iter().flatten().flatten();
        let values = all().flat_map(|b| b.values()).chain(self.references.iter().flatten().copied());
        let (lo, hi) = min_max(values);
        let y = if lo > 0.0 && hi / lo > 30.0 {
            Scale::log(lo, hi, BOTTOM, TOP)
        } else {
            Scale::linear(0.0, hi, BOTTOM, TOP)
        };
        y_axis(&mut svg, &y, &self.y_label, self.y_fmt);
        let (centers, slot) = slots(self.categories.len());
        let n = self.series.len().max(1);
        let width = (slot * 0.8 / n as f64).min(40.0);
        for (c, &cx) in centers.iter().enumerate() {
            let group = width * n as f64;
            if let Some(Some(r)) = self.references.get(c) {
                let py = y.map(*r);
                svg.line((cx - group / 2.0 - 2.0, py), (cx + group / 2.0 + 2.0, py), "#c00", 2.0, false);
            }
            for (s, b) in self.boxes[c].iter().enumerate() {
                let Some(b) = b else { continue };
                let bx = cx - group / 2.0 + width * (s as f64 + 0.5);
                draw_plain_box(&mut svg, b, bx, width * 0.8, color(s), &y, self.y_fmt, &self.series[s]);
            }
        }
        x_categories(&mut svg, &self.categories, &centers);
        let entries: Vec<(String, &'static str)> =
            self.series.iter().enumerate().map(|(i, s)| (s.clone(), color(i))).collect();
        super::legend(&mut svg, &entries);
        svg.finish()
    }
}

/// A box with whiskers and unlabelled outlier dots (tooltips say what each is).
#[allow(clippy::too_many_arguments)]
fn draw_plain_box(svg: &mut Svg, stats: &BoxStats, cx: f64, w: f64, col: &str, y_scale: &Scale, f: Fmt, series: &str) {
    let bottom = stats.q1.unwrap_or(stats.median);
    svg.line((cx, y_scale.map(stats.whisker_lo)), (cx, y_scale.map(bottom)), "#333", 1.0, false);
    svg.line((cx, y_scale.map(stats.q3)), (cx, y_scale.map(stats.whisker_hi)), "#333", 1.0, false);
    let (top, bot) = (y_scale.map(stats.q3), y_scale.map(bottom));
    let tip = format!(
        "{} / {series}: median {}, p75 {}, whiskers {} .. {}",
        stats.name,
        f(stats.median),
        f(stats.q3),
        f(stats.whisker_lo),
        f(stats.whisker_hi)
    );
    svg.bar(cx - w / 2.0, top, w, bot - top, col, &tip);
    svg.line((cx - w / 2.0, y_scale.map(stats.median)), (cx + w / 2.0, y_scale.map(stats.median)), "white", 1.5, false);
    for (label, v) in &stats.outliers {
        svg.point(cx, y_scale.map(*v), 2.5, col, &format!("{} / {series}: {label} = {}", stats.name, f(*v)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvirt_model::stats::LatencyHistogram;

    #[test]
    fn tail_beyond_fence_becomes_labelled_outliers() {
        let mut h = LatencyHistogram::new();
        (0..1000).for_each(|i| h.record(10_000 + i));
        h.record(5_000_000);
        let b = BoxStats::from_summary("x", &h.summary());
        assert!(b.q1.unwrap() < b.median && b.median < b.q3);
        assert!(b.whisker_hi < 5_000_000.0);
        assert_eq!(b.outliers.last().unwrap(), &("max".to_string(), 5_000_000.0));
    }

    #[test]
    fn grouped_boxes_one_per_task_and_result_with_deadlines() {
        let mut h = LatencyHistogram::new();
        (1..=200).for_each(|i| h.record(i * 10_000));
        let b = BoxStats::from_summary("vm1/t1", &h.summary());
        let chart = GroupedBoxChart {
            title: "t".into(),
            y_label: "response".into(),
            y_fmt: crate::units::fmt_ns,
            categories: vec!["vm1/t1".into(), "vm1/t2".into()],
            series: vec!["simulated".into(), "measured".into()],
            boxes: vec![vec![Some(b.clone()), Some(b.clone())], vec![Some(b), None]],
            references: vec![Some(2_500_000.0), None],
        };
        let svg = chart.render();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let boxes =
            doc.descendants().filter(|n| n.has_tag_name("rect") && n.attribute("class") == Some("datum")).count();
        assert_eq!(boxes, 3, "one box per present (task, result)");
        assert_eq!(doc.descendants().filter(|n| n.attribute("stroke") == Some("#c00")).count(), 1, "one deadline");
    }

    #[test]
    fn without_p25_box_starts_at_median() {
        let mut h = LatencyHistogram::new();
        (1..=100).for_each(|i| h.record(i * 100));
        let mut s = h.summary();
        s.p25 = None;
        let b = BoxStats::from_summary("x", &s);
        assert_eq!(b.q1, None);
        let svg =
            BoxChart { title: "t".into(), y_label: "l".into(), y_fmt: crate::units::fmt_ns, boxes: vec![b] }.render();
        assert!(svg.contains("box from p50"));
    }
}
