//! Turning a [`crate::doc::Report`] into a file: one self-contained HTML page, or Markdown.

pub mod html;
pub mod markdown;
