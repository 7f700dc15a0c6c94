//! SI dimensions of units.
//!
//! A variable's dimension comes from the `<BaseUnit>` of its unit definition
//! when the model description gives one, else from parsing the unit string
//! with the Modelica unit syntax (`"kg.m/s2"`, `"N.m"`, `"1/s"`, `"m3/s"`,
//! prefixes `"kN"`, `"mm"`, and a few common non-SI units: `"km/h"`,
//! `"rpm"`, `"bar"`, `"l/min"`, `"degC"` ...). An unknown unit yields `None`:
//! nothing is guessed.

use super::{BaseUnit, ModelDescription, Variable};

impl BaseUnit {
    /// The exponents only, as an array in the order kg, m, s, A, K, mol, cd, rad.
    pub fn exponents(&self) -> [i32; 8] {
        [
            self.kg, self.m, self.s, self.a, self.k, self.mol, self.cd, self.rad,
        ]
    }

    /// True when both have the same SI exponents (factor and offset ignored).
    pub fn same_dimension(&self, other: &BaseUnit) -> bool {
        self.exponents() == other.exponents()
    }

    /// True when both have the same SI exponents apart from the radian
    /// (`rad/s` and `1/s`, `N.m` and `N.m/rad` compare equal).
    pub fn same_dimension_ignoring_rad(&self, other: &BaseUnit) -> bool {
        let (a, b) = (self.exponents(), other.exponents());
        a[..7] == b[..7]
    }

    /// True when all exponents are zero.
    pub fn is_dimensionless(&self) -> bool {
        self.exponents() == [0; 8]
    }

    /// The product of two units: exponents add, factors multiply. The
    /// offset of the result is zero (an affine unit inside a product is
    /// taken as a difference, as in Modelica).
    pub fn multiply(&self, other: &BaseUnit) -> BaseUnit {
        self.combine(other, 1)
    }

    /// The quotient of two units: exponents subtract, factors divide.
    pub fn divide(&self, other: &BaseUnit) -> BaseUnit {
        self.combine(other, -1)
    }

    /// The unit raised to an integer power.
    pub fn powi(&self, n: i32) -> BaseUnit {
        BaseUnit {
            kg: self.kg.saturating_mul(n),
            m: self.m.saturating_mul(n),
            s: self.s.saturating_mul(n),
            a: self.a.saturating_mul(n),
            k: self.k.saturating_mul(n),
            mol: self.mol.saturating_mul(n),
            cd: self.cd.saturating_mul(n),
            rad: self.rad.saturating_mul(n),
            factor: self.factor.powi(n),
            offset: if n == 1 { self.offset } else { 0.0 },
        }
    }

    fn combine(&self, other: &BaseUnit, sign: i32) -> BaseUnit {
        let e = |a: i32, b: i32| a.saturating_add(b.saturating_mul(sign));
        BaseUnit {
            kg: e(self.kg, other.kg),
            m: e(self.m, other.m),
            s: e(self.s, other.s),
            a: e(self.a, other.a),
            k: e(self.k, other.k),
            mol: e(self.mol, other.mol),
            cd: e(self.cd, other.cd),
            rad: e(self.rad, other.rad),
            factor: if sign > 0 {
                self.factor * other.factor
            } else {
                self.factor / other.factor
            },
            offset: 0.0,
        }
    }

    /// The exponents written like `kg.m2.s-3` (`1` when dimensionless).
    pub fn dimension_string(&self) -> String {
        let names = ["kg", "m", "s", "A", "K", "mol", "cd", "rad"];
        let parts: Vec<String> = names
            .iter()
            .zip(self.exponents())
            .filter(|(_, e)| *e != 0)
            .map(|(n, e)| {
                if e == 1 {
                    (*n).to_string()
                } else {
                    format!("{n}{e}")
                }
            })
            .collect();
        if parts.is_empty() {
            "1".to_string()
        } else {
            parts.join(".")
        }
    }
}

/// The dimension of power, kg.m2.s-3 (watt).
pub const POWER: BaseUnit = BaseUnit {
    kg: 1,
    m: 2,
    s: -3,
    a: 0,
    k: 0,
    mol: 0,
    cd: 0,
    rad: 0,
    factor: 1.0,
    offset: 0.0,
};

