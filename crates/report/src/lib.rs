//! rtvirt-report: HTML/Markdown reports with SVG charts and tables.
