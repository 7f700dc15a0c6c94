//! A [`Draft`] as scenario TOML, with a map from every emitted key and value
//! back to the place in the SSP/OSP source it comes from.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use crate::draft::{Assign, Draft, EndDraft, FuncDraft, PortRef, RawValue, VarRef};
use crate::source::{Sources, Src};

/// Byte ranges of the TOML text and the source place each comes from.
#[derive(Debug, Default, Clone)]
pub(crate) struct SpanMap {
    entries: Vec<(usize, usize, Src)>,
}

impl SpanMap {
    fn push(&mut self, start: usize, end: usize, src: Src) {
        self.entries.push((start, end, src));
    }

    /// The source of the smallest recorded range containing `offset`.
    pub(crate) fn lookup(&self, offset: usize) -> Option<Src> {
        self.entries
            .iter()
            .filter(|(s, e, _)| *s <= offset && offset < (*e).max(*s + 1))
            .min_by_key(|(s, e, _)| e - s)
            .map(|(_, _, src)| *src)
    }
}

struct Out<'a> {
    s: String,
    map: SpanMap,
    sources: &'a Sources,
    /// Directory relative FMU paths are written against (`None`: absolute).
    base: Option<&'a Path>,
}

/// A TOML basic string.
pub(crate) fn toml_string(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            '\r' => s.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(s, "\\u{:04X}", u32::from(c));
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// A TOML key: bare when it can be, quoted otherwise.
pub(crate) fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        toml_string(k)
    }
}

/// A finite float as TOML (shortest representation that reads back exactly).
pub(crate) fn toml_float(x: f64) -> String {
    let s = format!("{x:?}");
    if s.contains(['.', 'e', 'E']) || s.contains("inf") || s.contains("NaN") {
        s
    } else {
        format!("{s}.0")
    }
}

fn raw_value(v: &RawValue) -> String {
    match v {
        RawValue::Float(x) => toml_float(*x),
        RawValue::Int(i) => i.to_string(),
        RawValue::Bool(b) => b.to_string(),
        RawValue::Str(s) => toml_string(s),
    }
}

impl Out<'_> {
    fn text(&mut self, t: &str) {
        self.s.push_str(t);
    }

    fn mapped(&mut self, t: &str, src: Src) {
        let start = self.s.len();
        self.s.push_str(t);
        self.map.push(start, self.s.len(), src);
    }

    fn comment_place(&mut self, src: Src) {
        let place = self.sources.place(src);
        let _ = write!(self.s, "  # {place}");
    }

    /// `key = value  # place` with key and value mapped to `src`.
    fn line_f64(&mut self, key: &str, v: f64, src: Src) {
        let start = self.s.len();
        self.text(key);
        self.text(" = ");
        self.mapped(&toml_float(v), src);
        self.map.push(start, self.s.len(), src);
        self.comment_place(src);
        self.text("\n");
    }

    /// `key = "value"  # file:line`, mapped to `src`.
    fn line_str(&mut self, key: &str, v: &str, src: Src) {
        let start = self.s.len();
        self.text(key);
        self.text(" = ");
        self.mapped(&toml_string(v), src);
        self.map.push(start, self.s.len(), src);
        self.comment_place(src);
        self.text("\n");
    }

    /// `key = value  # origin`, mapped to `src`.
    fn line_f64_origin(&mut self, key: &str, v: f64, src: Src, origin: &str) {
        let start = self.s.len();
        self.text(key);
        self.text(" = ");
        self.mapped(&toml_float(v), src);
        self.map.push(start, self.s.len(), src);
        let _ = writeln!(self.s, "  # {origin}");
    }

    fn var_path(&mut self, names: &[String], v: &VarRef) {
        let sub = names.get(v.sub).map_or("", String::as_str);
        let text = format!("{sub}.{}", v.var);
        let start = self.s.len();
        self.s.push_str(&toml_string(&text));
        let end = self.s.len();
        self.map.push(start, end, v.var_src);
        // Inside the quotes: the subsystem part, then the variable part
        // (exact as long as neither needs escaping).
        let escaped_sub = toml_string(sub).len() - 2;
        self.map.push(start + 1, start + 1 + escaped_sub, v.sub_src);
        self.map.push(start + 2 + escaped_sub, end - 1, v.var_src);
    }

    /// `"<function>.<port>"`, its parts mapped to the function and the
    /// signal of the source.
    fn port_path(&mut self, functions: &[FuncDraft], p: &PortRef) {
        let name = functions.get(p.func).map_or("", |f| f.name.as_str());
        let start = self.s.len();
        self.s.push_str(&toml_string(&format!("{name}.{}", p.port)));
        let end = self.s.len();
        self.map.push(start, end, p.port_src);
        let escaped = toml_string(name).len() - 2;
        self.map.push(start + 1, start + 1 + escaped, p.func_src);
        self.map.push(start + 2 + escaped, end - 1, p.port_src);
    }

    fn end_path(&mut self, names: &[String], functions: &[FuncDraft], e: &EndDraft) {
        match e {
            EndDraft::Var(v) => self.var_path(names, v),
            EndDraft::Port(p) => self.port_path(functions, p),
        }
    }

    fn assignments(&mut self, table: &str, list: &[Assign]) {
        if list.is_empty() {
            return;
        }
        let _ = writeln!(self.s, "\n[{table}]");
        for a in list {
            let line_start = self.s.len();
            self.mapped(&toml_key(&a.name), a.name_src);
            self.text(" = ");
            self.mapped(&raw_value(&a.value), a.value_src);
            self.map.push(line_start, self.s.len(), a.name_src);
            self.comment_place(a.value_src);
            self.text("\n");
        }
    }

    fn fmu_path(&self, fmu: &Path) -> String {
        let shown = match self.base {
            Some(base) => {
                // Physical paths: `..` must not cross a symbolic link.
                let real = fmu.canonicalize().unwrap_or_else(|_| fmu.to_path_buf());
                relative_path(&real, base).unwrap_or_else(|| fmu.to_path_buf())
            }
            None => fmu.to_path_buf(),
        };
        // Forward slashes read everywhere.
        shown.to_string_lossy().replace('\\', "/")
    }
}