/// The SI dimension of a variable's unit: the `<BaseUnit>` of its unit
/// definition in `md` when present, else the parsed unit string. `None`
/// when the variable has no unit or the unit is unknown.
pub fn variable_base_unit(md: &ModelDescription, variable: &Variable) -> Option<BaseUnit> {
    unit_base_unit(md, variable.unit.as_deref()?)
}

/// The SI dimension of a unit name as used in `md`: its `<BaseUnit>` when
/// the unit is defined with one, else [`parse_unit`].
pub fn unit_base_unit(md: &ModelDescription, unit: &str) -> Option<BaseUnit> {
    match md.unit(unit).and_then(|u| u.base_unit) {
        Some(b) => Some(b),
        None => parse_unit(unit),
    }
}

/// Parses a unit string in the Modelica unit syntax (plus `*` for products,
/// `^` before exponents and a few common spellings such as `Nm`).
///
/// Returns `None` for an empty or unknown unit: the function never guesses.
///
/// ```
/// use cosim_fmi::model_description::units::parse_unit;
/// let u = parse_unit("kg.m/s2").unwrap();
/// assert_eq!((u.kg, u.m, u.s), (1, 1, -2));
/// let kmh = parse_unit("km/h").unwrap();
/// assert!((kmh.factor - 1.0 / 3.6).abs() < 1e-12);
/// assert!(parse_unit("furlong").is_none());
/// ```
pub fn parse_unit(unit: &str) -> Option<BaseUnit> {
    let unit = unit.trim();
    if unit.is_empty() || unit.len() > 200 {
        return None;
    }
    if let Some(alias) = alias(unit) {
        return parse_unit(alias);
    }
    let tokens = tokenize(unit)?;
    let mut parser = Parser {
        tokens: &tokens,
        pos: 0,
        depth: 0,
    };
    let result = parser.expression()?;
    if parser.pos != tokens.len() {
        return None;
    }
    Some(result)
}

/// Whole-string spellings that are not valid Modelica syntax but common.
fn alias(unit: &str) -> Option<&'static str> {
    Some(match unit {
        "Nm" => "N.m",
        "kNm" => "kN.m",
        "Ns/m" => "N.s/m",
        "Nms/rad" => "N.m.s/rad",
        "m/s^2" => "m/s2",
        _ => return None,
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// A symbol, possibly with a prefix, and its exponent (default 1).
    Factor(String, i32),
    /// The literal `1` (numerator of `1/s`).
    One,
    Times,
    Divide,
    Open,
    Close,
}

fn tokenize(s: &str) -> Option<Vec<Token>> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut explicit_separator = false;
    while let Some(&c) = chars.get(i) {
        match c {
            '.' | '*' | '·' | ' ' => {
                // One product sign: spaces around a separator are ignored,
                // two explicit separators in a row or a leading one are
                // errors.
                let explicit = c != ' ';
                match out.last() {
                    None => return None,
                    Some(Token::Times) => {
                        if explicit && explicit_separator {
                            return None;
                        }
                    }
                    Some(_) => out.push(Token::Times),
                }
                explicit_separator |= explicit;
                i += 1;
                continue;
            }
            '/' => {
                if matches!(out.last(), Some(Token::Times)) {
                    out.pop();
                }
                out.push(Token::Divide);
                i += 1;
            }
            '(' => {
                out.push(Token::Open);
                i += 1;
            }
            ')' => {
                if matches!(out.last(), Some(Token::Times)) {
                    out.pop();
                }
                out.push(Token::Close);
                i += 1;
            }
            c if c.is_alphabetic() || c == '%' || c == '_' || c == 'µ' || c == 'Ω' => {
                let start = i;
                while chars
                    .get(i)
                    .is_some_and(|c| c.is_alphabetic() || matches!(c, '%' | '_' | 'µ' | 'Ω'))
                {
                    i += 1;
                }
                let symbol: String = chars.get(start..i)?.iter().collect();
                let exp = read_exponent(&chars, &mut i)?;
                out.push(Token::Factor(symbol, exp.unwrap_or(1)));
            }
            '1' if !chars
                .get(i + 1)
                .is_some_and(|c| c.is_ascii_digit() || *c == '-' || *c == '+') =>
            {
                out.push(Token::One);
                i += 1;
            }
            _ => return None,
        }
        explicit_separator = false;
        if matches!(out.last(), Some(Token::Times)) && i >= chars.len() {
            return None;
        }
    }
    if matches!(out.last(), Some(Token::Times)) {
        return None;
    }
    Some(out)
}

