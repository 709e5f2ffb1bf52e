//! Text placed into XML and HTML documents (libvirt fragments, CARTS input, SVG charts, HTML
//! reports): the one escaper of the codebase, for element content and attribute values, and the
//! text of comments.
//!
//! Written by hand (a character map): the XML crate the model already uses, roxmltree, only
//! reads, and a writer crate for two functions would be a new dependency in every crate.

/// `text` as XML 1.0 element content or a (single- or double-quoted) attribute value: `& < > " '`
/// as entities; tab, line feed and carriage return as character references, so that an attribute
/// keeps them (a parser normalises raw ones to spaces); characters that XML 1.0 cannot carry at
/// all (other C0 controls, U+FFFE, U+FFFF) as U+FFFD, the replacement character.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if is_xml_char(c) => out.push(c),
            _ => out.push(char::REPLACEMENT_CHARACTER),
        }
    }
    out
}

/// Characters of XML 1.0 (section 2.2) other than the three whitespace controls handled above.
fn is_xml_char(c: char) -> bool {
    !matches!(c, '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}')
}

/// `text` as the text of an XML comment (`<!-- ... -->`): escaped as [`escape`] does, and with a
/// space after every `-` that follows another `-` or ends the text, so that it never holds `--`
/// nor closes the comment early.
pub fn comment(text: &str) -> String {
    let escaped = escape(text);
    let mut out = String::with_capacity(escaped.len());
    for c in escaped.chars() {
        if c == '-' && out.ends_with('-') {
            out.push(' ');
        }
        out.push(c);
    }
    if out.ends_with('-') {
        out.push(' ');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn markup_and_whitespace_controls_are_escaped() {
        assert_eq!(escape(r#"a<b & "c">'"#), "a&lt;b &amp; &quot;c&quot;&gt;&#39;");
        assert_eq!(escape("a\nb\tc\rd"), "a&#10;b&#9;c&#13;d");
        assert_eq!(escape("bell\u{7}nul\u{0}"), "bell\u{fffd}nul\u{fffd}");
        assert_eq!(escape("vm-1 ü"), "vm-1 ü");
    }

    #[test]
    fn comments_never_hold_a_double_dash() {
        assert_eq!(comment("a--b<-->"), "a- -b&lt;- -&gt;");
        assert_eq!(comment("---"), "- - - ");
        assert_eq!(comment("x-"), "x- ");
    }

    proptest! {
        #[test]
        fn escaped_text_reads_back_as_itself(s in "\\PC*", ws in "[\\t\\n\\r <>&\"'a-]{0,12}") {
            let text = format!("{s}{ws}");
            let doc = format!("<r a=\"{}\" b='{}'>{}<!--{}--></r>", escape(&text), escape(&text), escape(&text),
                comment(&text));
            let parsed = roxmltree::Document::parse(&doc).expect("well-formed");
            let root = parsed.root_element();
            prop_assert_eq!(root.attribute("a"), Some(text.as_str()));
            prop_assert_eq!(root.attribute("b"), Some(text.as_str()));
            prop_assert_eq!(root.text().unwrap_or(""), text.as_str());
        }
    }
}
