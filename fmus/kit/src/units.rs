//! SI units with their `BaseUnit` exponents, as written into `<UnitDefinitions>`.

/// A unit: its name in `modelDescription.xml`, the exponents of the SI base
/// units it is made of (and an offset, for degC), and the physical quantity
/// it usually measures. `value_SI = value + offset`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unit {
    /// Name used in the `unit` attribute, e.g. `"N.s/m"`.
    pub name: &'static str,
    /// Exponent of kilogram.
    pub kg: i32,
    /// Exponent of metre.
    pub m: i32,
    /// Exponent of second.
    pub s: i32,
    /// Exponent of kelvin.
    pub k: i32,
    /// Exponent of ampere.
    pub a: i32,
    /// Exponent of mole.
    pub mol: i32,
    /// Exponent of candela.
    pub cd: i32,
    /// Exponent of radian.
    pub rad: i32,
    /// `factor` of `<BaseUnit>` (1 for the SI units).
    pub factor: f64,
    /// Whether the unit has a `<BaseUnit>` (a unit taken from an FMU that
    /// declares none has not).
    pub has_base: bool,
    /// `offset` of `<BaseUnit>` (273.15 for degC, else 0).
    pub offset: f64,
    /// Default `quantity` attribute of a variable with this unit.
    pub quantity: &'static str,
}

impl Unit {
    /// An SI unit of kilogram, metre, second and kelvin exponents, with its
    /// usual quantity (no offset, factor 1).
    pub const fn si(
        name: &'static str,
        kg: i32,
        m: i32,
        s: i32,
        k: i32,
        quantity: &'static str,
    ) -> Unit {
        Unit {
            name,
            kg,
            m,
            s,
            k,
            a: 0,
            mol: 0,
            cd: 0,
            rad: 0,
            factor: 1.0,
            offset: 0.0,
            quantity,
            has_base: true,
        }
    }
}

/// Second.
pub const S: Unit = Unit::si("s", 0, 0, 1, 0, "Time");
/// Metre.
pub const M: Unit = Unit::si("m", 0, 1, 0, 0, "Length");
/// Metre per second.
pub const M_PER_S: Unit = Unit::si("m/s", 0, 1, -1, 0, "Velocity");
/// Metre per second squared.
pub const M_PER_S2: Unit = Unit::si("m/s2", 0, 1, -2, 0, "Acceleration");
/// Kilogram.
pub const KG: Unit = Unit::si("kg", 1, 0, 0, 0, "Mass");
/// Newton.
pub const N: Unit = Unit::si("N", 1, 1, -2, 0, "Force");
/// Newton per metre (spring stiffness).
pub const N_PER_M: Unit = Unit::si("N/m", 1, 0, -2, 0, "TranslationalSpringConstant");
/// Newton second per metre (damping coefficient).
pub const N_S_PER_M: Unit = Unit::si("N.s/m", 1, 0, -1, 0, "TranslationalDampingConstant");
/// Reciprocal second (rate, eigenvalue).
pub const PER_S: Unit = Unit::si("1/s", 0, 0, -1, 0, "Frequency");
/// Kelvin, as a temperature difference (e.g. a heating rise).
pub const K: Unit = Unit::si("K", 0, 0, 0, 1, "TemperatureDifference");
/// Kelvin per second (a rate of temperature).
pub const K_PER_S: Unit = Unit::si("K/s", 0, 0, -1, 1, "TemperatureRate");
/// Degree Celsius (`<BaseUnit K="1" offset="273.15"/>`).
pub const DEG_C: Unit = Unit {
    offset: 273.15,
    ..Unit::si("degC", 0, 0, 0, 1, "ThermodynamicTemperature")
};