/// Reads an optional `[^][+-]digits` exponent after a symbol.
fn read_exponent(chars: &[char], i: &mut usize) -> Option<Option<i32>> {
    let mut j = *i;
    if chars.get(j) == Some(&'^') {
        j += 1;
    }
    let mut negative = false;
    match chars.get(j) {
        Some('-') => {
            negative = true;
            j += 1;
        }
        Some('+') => j += 1,
        _ => {}
    }
    let digits_start = j;
    while chars.get(j).is_some_and(char::is_ascii_digit) {
        j += 1;
    }
    if j == digits_start {
        // No digits: a lone '^' or sign is an error, nothing at all is fine.
        return if j == *i { Some(None) } else { None };
    }
    let digits: String = chars.get(digits_start..j)?.iter().collect();
    let value: i32 = digits.parse().ok().filter(|v: &i32| *v <= 100)?;
    *i = j;
    Some(Some(if negative { -value } else { value }))
}

struct Parser<'a> {
    tokens: &'a [Token],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    /// expression := product ( '/' product )*
    fn expression(&mut self) -> Option<BaseUnit> {
        self.depth += 1;
        if self.depth > 16 {
            return None;
        }
        let mut value = self.product()?;
        while self.peek() == Some(&Token::Divide) {
            self.pos += 1;
            let rhs = self.factor()?;
            value = value.divide(&rhs);
        }
        self.depth -= 1;
        Some(value)
    }

    /// product := factor ( '.' factor )*
    fn product(&mut self) -> Option<BaseUnit> {
        let mut value = self.factor()?;
        while self.peek() == Some(&Token::Times) {
            self.pos += 1;
            let rhs = self.factor()?;
            value = value.multiply(&rhs);
        }
        Some(value)
    }

    /// factor := symbol[exponent] | '1' | '(' expression ')'
    fn factor(&mut self) -> Option<BaseUnit> {
        let token = self.peek()?.clone();
        self.pos += 1;
        match token {
            Token::One => Some(BaseUnit::default()),
            Token::Factor(symbol, exp) => Some(symbol_with_prefix(&symbol)?.powi(exp)),
            Token::Open => {
                let inner = self.expression()?;
                if self.peek() != Some(&Token::Close) {
                    return None;
                }
                self.pos += 1;
                Some(inner)
            }
            Token::Times | Token::Divide | Token::Close => None,
        }
    }
}

fn unit(kg: i32, m: i32, s: i32, a: i32, k: i32, rad: i32, factor: f64) -> BaseUnit {
    BaseUnit {
        kg,
        m,
        s,
        a,
        k,
        rad,
        factor,
        ..BaseUnit::default()
    }
}

