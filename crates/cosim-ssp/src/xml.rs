//! A small XML tree with byte positions of elements, attribute values and
//! text, built with quick-xml. Bounded (file size, depth, element count);
//! never panics on input.

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

use quick_xml::events::{BytesStart, Event};
use quick_xml::reader::Reader;

use crate::source::{Diagnostic, FileId, ImportError, Severity, Sources, Src};

/// Largest XML file read (64 MiB).
pub(crate) const MAX_XML_SIZE: usize = 64 * 1024 * 1024;
/// Deepest element nesting.
const MAX_DEPTH: usize = 256;
/// Most elements in one file.
const MAX_ELEMENTS: usize = 5_000_000;

/// An attribute with the byte range of its value.
#[derive(Debug, Clone)]
pub(crate) struct Attr {
    /// Qualified name as written.
    pub name: String,
    /// Value, entity references resolved.
    pub value: String,
    /// Byte range of the value (inside the quotes).
    pub start: usize,
    pub end: usize,
}

/// An element.
#[derive(Debug, Clone)]
pub(crate) struct Elem {
    /// Qualified name as written (`ssd:Connection`).
    pub name: String,
    /// Byte offset of the name (just after `<`).
    pub start: usize,
    pub attrs: Vec<Attr>,
    pub children: Vec<Elem>,
    /// Character content (text and CDATA, entity references resolved).
    pub text: String,
    /// Byte range of the first text node (the element name when there is none).
    pub text_start: usize,
    pub text_end: usize,
}

/// A parsed XML file.
#[derive(Debug)]
pub(crate) struct Doc {
    pub file: FileId,
    pub root: Elem,
}

impl Elem {
    /// The name without its namespace prefix.
    pub(crate) fn local(&self) -> &str {
        local(&self.name)
    }

    /// The attribute called `name` (unprefixed attributes only).
    pub(crate) fn attr(&self, name: &str) -> Option<&Attr> {
        self.attrs.iter().find(|a| a.name == name)
    }

    /// The value of attribute `name`.
    pub(crate) fn value(&self, name: &str) -> Option<&str> {
        self.attr(name).map(|a| a.value.as_str())
    }

    /// The children whose local name is `name`.
    pub(crate) fn children_named<'e>(&'e self, name: &'e str) -> impl Iterator<Item = &'e Elem> {
        self.children.iter().filter(move |c| c.local() == name)
    }

    /// The first child whose local name is `name`.
    pub(crate) fn child(&self, name: &str) -> Option<&Elem> {
        self.children.iter().find(|c| c.local() == name)
    }

    /// Where the element's name is written.
    pub(crate) fn src(&self, file: FileId) -> Src {
        Src::new(file, self.start, self.start + self.name.len())
    }

    /// Where attribute `name`'s value is written (the element when absent).
    pub(crate) fn attr_src(&self, file: FileId, name: &str) -> Src {
        match self.attr(name) {
            Some(a) => Src::new(file, a.start, a.end),
            None => self.src(file),
        }
    }

    /// Where the text content is written.
    pub(crate) fn text_src(&self, file: FileId) -> Src {
        Src::new(file, self.text_start, self.text_end)
    }
}

/// The name without its namespace prefix.
pub(crate) fn local(name: &str) -> &str {
    name.rsplit_once(':').map_or(name, |(_, l)| l)
}

/// Reads `path` (at most [`MAX_XML_SIZE`] bytes, UTF-8) into `sources`
/// and parses it; messages name it `shown`.
pub(crate) fn read(sources: &mut Sources, path: &Path, shown: &Path) -> Result<Doc, ImportError> {
    let io = |e: std::io::Error| {
        Diagnostic::new(Severity::Error, shown, format!("cannot read the file: {e}"))
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(MAX_XML_SIZE as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    read_bytes(sources, shown, bytes)
}

/// Parses `bytes` (the content of `path`) into `sources`.
pub(crate) fn read_bytes(
    sources: &mut Sources,
    path: &Path,
    bytes: Vec<u8>,
) -> Result<Doc, ImportError> {
    let whole = |message: String| ImportError::one(Diagnostic::new(Severity::Error, path, message));
    if bytes.len() > MAX_XML_SIZE {
        return Err(whole(format!(
            "the file is larger than the limit of {MAX_XML_SIZE} bytes"
        )));
    }
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return Err(whole(
            "the file is UTF-16 encoded; only UTF-8 is supported".to_string(),
        ));
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            let prefix = String::from_utf8_lossy(bytes.get(..valid).unwrap_or_default());
            let id = sources.add(path.to_path_buf(), prefix.into_owned());
            return Err(ImportError::one(sources.error(
                Src::new(id, valid, valid),
                format!("invalid UTF-8 at byte offset {valid}"),
            )));
        }
    };
    let id = sources.add(path.to_path_buf(), text);
    let text = sources.get(id).map(|f| f.text.as_str()).unwrap_or_default();
    match parse(text) {
        Ok(root) => Ok(Doc { file: id, root }),
        Err((at, message)) => Err(ImportError::one(
            sources.error(Src::new(id, at, at), message),
        )),
    }
}

