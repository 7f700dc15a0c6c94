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

/// Second.
pub const S: Unit = Unit {
    name: "s",
    kg: 0,
    m: 0,
    s: 1,
    k: 0,
    a: 0,
    mol: 0,
    cd: 0,
    rad: 0,
    factor: 1.0,
    has_base: true,
    offset: 0.0,
    quantity: "Time",
};
/// Metre.
pub const M: Unit = Unit {
    name: "m",
    kg: 0,
    m: 1,
    s: 0,
    k: 0,
    a: 0,
    mol: 0,
    cd: 0,
    rad: 0,
    factor: 1.0,
    has_base: true,
    offset: 0.0,
    quantity: "Length",
};
/// Metre per second.
pub const M_PER_S: Unit = Unit {
    name: "m/s",
    kg: 0,
    m: 1,
    s: -1,
    k: 0,
    a: 0,
    mol: 0,
    cd: 0,
    rad: 0,
    factor: 1.0,
    has_base: true,
    offset: 0.0,
    quantity: "Velocity",
};
/// Metre per second squared.
pub const M_PER_S2: Unit = Unit {
    name: "m/s2",
    kg: 0,
    m: 1,
    s: -2,
    k: 0,
    a: 0,
    mol: 0,
    cd: 0,
    rad: 0,
    factor: 1.0,
    has_base: true,
    offset: 0.0,
    quantity: "Acceleration",
};
/// Kilogram.
pub const KG: Unit = Unit {
    name: "kg",
    kg: 1,
    m: 0,
    s: 0,
    k: 0,
    a: 0,
    mol: 0,
    cd: 0,
    rad: 0,
    factor: 1.0,
    has_base: true,
    offset: 0.0,
    quantity: "Mass",
};
/// Newton.
pub const N: Unit = Unit {
    name: "N",
    kg: 1,
    m: 1,
    s: -2,
    k: 0,
    a: 0,
    mol: 0,
    cd: 0,
    rad: 0,
    factor: 1.0,
    has_base: true,
    offset: 0.0,
    quantity: "Force",
};
/// Newton per metre (spring stiffness).
pub const N_PER_M: Unit = Unit {
    name: "N/m",
    kg: 1,
    m: 0,
    s: -2,
    k: 0,
    a: 0,
    mol: 0,
    cd: 0,
    rad: 0,
    factor: 1.0,
    has_base: true,
    offset: 0.0,
    quantity: "TranslationalSpringConstant",
};
/// Newton second per metre (damping coefficient).
pub const N_S_PER_M: Unit = Unit {
    name: "N.s/m",
    kg: 1,
    m: 0,
    s: -1,
    k: 0,
    a: 0,
    mol: 0,
    cd: 0,
    rad: 0,
    factor: 1.0,
    has_base: true,
    offset: 0.0,
    quantity: "TranslationalDampingConstant",
};
/// Reciprocal second (rate, eigenvalue).
pub const PER_S: Unit = Unit {
    name: "1/s",
    kg: 0,
    m: 0,
    s: -1,
    k: 0,
    a: 0,
    mol: 0,
    cd: 0,
    rad: 0,
    factor: 1.0,
    has_base: true,
    offset: 0.0,
    quantity: "Frequency",
};
/// Kelvin, as a temperature difference (e.g. a heating rise).
pub const K: Unit = Unit {
    name: "K",
    kg: 0,
    m: 0,
    s: 0,
    k: 1,
    a: 0,
    mol: 0,
    cd: 0,
    rad: 0,
    factor: 1.0,
    has_base: true,
    offset: 0.0,
    quantity: "TemperatureDifference",
};
/// Kelvin per second (a rate of temperature).
pub const K_PER_S: Unit = Unit {
    name: "K/s",
    kg: 0,
    m: 0,
    s: -1,
    k: 1,
    a: 0,
    mol: 0,
    cd: 0,
    rad: 0,
    factor: 1.0,
    has_base: true,
    offset: 0.0,
    quantity: "TemperatureRate",
};
/// Degree Celsius (`<BaseUnit K="1" offset="273.15"/>`).
pub const DEG_C: Unit = Unit {
    name: "degC",
    kg: 0,
    m: 0,
    s: 0,
    k: 1,
    a: 0,
    mol: 0,
    cd: 0,
    rad: 0,
    factor: 1.0,
    has_base: true,
    offset: 273.15,
    quantity: "ThermodynamicTemperature",
};