/// `path` relative to the directory `base` (both absolute), if they share
/// a root.
pub(crate) fn relative_path(path: &Path, base: &Path) -> Option<PathBuf> {
    let p: Vec<Component<'_>> = path.components().collect();
    let b: Vec<Component<'_>> = base.components().collect();
    if p.first() != b.first() {
        return None;
    }
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for c in b.iter().skip(common) {
        match c {
            Component::Normal(_) => out.push(".."),
            Component::CurDir => {}
            _ => return None,
        }
    }
    for c in p.iter().skip(common) {
        out.push(c.as_os_str());
    }
    Some(out)
}

/// Writes the draft as scenario TOML. FMU paths are made relative to
/// `base` when given (the directory of the TOML file), absolute otherwise.
pub(crate) fn emit(
    draft: &Draft,
    sources: &Sources,
    source_name: &str,
    base: Option<&Path>,
) -> (String, SpanMap) {
    let mut o = Out {
        s: String::with_capacity(256 + draft.connections.len() * 96),
        map: SpanMap::default(),
        sources,
        base,
    };
    let _ = writeln!(
        o.s,
        "# cosim scenario generated from {source_name} ({}).",
        draft.format
    );
    o.text("# The comments give the file and line each entry comes from; docs/ssp.md\n");
    o.text("# describes the mapping.\n");
    if !draft.skipped.is_empty() {
        o.text("#\n# NOT CONVERTED (no equivalent in cosim yet; the run would differ):\n");
        for s in &draft.skipped {
            let place = sources.place(s.src);
            let _ = writeln!(o.s, "#   {place}: {}", s.text.replace('\n', " "));
        }
    }
    for (title, lines) in [
        (
            "TO FIX BEFORE A RUN (cosim run and cosim check refuse the scenario as it stands):",
            &draft.before_run,
        ),
        ("WARNINGS:", &draft.warnings),
    ] {
        if !lines.is_empty() {
            let _ = writeln!(o.s, "#\n# {title}");
            for line in lines {
                let _ = writeln!(o.s, "#   {}", line.replace('\n', " "));
            }
        }
    }

    // [simulation]
    if draft.start.is_some() || draft.stop.is_some() || draft.stop_missing.is_some() {
        let header_start = o.s.len() + 1;
        o.text("\n[simulation]");
        o.map.push(header_start, o.s.len(), draft.root_src);
        match (&draft.stop, &draft.stop_missing) {
            (None, Some(why)) => {
                let _ = writeln!(o.s, "  # {}", why.replace('\n', " "));
            }
            _ => o.text("\n"),
        }
        for (key, v) in [("start", &draft.start), ("stop", &draft.stop)] {
            let Some(v) = v else { continue };
            let origin = match key {
                "stop" => draft.stop_origin.as_ref(),
                _ => None,
            }
            .or(draft
                .times_origin
                .as_ref()
                .filter(|_| v.src == draft.root_src));
            match origin {
                Some(origin) => o.line_f64_origin(key, v.value, v.src, origin),
                None => o.line_f64(key, v.value, v.src),
            }
        }
    }

    o.level(draft, "");

    // [outputs]
    if !draft.outputs.is_empty() {
        let header_start = o.s.len() + 1;
        o.text("\n[outputs]\n");
        o.map.push(header_start, o.s.len(), draft.root_src);
        o.text("# every output of every FMU, nested systems included\nvariables = [\n");
        for v in &draft.outputs {
            o.text("  ");
            o.mapped(&toml_string(&v.value), v.src);
            o.text(",\n");
        }
        o.text("]\n");
    }
    (o.s, o.map)
}

