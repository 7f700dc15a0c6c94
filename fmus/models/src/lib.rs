//! `cosim-models`: the project's own test FMUs, built from Rust with
//! `fmu-kit`, and monolithic reference solutions of the benchmark systems.
//!
//! One `cdylib` serves every model and capability variant: the FMU's GUID /
//! instantiation token names the model (see `fmu_kit::caps`). The catalog,
//! with variables, units and value references, is `fmus/README.md`.
//!
//! - [`registry()`]: every model's [`ModelSpec`];
//! - [`generic`], [`quarter_car`] (B1), [`b2`], [`three_mass`] (B3),
//!   [`two_mass`] (B4), [`oscillator`] (B5), [`thermostat`] (discrete
//!   Integer / Boolean coupling), [`greeting`] (String parameter, input
//!   and output, with numeric outputs that show them), [`type_mirror`]
//!   (FMI 3 only: the FMI 3 types FMI 2 lacks), [`structural_gain`] (FMI 3
//!   only: a structural parameter, set in Configuration Mode),
//!   [`state_space`] (FMI 3 only: arrays sized by structural parameters,
//!   as the Modelica Reference FMU `StateSpace`), and the Model Exchange
//!   only ones [`bouncing_ball`] (state events), [`robertson`] (stiff),
//!   [`time_events`] and [`step_events`] (the quarter car halves have a
//!   Model Exchange interface beside their Co-Simulation one), and the
//!   Co-Simulation models with FMI 3 event mode [`ticker`] (time events),
//!   [`ballistic`] (state events) and [`sample_hold`] (events from
//!   inputs), and the FMI 3 only models with Clocks [`clocked_controller`]
//!   (an input Clock: a periodic controller partition),
//!   [`threshold_trigger`] (a triggered output Clock) and
//!   [`clocked_counter`] (a triggered input Clock) and
//!   [`aperiodic_clocks`] (time-based Clocks the FMU times: fixed without
//!   intervalDecimal, changing, countdown), and the Scheduled Execution
//!   only [`partitions`] (two input Clocks of different priorities) and
//!   [`countdown_partitions`] (Clock Update Mode: an output and a
//!   countdown Clock, as the Reference FMU `Clocks`): the models,
//!   each in a module with its value references as constants;
//! - [`reference`]: monolithic solutions, written from the equations
//!   independently of the model code.

pub mod aperiodic_clocks;
pub mod b2;
pub mod ballistic;
pub mod bouncing_ball;
#[cfg(test)]
mod clock_tests;
pub mod clocked_controller;
pub mod clocked_counter;
pub mod countdown_partitions;
#[cfg(test)]
mod cs_event_tests;
mod ffi;
pub mod generic;
pub mod greeting;
#[cfg(test)]
mod me_tests;
pub mod oscillator;
pub mod partitions;
pub mod quarter_car;
pub mod reference;
pub mod robertson;
pub mod sample_hold;
pub mod solvers;
pub mod state_space;
pub mod step_events;
pub mod structural_gain;
#[cfg(test)]
mod tests;
pub mod thermostat;
pub mod three_mass;
pub mod threshold_trigger;
pub mod ticker;
pub mod time_events;
#[cfg(test)]
mod timed_clock_tests;
pub mod two_mass;
pub mod type_mirror;

use std::sync::OnceLock;

use fmu_kit::{ModelSpec, Variant};

static REGISTRY: OnceLock<Vec<ModelSpec>> = OnceLock::new();

/// Every model served by this library, in catalog order. A model with FMI 3
/// only variable types (`TypeMirror`), structural parameters
/// (`StructuralGain`), arrays (`StateSpace`) or Clocks (`ClockedController`,
/// `ThresholdTrigger`, `ClockedCounter`, `Partitions`, `AperiodicClocks`,
/// `CountdownPartitions`) has no FMI 2 build (see `ModelSpec::supports`).
pub fn registry() -> &'static [ModelSpec] {
    REGISTRY.get_or_init(|| {
        vec![
            generic::gain::spec(),
            generic::integrator::spec(),
            generic::dahlquist::spec(),
            generic::faulty::spec(),
            generic::wide::spec(),
            generic::terminating::spec(),
            quarter_car::chassis::spec(),
            quarter_car::wheel_suspension::spec(),
            quarter_car::chassis_suspension::spec(),
            quarter_car::wheel::spec(),
            b2::chassis_dd::spec(),
            b2::wheel_dd::spec(),
            b2::chassis_fd::spec(),
            b2::wheel_fd::spec(),
            three_mass::s1::spec(),
            three_mass::s2::spec(),
            three_mass::s3::spec(),
            two_mass::s1::spec(),
            two_mass::s2::spec(),
            oscillator::mass::spec(),
            oscillator::spring::spec(),
            oscillator::spring_damper::spec(),
            thermostat::room::spec(),
            thermostat::controller::spec(),
            greeting::spec(),
            type_mirror::spec(),
            structural_gain::spec(),
            state_space::spec(),
            bouncing_ball::spec(),
            robertson::spec(),
            time_events::spec(),
            step_events::spec(),
            ticker::spec(),
            ballistic::spec(),
            sample_hold::spec(),
            clocked_controller::spec(),
            threshold_trigger::spec(),
            clocked_counter::spec(),
            partitions::spec(),
            aperiodic_clocks::spec(),
            countdown_partitions::spec(),
        ]
    })
}

/// A model's spec by name.
pub fn spec(name: &str) -> Option<&'static ModelSpec> {
    registry().iter().find(|s| s.name == name)
}

/// The models that `cargo xtask fmus` also packages as FMI 2 capability
/// variants (`-nostate`, `-noderiv`, `-nointerp`, `-fixedstep`) and as the
/// FMI 3 variant without intermediate update (`-fmi3-no-intermediate-update`);
/// paths: `fmu_kit::dist::variant_path`.
pub const VARIANT_MODELS: [&str; 7] = [
    "QuarterCarChassis",
    "QuarterCarWheelSuspension",
    "Integrator",
    "B2ChassisDD",
    "B2WheelDD",
    "TwoMassS1",
    "TwoMassS2",
];

/// The quirk builds `cargo xtask fmus` packages into `fmus/dist/quirks/`
/// (`fmu_kit::dist::variant_path`): reproduced misbehaviours of real
/// exporters ([`fmu_kit::Quirk`]), on models where they show: a parameter
/// that visibly changes the outputs (`Integrator.x0`, the chassis mass),
/// states that move without input (`Dahlquist`: x' = -x).
pub const QUIRK_VARIANTS: [(&str, Variant); 7] = [
    ("Integrator", Variant::ResetsInSetup),
    ("QuarterCarChassis", Variant::ResetsInSetup),
    ("Integrator", Variant::FreezesWithoutNoSetPrior),
    ("Dahlquist", Variant::FreezesWithoutNoSetPrior),
    ("Integrator", Variant::Fmi3FreezesWithoutNoSetPrior),
    ("Dahlquist", Variant::Fmi3FreezesWithoutNoSetPrior),
    ("Integrator", Variant::CrashesAtExit),
];
