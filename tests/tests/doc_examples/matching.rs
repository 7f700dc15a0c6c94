//! Matching quoted output, and fragments of files.

/// Whether `pattern` (a block's text; `...` stands for any text) occurs in
/// `text`, beginning at a line start and ending at a line end.
pub(crate) fn quoted_in(pattern: &str, text: &str) -> bool {
    let pattern = pattern.trim_end_matches('\n');
    let pieces: Vec<&str> = pattern.split("...").collect();
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    'start: for &s in &starts {
        if !text[s..].starts_with(pieces[0]) {
            continue;
        }
        let mut at = s + pieces[0].len();
        for (k, piece) in pieces.iter().enumerate().skip(1) {
            let last = k == pieces.len() - 1;
            if last {
                // The last piece ends at a line end: any occurrence.
                let mut from = at;
                while let Some(i) = text[from..].find(piece) {
                    let end = from + i + piece.len();
                    if end == text.len() || text[end..].starts_with('\n') {
                        return true;
                    }
                    from += i + 1;
                }
                continue 'start;
            }
            match text[at..].find(piece) {
                Some(i) => at += i + piece.len(),
                None => continue 'start,
            }
        }
        if pieces.len() == 1 && (at == text.len() || text[at..].starts_with('\n')) {
            return true;
        }
    }
    false
}

// ---------------------------------------------------------------------------
// Fragments

/// Whether every key and value of `part` is in `whole`.
pub(crate) fn toml_within(part: &toml::Value, whole: &toml::Value) -> bool {
    use toml::Value;
    match (part, whole) {
        (Value::Table(p), Value::Table(w)) => p
            .iter()
            .all(|(k, v)| w.get(k).is_some_and(|wv| toml_within(v, wv))),
        (Value::Array(p), Value::Array(w)) => {
            // An array of tables: each of the part's in the whole's.
            if p.iter().all(Value::is_table) {
                p.iter().all(|pv| w.iter().any(|wv| toml_within(pv, wv)))
            } else {
                p == w
            }
        }
        (p, w) => p == w,
    }
}

pub(crate) fn json_within(part: &serde_json::Value, whole: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (part, whole) {
        (Value::Object(p), Value::Object(w)) => p
            .iter()
            .all(|(k, v)| w.get(k).is_some_and(|wv| json_within(v, wv))),
        (Value::Array(p), Value::Array(w)) => {
            p.len() == w.len() && p.iter().zip(w).all(|(a, b)| json_within(a, b))
        }
        (p, w) => p == w,
    }
}

/// Every line of `part` (trimmed; without `...` lines and `<!-- -->`
/// comments) is in `whole` (as a line of a file, or in a line of a test
/// that asserts it).
pub(crate) fn lines_within(part: &str, whole: &str) -> Result<(), String> {
    for l in part.lines() {
        let l = match l.find("<!--") {
            Some(i) => &l[..i],
            None => l,
        }
        .trim();
        if l.is_empty() || l == "..." {
            continue;
        }
        if !whole.contains(l) {
            return Err(format!("the line {l:?} is not there"));
        }
    }
    Ok(())
}
