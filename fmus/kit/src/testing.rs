//! Drives an [`Instance`] directly, without the C layer: for unit tests of
//! models (the same code path as the exports, minus pointer handling).

use std::sync::{Arc, Mutex};

use crate::caps::{Capabilities, FmiVersion};
use crate::input::{InputSource, Inputs, MAX_INPUT_ORDER};
use crate::instance::{Instance, Interface, LogSink, R, Status};
use crate::model::{ModelSpec, VarType, Vr};

pub mod model_exchange;

/// Messages logged by an instance: (status, category, message).
pub type Log = Arc<Mutex<Vec<(Status, String, String)>>>;

/// A new instance with logging on and a log that collects every message.
pub fn instance(
    spec: &'static ModelSpec,
    version: FmiVersion,
    caps: Capabilities,
) -> (Instance, Log) {
    instance_of(spec, version, caps, Interface::CoSimulation)
}

/// [`instance`] of an interface (Model Exchange or Co-Simulation).
pub fn instance_of(
    spec: &'static ModelSpec,
    version: FmiVersion,
    caps: Capabilities,
    interface: Interface,
) -> (Instance, Log) {
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    let sink_log = Arc::clone(&log);
    let logger: crate::instance::LogFn = Box::new(move |s: Status, c: &str, m: &str| {
        if let Ok(mut l) = sink_log.lock() {
            l.push((s, c.to_string(), m.to_string()));
        }
    });
    let inst = Instance::with_interface(
        spec,
        caps,
        version,
        interface,
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
    initialized_as(spec, version, Interface::CoSimulation, params)
}

/// [`initialized`] for an interface: a Model Exchange instance ends in
/// Event Mode, ready for [`model_exchange::simulate`].
pub fn initialized_as(
    spec: &'static ModelSpec,
    version: FmiVersion,
    interface: Interface,
    params: &[(Vr, f64)],
) -> R<(Instance, Log)> {
    let (mut inst, log) = instance_of(spec, version, Capabilities::full(spec, version), interface);
    inst.setup_experiment(spec.experiment.start_time, None)?;
    inst.enter_initialization()?;
    for &(vr, x) in params {
        let ty = spec.variable(vr).map_or(VarType::Real, |v| v.ty);
        inst.set(&[vr], ty, &[x])?;
    }
    inst.exit_initialization()?;
    Ok((inst, log))
}

/// A full-capability FMI 3 instance whose structural parameters are set in
/// Configuration Mode (`structural`, each with its declared type), then
/// initialized with the other `params` set in Initialization Mode: the
/// sequence of an FMI 3 importer.
pub fn initialized_configured(
    spec: &'static ModelSpec,
    structural: &[(Vr, f64)],
    params: &[(Vr, f64)],
) -> R<(Instance, Log)> {
    let version = FmiVersion::Fmi3;
    let (mut inst, log) = instance(spec, version, Capabilities::full(spec, version));
    let typed = |vr: Vr| spec.variable(vr).map_or(VarType::Real, |v| v.ty);
    inst.enter_configuration()?;
    for &(vr, x) in structural {
        inst.set(&[vr], typed(vr), &[x])?;
    }
    inst.exit_configuration()?;
    inst.setup_experiment(spec.experiment.start_time, None)?;
    inst.enter_initialization()?;
    for &(vr, x) in params {
        inst.set(&[vr], typed(vr), &[x])?;
    }
    inst.exit_initialization()?;
    Ok((inst, log))
}

/// Scheduled Execution: `fmi3ActivateModelPartition(clock, t)` as the C
/// layer runs it. When the partition enters Clock Update Mode (it ticked
/// an output Clock or armed a countdown Clock), `clock_update` stands in
/// for the importer's `clockUpdate` callback (it reads with
/// [`Instance::get_clocks`] and [`Instance::get_intervals`]), then Clock
/// Update Mode ends ([`Instance::exit_clock_update`]). Returns whether the
/// partition entered Clock Update Mode.
pub fn activate_partition(
    inst: &mut Instance,
    clock: Vr,
    t: f64,
    clock_update: impl FnOnce(&mut Instance),
) -> R<bool> {
    let entered = inst.activate_partition(clock, t)?;
    if entered {
        clock_update(inst);
        inst.exit_clock_update()?;
    }
    Ok(entered)
}

/// Reads Real values.
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

/// Reads values of any numeric types: each with the type its variable is
/// declared with (Booleans as 0.0 / 1.0; a `String` variable is refused,
/// see [`get_str`]); every element of an FMI 3 array, row-major, in its
/// place ([`get_array`] reads one variable).
pub fn get_any(inst: &mut Instance, vrs: &[Vr]) -> R<Vec<f64>> {
    let mut out = Vec::with_capacity(vrs.len());
    for &vr in vrs {
        out.extend(get_array(inst, vr)?);
    }
    Ok(out)
}

/// Reads every value of one variable of any numeric type (one for a
/// scalar, the elements of an FMI 3 array at its current size, row-major).
pub fn get_array(inst: &mut Instance, vr: Vr) -> R<Vec<f64>> {
    let ty = inst.spec.variable(vr).map_or(VarType::Real, |v| v.ty);
    let mut out = vec![f64::NAN; inst.value_count(&[vr])];
    inst.get(&[vr], ty, &mut |i, x| out[i] = x)?;
    Ok(out)
}

/// Sets every value of one variable of any numeric type with its declared
/// type (the elements of an FMI 3 array, row-major).
pub fn set_array(inst: &mut Instance, vr: Vr, vals: &[f64]) -> R<()> {
    let ty = inst.spec.variable(vr).map_or(VarType::Real, |v| v.ty);
    inst.set(&[vr], ty, vals)
}

/// Reads one Integer value.
pub fn get_int(inst: &mut Instance, vr: Vr) -> R<i64> {
    let mut x = 0.0;
    inst.get(&[vr], VarType::Integer, &mut |_, v| x = v)?;
    Ok(x as i64)
}

/// Reads one Boolean value.
pub fn get_bool(inst: &mut Instance, vr: Vr) -> R<bool> {
    let mut x = 0.0;
    inst.get(&[vr], VarType::Boolean, &mut |_, v| x = v)?;
    Ok(x != 0.0)
}

/// Sets one Integer value.
pub fn set_int(inst: &mut Instance, vr: Vr, x: i32) -> R<()> {
    inst.set(&[vr], VarType::Integer, &[f64::from(x)])
}

/// Sets one Boolean value.
pub fn set_bool(inst: &mut Instance, vr: Vr, b: bool) -> R<()> {
    inst.set(&[vr], VarType::Boolean, &[crate::model::bool_value(b)])
}

/// Reads one String value.
pub fn get_str(inst: &mut Instance, vr: Vr) -> R<String> {
    let mut x = String::new();
    inst.get_strings(&[vr], &mut |_, v| x = v.to_string())?;
    Ok(x)
}

/// Sets one String value.
pub fn set_str(inst: &mut Instance, vr: Vr, s: &str) -> R<()> {
    inst.set_strings(&[vr], &[s])
}

/// An [`InputSource`] for tests, standing in for an FMI 3 importer's
/// intermediate update callback: at each request it sets the inputs to
/// polynomials `[u, u', u'', u''']` expanded at `t0` (evaluated exactly as
/// the kit evaluates FMI 2 input polynomials), and records the times asked.
/// Clones share their state.
#[derive(Clone, Default)]
pub struct PolynomialSource {
    state: Arc<Mutex<PolynomialState>>,
}

#[derive(Default)]
struct PolynomialState {
    polys: Vec<(Vr, [f64; MAX_INPUT_ORDER + 1])>,
    u: Option<Inputs>,
    times: Vec<f64>,
}

impl PolynomialSource {
    /// A source that sets nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// From now on, sets each `(vr, [u, u', u'', u'''])` at `t0`.
    pub fn set(&self, t0: f64, polys: &[(Vr, [f64; MAX_INPUT_ORDER + 1])]) {
        let n = polys
            .iter()
            .map(|(vr, _)| *vr as usize + 1)
            .max()
            .unwrap_or(0);
        let mut u = Inputs::new(n, t0);
        for (vr, c) in polys {
            u.set_value(*vr, c[0]);
            for (k, &d) in c.iter().enumerate().skip(1) {
                u.set_derivative(*vr, k, d);
            }
        }
        if let Ok(mut st) = self.state.lock() {
            st.polys = polys.to_vec();
            st.u = Some(u);
        }
    }

    /// The times asked so far, in order.
    pub fn times(&self) -> Vec<f64> {
        self.state
            .lock()
            .map(|s| s.times.clone())
            .unwrap_or_default()
    }

    /// Forgets the recorded times.
    pub fn clear_times(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.times.clear();
        }
    }

    /// A boxed clone, for [`Instance::do_step_with`].
    pub fn boxed(&self) -> Box<dyn InputSource> {
        Box::new(self.clone())
    }
}

impl InputSource for PolynomialSource {
    fn request(&self, s: f64, set: &mut dyn FnMut(Vr, f64)) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        st.times.push(s);
        if let Some(u) = &st.u {
            for (vr, _) in &st.polys {
                set(*vr, u.at(*vr, s));
            }
        }
    }
}

/// One step from the instance's time with intermediate update from `source`.
pub fn step_with(inst: &mut Instance, h: f64, source: &PolynomialSource) -> R<Status> {
    let t = inst.time();
    inst.do_step_with(t, h, Some(source.boxed()))
}
