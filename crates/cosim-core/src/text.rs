//! Numbers in messages and names: the shortest form that reads back as
//! the same double (`1.023`, not `1.0230000000000001`; `1e-300`, not three
//! hundred digits; `7.0857e21`, not `7085651502347456610304.000`), or the
//! shortest form of the value rounded to a few significant digits for
//! figures that are estimates (`39.78`, not `3.9780e1`). Paths in
//! messages: normalised lexically ([`path`]).

/// `x` in its shortest exact form: plain between 1e-4 and 1e15 in
/// magnitude, with an exponent outside (`1e-300`, `7.085651502347457e21`).
pub fn number(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if x == 0.0 || (1e-4..1e15).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// `x` rounded to `digits` significant digits (at least 1), in the
/// shortest form of that rounded value ([`number`]): `39.78` for
/// 39.7803 at 4 digits, `0.00049749` at 5, `7.0857e21` at 5.
pub fn significant(x: f64, digits: usize) -> String {
    if !x.is_finite() || x == 0.0 {
        return number(x);
    }
    let rounded: f64 = format!("{:.*e}", digits.max(1) - 1, x).parse().unwrap_or(x);
    number(rounded)
}

/// `n` and the noun that goes with it: `1 subsystem`, `2 subsystems`,
/// `0 subsystems`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `path` as messages show it: normalised lexically (`.` left out, `a/..`
/// taken back: `scenarios/sweeps/../out/x` is `scenarios/out/x`), without
/// looking at the file system (symbolic links are not resolved). A `..`
/// at the start of a relative path stays; one after the root is dropped.
pub fn path(path: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut parts: Vec<Component<'_>> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match parts.last() {
                Some(Component::Normal(_)) => {
                    parts.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => parts.push(c),
            },
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return std::path::PathBuf::from(".");
    }
    parts.iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_written() {
        assert_eq!(number(1.023), "1.023");
        assert_eq!(number(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(number(1e-300), "1e-300");
        assert_eq!(
            number(7_085_651_502_347_456_610_304.0),
            "7.085651502347457e21"
        );
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(0.0), "0");
        assert_eq!(significant(39.7803, 4), "39.78");
        assert_eq!(significant(4.974_912e-4, 5), "0.00049749");
        assert_eq!(significant(7_085_651_502_347_456_610_304.0, 5), "7.0857e21");
        assert_eq!(significant(0.1 + 0.2, 3), "0.3");
        assert_eq!(significant(-1234.5678, 3), "-1230");
    }

    #[test]
    fn paths_are_shown_normalised_lexically() {
        let s = |p: &str| super::path(std::path::Path::new(p)).display().to_string();
        assert_eq!(
            s("scenarios/sweeps/../out/sweeps/b1"),
            "scenarios/out/sweeps/b1"
        );
        assert_eq!(s("./a/./b/"), "a/b");
        assert_eq!(s("../x/../y"), "../y");
        assert_eq!(s("a/.."), ".");
        assert_eq!(s("/../a/b/../c"), "/a/c");
        assert_eq!(s("a/../../b"), "../b");
    }
}