struct Frame {
    elem: Elem,
}

fn offset_in(base: &str, part: &str) -> Option<usize> {
    let b = base.as_ptr() as usize;
    let p = part.as_ptr() as usize;
    let off = p.checked_sub(b)?;
    (off + part.len() <= base.len()).then_some(off)
}

fn make_elem(xml: &str, start: &BytesStart<'_>, at: usize) -> Result<Elem, (usize, String)> {
    let name = start.name().into_inner().to_string();
    let mut attrs = Vec::new();
    for attr in start.attributes() {
        let attr = attr.map_err(|e| {
            use quick_xml::events::attributes::AttrError;
            // Positions count from the element name (just after '<').
            let pos = match &e {
                AttrError::ExpectedEq(p)
                | AttrError::ExpectedValue(p)
                | AttrError::UnquotedValue(p)
                | AttrError::ExpectedQuote(p, _)
                | AttrError::Duplicated(p, _) => *p,
            };
            let text = e.to_string();
            let text = text
                .split_once(": ")
                .filter(|(p, _)| p.starts_with("position"))
                .map_or(text.as_str(), |(_, t)| t);
            (
                at + 1 + pos,
                format!("malformed attribute in <{name}>: {text}"),
            )
        })?;
        let key = attr.key.into_inner().to_string();
        let (vs, ve) = match &attr.value {
            Cow::Borrowed(v) => offset_in(xml, v).map_or((at, at), |o| (o, o + v.len())),
            Cow::Owned(_) => (at, at),
        };
        let value = attr
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|e| {
                (
                    vs,
                    format!("malformed value of attribute '{key}' in <{name}>: {e}"),
                )
            })?
            .into_owned();
        attrs.push(Attr {
            name: key,
            value,
            start: vs,
            end: ve,
        });
    }
    // `at` is the '<': the name follows it.
    Ok(Elem {
        name,
        start: at + 1,
        attrs,
        children: Vec::new(),
        text: String::new(),
        text_start: at + 1,
        text_end: at + 1,
    })
}