impl Out<'_> {
    /// `[master]`, `[[subsystems]]`, `[[connections]]` and `[[bonds]]` of
    /// one level; `prefix` is `""` at the top, `subsystems.system.` (and
    /// so on) inside nested systems.
    fn level(&mut self, draft: &Draft, prefix: &str) {
        let o = self;
        // [master]
        let m = &draft.master;
        let any_master = m.kind.is_some()
            || m.step.is_some()
            || m.threads.is_some()
            || m.discover_bonds.is_some()
            || m.tolerance.is_some()
            || m.energy_scale.is_some()
            || m.libcosim_ecco.is_some()
            || !m.controller.is_empty();
        if any_master {
            let header_start = o.s.len() + 1;
            let _ = writeln!(o.s, "\n[{prefix}master]");
            o.map.push(header_start, o.s.len(), draft.root_src);
            if let Some(k) = &m.kind {
                let start = o.s.len();
                o.text("kind = ");
                o.mapped(&toml_string(k.value), k.src);
                o.map.push(start, o.s.len(), k.src);
                o.comment_place(k.src);
                o.text("\n");
            }
            if let Some(v) = &m.step {
                match &m.step_origin {
                    None => o.line_f64("step", v.value, v.src),
                    Some(origin) => o.line_f64_origin("step", v.value, v.src, origin),
                }
            }
            if let Some(v) = &m.threads {
                let start = o.s.len();
                let _ = write!(o.s, "threads = {}", v.value);
                o.map.push(start, o.s.len(), v.src);
                o.comment_place(v.src);
                o.text("\n");
            }
            if let Some(v) = &m.discover_bonds {
                let start = o.s.len();
                let _ = write!(o.s, "discover_bonds = {}", v.value);
                o.map.push(start, o.s.len(), v.src);
                o.comment_place(v.src);
                o.text("\n");
            }
            if let Some(v) = &m.tolerance {
                o.line_f64("tolerance", v.value, v.src);
            }
            if let Some(v) = &m.energy_scale {
                o.line_f64("energy_scale", v.value, v.src);
            }
            if let Some(src) = m.libcosim_ecco {
                o.line_str("energy_reference", "largest-residual", src);
            }
            if !m.controller.is_empty() || m.libcosim_ecco.is_some() {
                let _ = writeln!(o.s, "\n[{prefix}master.controller]");
                for (k, v) in &m.controller {
                    o.line_f64(k, v.value, v.src);
                }
                if let Some(src) = m.libcosim_ecco {
                    o.line_str("variant", "libcosim", src);
                }
            }
        }

        // [[subsystems]]
        let names: Vec<String> = draft.subsystems.iter().map(|s| s.name.clone()).collect();
        for s in &draft.subsystems {
            let block = o.s.len() + 1;
            let _ = write!(o.s, "\n[[{prefix}subsystems]]");
            o.comment_place(s.src);
            o.text("\nname = ");
            o.mapped(&toml_string(&s.name), s.name_src);
            o.text("\n");
            if s.system.is_none() {
                o.text("fmu = ");
                let fmu = o.fmu_path(&s.fmu);
                o.mapped(&toml_string(&fmu), s.fmu_src);
                o.text("\n");
            }
            if !s.exposes.is_empty() {
                let start = o.s.len();
                o.text("exposes = [\n");
                for e in &s.exposes {
                    o.text("  ");
                    o.mapped(&toml_string(&e.value), e.src);
                    o.text(",");
                    o.comment_place(e.src);
                    o.text("\n");
                }
                o.text("]\n");
                o.map.push(start, o.s.len(), s.src);
            }
            if let Some(i) = &s.interface {
                let start = o.s.len();
                let _ = write!(o.s, "interface = {}", toml_string(i.value));
                o.map.push(start, o.s.len(), i.src);
                o.comment_place(i.src);
                o.text("\n");
            }
            if let Some(k) = &s.step_multiple {
                let start = o.s.len();
                let _ = write!(o.s, "step_multiple = {}", k.value);
                o.map.push(start, o.s.len(), k.src);
                o.comment_place(k.src);
                o.text("\n");
            }
            o.assignments(&format!("{prefix}subsystems.parameters"), &s.parameters);
            o.assignments(&format!("{prefix}subsystems.start"), &s.start);
            if let Some(inner) = &s.system {
                o.level(inner, &format!("{prefix}subsystems.system."));
            }
            o.map.push(block, o.s.len(), s.src);
        }

        // [[functions]]
        for f in &draft.functions {
            let block = o.s.len() + 1;
            let _ = write!(o.s, "\n[[{prefix}functions]]");
            o.comment_place(f.src);
            o.text("\nname = ");
            o.mapped(&toml_string(&f.name), f.name_src);
            let _ = write!(o.s, "\nkind = \"{}\"\n", f.kind);
            let start = o.s.len();
            let _ = writeln!(o.s, "inputs = {}", f.inputs.value);
            o.map.push(start, o.s.len(), f.inputs.src);
            if let Some(d) = &f.dimension {
                let start = o.s.len();
                let _ = writeln!(o.s, "dimension = {}", d.value);
                o.map.push(start, o.s.len(), d.src);
            }
            if let Some(src) = f.integer {
                let start = o.s.len();
                o.text("numeric_type = \"integer\"\n");
                o.map.push(start, o.s.len(), src);
            }
            o.map.push(block, o.s.len(), f.src);
        }

        // [[connections]]
        for c in &draft.connections {
            let block = o.s.len() + 1;
            let _ = write!(o.s, "\n[[{prefix}connections]]");
            o.comment_place(c.src);
            if let Some(comment) = &c.comment {
                let _ = write!(o.s, "; {comment}");
            }
            o.text("\nfrom = ");
            o.var_path(&names, &c.from);
            o.text("\nto = ");
            o.var_path(&names, &c.to);
            o.text("\n");
            let map_src = c.map_src.unwrap_or(c.src);
            if c.gain != 1.0 {
                let start = o.s.len();
                o.text("gain = ");
                o.mapped(&toml_float(c.gain), map_src);
                o.map.push(start, o.s.len(), map_src);
                o.text("\n");
            }
            if c.offset != 0.0 {
                let start = o.s.len();
                o.text("offset = ");
                o.mapped(&toml_float(c.offset), map_src);
                o.map.push(start, o.s.len(), map_src);
                o.text("\n");
            }
            if c.unit_mismatch {
                let start = o.s.len();
                o.text("unit_mismatch = true");
                o.map.push(start, o.s.len(), map_src);
                o.text("\n");
            }
            o.map.push(block, o.s.len(), c.src);
        }

        // [[connections]] to and from functions
        for c in &draft.function_connections {
            let block = o.s.len() + 1;
            let _ = write!(o.s, "\n[[{prefix}connections]]");
            o.comment_place(c.src);
            if let Some(comment) = &c.comment {
                let _ = write!(o.s, "; {comment}");
            }
            o.text("\nfrom = ");
            o.end_path(&names, &draft.functions, &c.from);
            o.text("\nto = ");
            o.end_path(&names, &draft.functions, &c.to);
            o.text("\n");
            o.map.push(block, o.s.len(), c.src);
        }

        // [[bonds]]
        for b in &draft.bonds {
            let block = o.s.len() + 1;
            let _ = write!(o.s, "\n[[{prefix}bonds]]");
            o.comment_place(b.src);
            o.text("\nname = ");
            o.mapped(&toml_string(&b.name.value), b.name.src);
            o.text("\nports = [\n");
            for (input, output) in &b.ports {
                let start = o.s.len();
                o.text("  { input = ");
                o.var_path(&names, input);
                o.text(", output = ");
                o.var_path(&names, output);
                o.text(" },");
                o.map.push(start, o.s.len(), input.var_src);
                o.text("\n");
            }
            o.text("]\n");
            if b.intended {
                o.text("intended = true\n");
            }
            o.map.push(block, o.s.len(), b.src);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(toml_float(1.0), "1.0");
        assert_eq!(toml_float(-1.0), "-1.0");
        assert_eq!(toml_float(1e-5), "1e-5");
        assert_eq!(toml_float(0.1), "0.1");
        assert_eq!(toml_float(1e300), "1e300");
        assert_eq!(toml_key("m_c"), "m_c");
        assert_eq!(toml_key("body.x[1]"), "\"body.x[1]\"");
        assert_eq!(toml_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
    }

    #[test]
    fn relative() {
        let r = relative_path(Path::new("/a/b/c.fmu"), Path::new("/a/d"));
        assert_eq!(r, Some(PathBuf::from("../b/c.fmu")));
        let r = relative_path(Path::new("/a/b/c.fmu"), Path::new("/a/b"));
        assert_eq!(r, Some(PathBuf::from("c.fmu")));
    }
}