/// A symbol without prefix.
fn symbol(s: &str) -> Option<BaseUnit> {
    use std::f64::consts::PI;
    Some(match s {
        // SI base units (kg is matched as k + g).
        "m" => unit(0, 1, 0, 0, 0, 0, 1.0),
        "g" => unit(1, 0, 0, 0, 0, 0, 1e-3),
        "s" => unit(0, 0, 1, 0, 0, 0, 1.0),
        "A" => unit(0, 0, 0, 1, 0, 0, 1.0),
        "K" => unit(0, 0, 0, 0, 1, 0, 1.0),
        "mol" => BaseUnit {
            mol: 1,
            ..BaseUnit::default()
        },
        "cd" => BaseUnit {
            cd: 1,
            ..BaseUnit::default()
        },
        "rad" => unit(0, 0, 0, 0, 0, 1, 1.0),
        "sr" => unit(0, 0, 0, 0, 0, 2, 1.0),
        // Derived SI units.
        "N" => unit(1, 1, -2, 0, 0, 0, 1.0),
        "Pa" => unit(1, -1, -2, 0, 0, 0, 1.0),
        "J" => unit(1, 2, -2, 0, 0, 0, 1.0),
        "W" => unit(1, 2, -3, 0, 0, 0, 1.0),
        "V" => unit(1, 2, -3, -1, 0, 0, 1.0),
        "C" => unit(0, 0, 1, 1, 0, 0, 1.0),
        "Ohm" | "ohm" | "Ω" => unit(1, 2, -3, -2, 0, 0, 1.0),
        "S" => unit(-1, -2, 3, 2, 0, 0, 1.0),
        "F" => unit(-1, -2, 4, 2, 0, 0, 1.0),
        "H" => unit(1, 2, -2, -2, 0, 0, 1.0),
        "Wb" => unit(1, 2, -2, -1, 0, 0, 1.0),
        "T" => unit(1, 0, -2, -1, 0, 0, 1.0),
        "Hz" => unit(0, 0, -1, 0, 0, 0, 1.0),
        // Common non-SI units.
        "min" => unit(0, 0, 1, 0, 0, 0, 60.0),
        "h" => unit(0, 0, 1, 0, 0, 0, 3600.0),
        "d" => unit(0, 0, 1, 0, 0, 0, 86400.0),
        "l" | "L" => unit(0, 3, 0, 0, 0, 0, 1e-3),
        "bar" => unit(1, -1, -2, 0, 0, 0, 1e5),
        "rpm" => unit(0, 0, -1, 0, 0, 1, 2.0 * PI / 60.0),
        "deg" => unit(0, 0, 0, 0, 0, 1, PI / 180.0),
        "degC" => BaseUnit {
            k: 1,
            offset: 273.15,
            ..BaseUnit::default()
        },
        "degF" => BaseUnit {
            k: 1,
            factor: 5.0 / 9.0,
            offset: 273.15 - 32.0 * 5.0 / 9.0,
            ..BaseUnit::default()
        },
        "%" => unit(0, 0, 0, 0, 0, 0, 0.01),
        "Wh" => unit(1, 2, -2, 0, 0, 0, 3600.0),
        "eV" => unit(1, 2, -2, 0, 0, 0, 1.602_176_634e-19),
        _ => return None,
    })
}

/// Symbols that take no prefix (so that `min`, `mol`, `cd`, `Pa`, `h`, `d`
/// are never split into prefix + symbol).
const NO_PREFIX: &[&str] = &["min", "h", "d", "rpm", "deg", "degC", "degF", "%"];

fn symbol_with_prefix(s: &str) -> Option<BaseUnit> {
    if let Some(u) = symbol(s) {
        return Some(u);
    }
    const PREFIXES: &[(&str, f64)] = &[
        ("da", 1e1),
        ("Y", 1e24),
        ("Z", 1e21),
        ("E", 1e18),
        ("P", 1e15),
        ("T", 1e12),
        ("G", 1e9),
        ("M", 1e6),
        ("k", 1e3),
        ("h", 1e2),
        ("d", 1e-1),
        ("c", 1e-2),
        ("m", 1e-3),
        ("u", 1e-6),
        ("µ", 1e-6),
        ("n", 1e-9),
        ("p", 1e-12),
        ("f", 1e-15),
        ("a", 1e-18),
        ("z", 1e-21),
        ("y", 1e-24),
    ];
    for (prefix, factor) in PREFIXES {
        if let Some(rest) = s.strip_prefix(prefix) {
            if rest.is_empty() || NO_PREFIX.contains(&rest) {
                continue;
            }
            if let Some(mut u) = symbol(rest) {
                if u.offset != 0.0 {
                    return None;
                }
                u.factor *= factor;
                return Some(u);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_edge_cases() {
        assert!(parse_unit("m.").is_none());
        assert!(parse_unit("/s").is_none());
        assert!(parse_unit("m//s").is_none());
        assert!(parse_unit("(m").is_none());
        assert!(parse_unit("m^").is_none());
        assert!(parse_unit("m2^").is_none());
        assert!(parse_unit("m99999999999").is_none());
        let deep = format!("{}m{}", "(".repeat(100), ")".repeat(100));
        assert!(parse_unit(&deep).is_none());
    }
}
