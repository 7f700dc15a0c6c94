//! Drives an [`Instance`] directly, without the C layer: for unit tests of
//! models (the same code path as the exports, minus pointer handling).

use std::sync::{Arc, Mutex};

use crate::caps::{Capabilities, FmiVersion};
use crate::instance::{Instance, LogSink, R, Status};
use crate::model::{ModelSpec, VarType, Vr};

/// Messages logged by an instance: (status, category, message).
pub type Log = Arc<Mutex<Vec<(Status, String, String)>>>;

/// A new instance with logging on and a log that collects every message.
pub fn instance(
    spec: &'static ModelSpec,
    version: FmiVersion,
    caps: Capabilities,
) -> (Instance, Log) {
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    let sink_log = Arc::clone(&log);
    let logger: crate::instance::LogFn = Box::new(move |s: Status, c: &str, m: &str| {
        if let Ok(mut l) = sink_log.lock() {
            l.push((s, c.to_string(), m.to_string()));
        }
    });
    let inst = Instance::new(
        spec,
        caps,
        version,
        "test",
        LogSink::new(Some(logger), version, true),
    );
    (inst, log)
}

/// A full-capability instance, initialized with the given parameter values.
pub fn initialized(
    spec: &'static ModelSpec,
    version: FmiVersion,
    params: &[(Vr, f64)],
) -> R<(Instance, Log)> {
    let (mut inst, log) = instance(spec, version, Capabilities::full(spec, version));
    inst.setup_experiment(spec.experiment.start_time)?;
    inst.enter_initialization()?;
    for &(vr, x) in params {
        let ty = spec.variable(vr).map_or(VarType::Real, |v| v.ty);
        inst.set(&[vr], ty, &[x])?;
    }
    inst.exit_initialization()?;
    Ok((inst, log))
}

/// Reads real values.
pub fn get(inst: &mut Instance, vrs: &[Vr]) -> R<Vec<f64>> {
    let mut out = vec![0.0; vrs.len()];
    inst.get(vrs, VarType::Real, &mut |i, x| out[i] = x)?;
    Ok(out)
}

/// Reads one real value.
pub fn get1(inst: &mut Instance, vr: Vr) -> R<f64> {
    Ok(get(inst, &[vr])?[0])
}

/// Sets real values.
pub fn set(inst: &mut Instance, vrs: &[Vr], vals: &[f64]) -> R<()> {
    inst.set(vrs, VarType::Real, vals)
}