/// Resolves a general entity reference (`&amp;` is delivered as `amp`).
fn general_ref(name: &str) -> Option<char> {
    match name {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "apos" => Some('\''),
        "quot" => Some('"'),
        _ => {
            let num = name.strip_prefix('#')?;
            let code = match num.strip_prefix('x') {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => num.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

fn add_text(frame: Option<&mut Frame>, text: &str, start: usize, end: usize) {
    let Some(f) = frame else { return };
    if f.elem.text.is_empty() && !text.trim().is_empty() {
        f.elem.text_start = start;
        f.elem.text_end = end;
    }
    f.elem.text.push_str(text);
}

fn line_of(xml: &str, offset: usize) -> usize {
    xml.as_bytes()
        .iter()
        .take(offset)
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Parses XML text into its root element; `Err` is (byte offset, message).
pub(crate) fn parse(xml: &str) -> Result<Elem, (usize, String)> {
    let body = xml.strip_prefix('\u{feff}').unwrap_or(xml);
    let skipped = xml.len() - body.len();
    let mut reader = Reader::from_str(body);
    {
        let config = reader.config_mut();
        config.check_end_names = false;
        config.expand_empty_elements = false;
        config.trim_text(false);
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut root: Option<Elem> = None;
    let mut count = 0usize;
    loop {
        let offset = usize::try_from(reader.buffer_position())
            .unwrap_or(usize::MAX)
            .saturating_add(skipped);
        let event = reader.read_event().map_err(|e| {
            let at = usize::try_from(reader.error_position())
                .unwrap_or(usize::MAX)
                .saturating_add(skipped);
            (at, format!("malformed XML: {e}"))
        })?;
        match event {
            Event::Start(ref start) | Event::Empty(ref start) => {
                if stack.len() >= MAX_DEPTH {
                    return Err((
                        offset,
                        format!("elements are nested more than {MAX_DEPTH} levels deep"),
                    ));
                }
                if stack.is_empty() && root.is_some() {
                    return Err((offset, "more than one root element".to_string()));
                }
                count += 1;
                if count > MAX_ELEMENTS {
                    return Err((
                        offset,
                        format!("the file has more than {MAX_ELEMENTS} elements"),
                    ));
                }
                let elem = make_elem(xml, start, offset)?;
                if matches!(event, Event::Empty(_)) {
                    match stack.last_mut() {
                        Some(parent) => parent.elem.children.push(elem),
                        None => root = Some(elem),
                    }
                } else {
                    stack.push(Frame { elem });
                }
            }
            Event::End(end) => {
                let name = end.name().into_inner().to_string();
                let Some(frame) = stack.pop() else {
                    return Err((
                        offset,
                        format!("closing tag </{name}> without an opening tag"),
                    ));
                };
                if frame.elem.name != name {
                    let line = line_of(xml, frame.elem.start);
                    return Err((
                        offset,
                        format!(
                            "found </{name}> where </{}> was expected: the <{}> opened on line {line} is not closed",
                            frame.elem.name, frame.elem.name
                        ),
                    ));
                }
                match stack.last_mut() {
                    Some(parent) => parent.elem.children.push(frame.elem),
                    None => root = Some(frame.elem),
                }
            }
            Event::Text(t) => {
                let content = t.xml10_content();
                let raw: &str = &t;
                let (s, e) = offset_in(xml, raw).map_or((offset, offset), |o| (o, o + raw.len()));
                let trimmed_start = s + (raw.len() - raw.trim_start().len());
                let trimmed_end = e - (raw.len() - raw.trim_end().len());
                add_text(stack.last_mut(), &content, trimmed_start, trimmed_end);
            }
            Event::CData(c) => {
                let raw: &str = &c;
                let (s, e) = offset_in(xml, raw).map_or((offset, offset), |o| (o, o + raw.len()));
                add_text(stack.last_mut(), raw, s, e);
            }
            Event::GeneralRef(r) => {
                let name = r.to_string();
                let Some(c) = general_ref(&name) else {
                    return Err((offset, format!("unknown entity reference '&{name};'")));
                };
                add_text(
                    stack.last_mut(),
                    c.encode_utf8(&mut [0u8; 4]),
                    offset,
                    offset,
                );
            }
            Event::Eof => {
                if let Some(frame) = stack.last() {
                    return Err((
                        frame.elem.start.saturating_sub(1),
                        format!(
                            "element <{}> is not closed before the end of the file",
                            frame.elem.name
                        ),
                    ));
                }
                break;
            }
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
    root.ok_or_else(|| {
        (
            xml.len(),
            "no root element: the file contains no XML element".to_string(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans() {
        let xml = "<a x=\"1\">\n  <b y='v&amp;w'/>\n  <c> 2.5 </c>\n</a>";
        let root = parse(xml).map_err(|e| e.1);
        let Ok(root) = root else {
            unreachable!("parse failed: {root:?}")
        };
        assert_eq!(root.name, "a");
        let x = root.attr("x").map(|a| (a.start, a.end));
        assert_eq!(x, Some((6, 7)));
        let b = &root.children[0];
        assert_eq!(b.value("y"), Some("v&w"));
        let y = b.attr("y");
        assert_eq!(y.map(|a| &xml[a.start..a.end]), Some("v&amp;w"));
        let c = &root.children[1];
        assert_eq!(c.text.trim(), "2.5");
        assert_eq!(&xml[c.text_start..c.text_end], "2.5");
    }

    #[test]
    fn errors() {
        assert!(parse("<a><b></a>").is_err());
        assert!(parse("<a x=1/>").is_err());
        assert!(parse("").is_err());
        assert!(parse("<a/><b/>").is_err());
        assert!(parse("<a>&foo;</a>").is_err());
        let deep = "<a>".repeat(300);
        assert!(parse(&deep).is_err());
    }
}
