//! The scenario parser on arbitrary text, then, for scenarios it accepts,
//! resolution against a real model description (every subsystem taken to be
//! the project's Gain FMU): located errors only, never a panic.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use cosim_fmi::ModelDescription;
use cosim_scenario::Scenario;
use libfuzzer_sys::fuzz_target;

/// The Gain FMU's model description (y = k u, feed-through).
const GAIN: &str = include_str!("../seeds/gain_fmi2.xml");

fn gain() -> &'static ModelDescription {
    static MD: OnceLock<ModelDescription> = OnceLock::new();
    MD.get_or_init(|| {
        match cosim_fmi::model_description::parse_model_description(GAIN, Path::new("gain.xml")) {
            Ok(md) => md,
            Err(e) => panic!("the Gain seed does not parse: {e}"),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(scenario) = Scenario::from_str(text, "/fuzz/scenario.toml") else {
        return;
    };
    let md = gain();
    let models: Vec<(&str, &ModelDescription)> = scenario
        .subsystems()
        .iter()
        .map(|s| (s.name.value.as_str(), md))
        .collect();
    let _ = scenario.resolve(&models);
});
