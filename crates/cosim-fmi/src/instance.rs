//! The version-neutral, safe API over one FMU instance.

use crate::error::{FmiError, Result};
use crate::ffi::fmi2::Fmi2Instance;
use crate::ffi::fmi3::Fmi3Instance;
use crate::ffi::{
    CompletedStep, DiscreteStatesUpdate, Interface, Phase, StateHandle, StepCall, StepOutcome,
};
use crate::model_description::FmiVersion;
use crate::model_exchange::{ModelExchangeDriver, ModelExchangeStatistics, SolverSettings, lent};

/// Options for [`Fmu::instantiate`](crate::Fmu::instantiate).
#[derive(Debug, Clone)]
pub struct InstantiateOptions {
    /// Pass `loggingOn = true` (default): the FMU may then log, and its last
    /// lines are quoted when a call fails.
    pub logging_on: bool,
    /// Debug log categories to enable with `SetDebugLogging` after
    /// instantiation; `None` leaves the FMU's default.
    pub debug_categories: Option<Vec<String>>,
    /// The FMI call log (`--log-fmi-calls`): every call into the instance,
    /// from its instantiation to its freeing, is logged there with its
    /// arguments, the names of its variables and its status
    /// (`docs/fmi-call-log.md`). `None` (default): nothing is logged, and
    /// the calls pay one branch each.
    pub call_log: Option<crate::CallLogSink>,
    /// The interface to instantiate (default Co-Simulation): its element's
    /// `modelIdentifier` names the library loaded.
    pub interface: Interface,
    /// FMI 3 Co-Simulation: event mode and early return (off by default;
    /// event mode only for an FMU that declares `hasEventMode`).
    pub events: crate::EventHandling,
}

impl Default for InstantiateOptions {
    fn default() -> Self {
        InstantiateOptions {
            logging_on: true,
            debug_categories: None,
            call_log: None,
            interface: Interface::CoSimulation,
            events: crate::EventHandling::default(),
        }
    }
}

/// Tolerance, start and stop time of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Experiment {
    tolerance: Option<f64>,
    start_time: f64,
    stop_time: Option<f64>,
}

/// One value of any FMI type, for parameters and start values: a scalar,
/// or the elements of an FMI 3 array (row-major, all of one type).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Value {
    /// Float64 (FMI 2 Real).
    F64(f64),
    /// FMI 3 Float32.
    F32(f32),
    /// FMI 3 Int8.
    I8(i8),
    /// FMI 3 UInt8.
    U8(u8),
    /// FMI 3 Int16.
    I16(i16),
    /// FMI 3 UInt16.
    U16(u16),
    /// FMI 3 UInt32.
    U32(u32),
    /// FMI 3 UInt64.
    U64(u64),
    /// Int32 (FMI 2 Integer and Enumeration, FMI 3 Int32).
    I32(i32),
    /// Int64 (FMI 3 Int64 and Enumeration).
    I64(i64),
    /// Boolean.
    Bool(bool),
    /// String.
    Str(String),
    /// FMI 3 Binary: a byte string.
    Binary(Vec<u8>),
    /// An FMI 3 array: its elements in row-major order, all of the same
    /// scalar variant.
    Array(Vec<Value>),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::F64(x) => write!(f, "{x}"),
            Value::F32(x) => write!(f, "{x}"),
            Value::I8(x) => write!(f, "{x}"),
            Value::U8(x) => write!(f, "{x}"),
            Value::I16(x) => write!(f, "{x}"),
            Value::U16(x) => write!(f, "{x}"),
            Value::U32(x) => write!(f, "{x}"),
            Value::U64(x) => write!(f, "{x}"),
            Value::I32(x) => write!(f, "{x}"),
            Value::I64(x) => write!(f, "{x}"),
            Value::Bool(x) => write!(f, "{x}"),
            Value::Str(x) => write!(f, "{x:?}"),
            Value::Binary(x) => f.write_str(&hex::encode(x)),
            Value::Array(items) => {
                f.write_str("[")?;
                for (k, x) in items.iter().enumerate() {
                    if k > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// What a held step is bound to ([`Instance::held_step`]): the inputs it
/// sets (`u` on `in_vrs`), the outputs it reads (`out_vrs`, into either of
/// `y`, two buffers of `out_vrs.len()` values taking turns:
/// [`BoundStep::step`]), and whether `doStep` is told that no FMU state
/// will be set back before its start (`no_set_prior`).
pub struct HeldValues<'a> {
    /// The value references of the inputs.
    pub in_vrs: &'a [u32],
    /// The input values set.
    pub u: &'a mut [f64],
    /// The value references of the outputs.
    pub out_vrs: &'a [u32],
    /// The two buffers the outputs are read into, by turns.
    pub y: [&'a mut [f64]; 2],
    /// `noSetFMUStatePriorToCurrentPoint`.
    pub no_set_prior: bool,
}

/// An instance's held step bound once ([`Instance::held_step`]): set the
/// inputs, step, read the outputs, with the same calls, checks and errors
/// as [`Instance::set_step_get_f64`].
pub enum HeldStep<'a> {
    /// FMI 2.0.
    V2(crate::ffi::fmi2::Fmi2HeldStep<'a>),
    /// FMI 3.0.
    V3(crate::ffi::fmi3::Fmi3HeldStep<'a>),
}

/// The calls of a held step bound once, for a run of macro steps that make
/// nothing else: in either FMI version ([`HeldStep`]) or in one
/// ([`crate::ffi::fmi2::Fmi2HeldStep`], [`crate::ffi::fmi3::Fmi3HeldStep`],
/// for a run whose FMUs are all of it: no dispatch by version per call).
pub trait BoundStep {
    /// The values the next step sets as inputs.
    fn inputs_mut(&mut self) -> &mut [f64];

    /// The outputs a step on `side` read (see [`BoundStep::step`]).
    fn outputs(&self, side: usize) -> &[f64];

    /// Both output buffers, `side` 0 first.
    fn output_buffers(&mut self) -> (&mut [f64], &mut [f64]);

    /// A step sets inputs, and reads outputs.
    fn calls_set_get(&self) -> (bool, bool);

    /// One step from `t` by `h` (`mark` is told of each call before it is
    /// made, and of [`StepCall::Completed`]; `since` is the end of the
    /// instance's last step as it has it, NaN where it has it already),
    /// the outputs read into the buffer of `side` (0 or 1; the other keeps
    /// what the step before read, where steps take turns) and given to
    /// `check` (a step that reads none checks nothing): `true` when it
    /// completed and its values passed; else [`BoundStep::failed`] says
    /// whether its calls failed and [`BoundStep::take_failure`] how.
    fn step(
        &mut self,
        side: usize,
        t: f64,
        h: f64,
        since: f64,
        mark: impl FnMut(StepCall),
        check: impl FnOnce(&[f64]) -> bool,
    ) -> bool;

    /// The last step did not complete for its calls' sake (not its
    /// check's).
    fn failed(&self) -> bool;

    /// After steps that completed, the last one ending at `t`: the
    /// instance's time.
    fn reached(&mut self, t: f64);

    /// How the last step that did not complete ended: the call it stopped
    /// at ([`StepCall::SetInputs`], [`StepCall::DoStep`] or
    /// [`StepCall::GetOutputs`]) and its error, or the outcome of a
    /// `doStep` that did not reach its end.
    fn take_failure(&mut self) -> (StepCall, Result<StepOutcome>);
}

impl BoundStep for HeldStep<'_> {
    #[inline(always)]
    fn inputs_mut(&mut self) -> &mut [f64] {
        match self {
            HeldStep::V2(s) => s.inputs_mut(),
            HeldStep::V3(s) => s.inputs_mut(),
        }
    }

    #[inline(always)]
    fn outputs(&self, side: usize) -> &[f64] {
        match self {
            HeldStep::V2(s) => s.outputs(side),
            HeldStep::V3(s) => s.outputs(side),
        }
    }

    fn output_buffers(&mut self) -> (&mut [f64], &mut [f64]) {
        match self {
            HeldStep::V2(s) => s.output_buffers(),
            HeldStep::V3(s) => s.output_buffers(),
        }
    }

    fn calls_set_get(&self) -> (bool, bool) {
        match self {
            HeldStep::V2(s) => s.calls_set_get(),
            HeldStep::V3(s) => s.calls_set_get(),
        }
    }

    #[inline(always)]
    fn step(
        &mut self,
        side: usize,
        t: f64,
        h: f64,
        since: f64,
        mark: impl FnMut(StepCall),
        check: impl FnOnce(&[f64]) -> bool,
    ) -> bool {
        match self {
            HeldStep::V2(s) => s.step(side, t, h, since, mark, check),
            HeldStep::V3(s) => s.step(side, t, h, since, mark, check),
        }
    }

    fn failed(&self) -> bool {
        match self {
            HeldStep::V2(s) => s.failed(),
            HeldStep::V3(s) => s.failed(),
        }
    }

    fn reached(&mut self, t: f64) {
        match self {
            HeldStep::V2(s) => s.reached(t),
            HeldStep::V3(s) => s.reached(t),
        }
    }

    fn take_failure(&mut self) -> (StepCall, Result<StepOutcome>) {
        match self {
            HeldStep::V2(s) => s.take_failure(),
            HeldStep::V3(s) => s.take_failure(),
        }
    }
}

pub(crate) enum Inner {
    V2(Fmi2Instance),
    V3(Fmi3Instance),
    /// A Model Exchange instance's binding while its integrator holds it
    /// (inside one driver call, which holds the whole [`Instance`]: never
    /// seen by a caller).
    Lent,
}

impl Inner {
    /// The binding's phase (`None` while lent).
    pub(crate) fn phase(&self) -> Option<Phase> {
        match self {
            Inner::V2(i) => Some(i.phase()),
            Inner::V3(i) => Some(i.phase()),
            Inner::Lent => None,
        }
    }
}

/// A value's bits, for comparing a discrete input with the value last set.
pub(crate) trait InputBits: Copy {
    fn bits(self) -> u64;
}

macro_rules! input_bits {
    ($($t:ty => |$x:ident| $e:expr),* $(,)?) => {
        $(impl InputBits for $t {
            #[inline]
            fn bits(self) -> u64 {
                let $x = self;
                $e
            }
        })*
    };
}

input_bits! {
    f64 => |x| x.to_bits(),
    f32 => |x| u64::from(x.to_bits()),
    i8 => |x| x as u64,
    u8 => |x| u64::from(x),
    i16 => |x| x as u64,
    u16 => |x| u64::from(x),
    i32 => |x| x as u64,
    u32 => |x| u64::from(x),
    i64 => |x| x as u64,
    u64 => |x| x,
    bool => |x| u64::from(x),
}

/// What a call on a lent binding gives ([`Inner::Lent`]; unreachable from
/// outside a driver call, answered without panicking all the same).
pub(crate) trait WhenLent {
    fn when_lent() -> Self;
}

impl<T> WhenLent for Result<T> {
    fn when_lent() -> Self {
        Err(FmiError::Lent)
    }
}

impl<T> WhenLent for Option<T> {
    fn when_lent() -> Self {
        None
    }
}

impl WhenLent for &str {
    fn when_lent() -> Self {
        ""
    }
}

macro_rules! when_lent_default {
    ($($t:ty),*) => {$(
        impl WhenLent for $t {
            fn when_lent() -> Self {
                <$t>::default()
            }
        }
    )*};
}
when_lent_default!(usize, u64, bool, Vec<String>, Interface);

impl WhenLent for Phase {
    fn when_lent() -> Self {
        Phase::Error
    }
}

/// One instance of an FMU, in either FMI version.
///
/// All methods take `&mut self`: an instance is never called concurrently.
/// It is `Send`, so a master may step it on a worker thread. Dropping it
/// frees its saved states and the instance (except after a Fatal status,
/// when the standard forbids any further call).
pub struct Instance {
    pub(crate) inner: Inner,
    pub(crate) version: FmiVersion,
    /// FMI 3: the experiment given to [`Instance::setup_experiment`], passed
    /// to `fmi3EnterInitializationMode`.
    pub(crate) experiment: Option<Experiment>,
    /// Releases the "only once per process" registration on drop.
    pub(crate) _once_guard: Option<crate::fmu::OnceGuard>,
    /// Keeps the extracted files (resources) alive as long as the instance.
    pub(crate) _fmu: crate::Fmu,
    /// A Model Exchange instance's driver: its integrator advances the
    /// instance in [`Instance::do_step`] (`None`: Co-Simulation, or Model
    /// Exchange driven by the caller through the binding's calls).
    pub(crate) me: Option<Box<ModelExchangeDriver>>,
    /// Parked on its FMU when dropped, under this key, if its run is over
    /// ([`crate::reuse`]); `None`: freed.
    pub(crate) reuse: Option<Box<ReuseKey>>,
}

/// What a parked instance must have been instantiated with to serve an
/// instantiation ([`crate::reuse`]): Co-Simulation, no call log, and these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReuseKey {
    pub(crate) name: String,
    pub(crate) logging_on: bool,
    pub(crate) debug_categories: Option<Vec<String>>,
    pub(crate) events: crate::EventHandling,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let Some(key) = self.reuse.take() else {
            return;
        };
        if self.me.is_some() || !crate::reuse::parking() {
            return;
        }
        let mut inner = std::mem::replace(&mut self.inner, Inner::Lent);
        let ready = match &mut inner {
            Inner::V2(i) => i.ready_for_reuse(),
            Inner::V3(i) => i.ready_for_reuse(),
            Inner::Lent => false,
        };
        if ready {
            self._fmu.park(*key, inner);
        }
    }
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("name", &self.name())
            .field("version", &self.version)
            .finish()
    }
}

macro_rules! dispatch {
    (&$self:ident, $i:ident => $e:expr) => {
        match &$self.inner {
            Inner::V2($i) => $e,
            Inner::V3($i) => $e,
            Inner::Lent => WhenLent::when_lent(),
        }
    };
    ($self:ident, $i:ident => $e:expr) => {
        match &mut $self.inner {
            Inner::V2($i) => $e,
            Inner::V3($i) => $e,
            Inner::Lent => WhenLent::when_lent(),
        }
    };
}

impl Instance {
    /// The instance name given at instantiation.
    pub fn name(&self) -> &str {
        dispatch!(&self, i => i.name())
    }

    /// The model description of the FMU.
    pub fn model_description(&self) -> &crate::ModelDescription {
        self._fmu.model_description()
    }

    /// The FMI version of the FMU.
    pub fn fmi_version(&self) -> FmiVersion {
        self.version
    }

    /// The last lines the FMU logged (and forgets them).
    pub fn take_recent_log(&mut self) -> Vec<String> {
        dispatch!(self, i => i.take_recent_log())
    }

    /// Enables debug logging for the given categories (empty: all).
    pub fn set_debug_logging(&mut self, on: bool, categories: &[&str]) -> Result<()> {
        dispatch!(self, i => i.set_debug_logging(on, categories))
    }

    /// Where the instance is in the standard's state machine.
    pub fn phase(&self) -> Phase {
        dispatch!(&self, i => i.phase())
    }

    /// The interface the instance was created for
    /// ([`InstantiateOptions::interface`]).
    pub fn interface(&self) -> Interface {
        dispatch!(&self, i => i.interface())
    }

    /// Sets up the run (state Instantiated): FMI 2 calls
    /// `fmi2SetupExperiment` now; FMI 3 passes the values to
    /// `fmi3EnterInitializationMode`. Parameters and start values are set
    /// after this call, then [`Instance::enter_initialization_mode`].
    pub fn setup_experiment(
        &mut self,
        tolerance: Option<f64>,
        start_time: f64,
        stop_time: Option<f64>,
    ) -> Result<()> {
        if let Inner::V2(i) = &mut self.inner {
            i.setup_experiment(tolerance, start_time, stop_time)?;
        }
        self.experiment = Some(Experiment {
            tolerance,
            start_time,
            stop_time,
        });
        Ok(())
    }

    /// Enters Initialization Mode, after [`Instance::setup_experiment`].
    pub fn enter_initialization_mode(&mut self) -> Result<()> {
        let Some(e) = self.experiment else {
            return Err(FmiError::InvalidArgument {
                instance: self.name().to_string(),
                function: match self.version {
                    FmiVersion::V2 => "fmi2EnterInitializationMode",
                    FmiVersion::V3 => "fmi3EnterInitializationMode",
                },
                reason: "called before setup_experiment (an importer bug: please report it)".into(),
            });
        };
        match &mut self.inner {
            Inner::V2(i) => i.enter_initialization_mode(),
            Inner::V3(i) => i.enter_initialization_mode(e.tolerance, e.start_time, e.stop_time),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// FMI 3: enters Configuration Mode, where structural parameters are
    /// set (from Instantiated; FMI 2 has none and refuses).
    pub fn enter_configuration_mode(&mut self) -> Result<()> {
        match &mut self.inner {
            Inner::V3(i) => i.enter_configuration_mode(),
            Inner::V2(i) => Err(FmiError::NotSupported {
                instance: i.name().to_string(),
                function: "fmi3EnterConfigurationMode",
                reason: "FMI 2.0 has no structural parameters".into(),
            }),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// FMI 3: leaves Configuration Mode, back to Instantiated.
    pub fn exit_configuration_mode(&mut self) -> Result<()> {
        match &mut self.inner {
            Inner::V3(i) => i.exit_configuration_mode(),
            Inner::V2(i) => Err(FmiError::NotSupported {
                instance: i.name().to_string(),
                function: "fmi3ExitConfigurationMode",
                reason: "FMI 2.0 has no structural parameters".into(),
            }),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Leaves Initialization Mode: an instance for Co-Simulation is then
    /// ready to step, one for Model Exchange in Event Mode.
    pub fn exit_initialization_mode(&mut self) -> Result<()> {
        dispatch!(self, i => i.exit_initialization_mode())?;
        if let Some(me) = &mut self.me {
            // Event Mode now: the initial event iteration, then the
            // integrator starts.
            let t0 = self.experiment.map_or(0.0, |e| e.start_time);
            me.set_stop_time(self.experiment.and_then(|e| e.stop_time));
            lent!(me, self, me.start(t0))?;
        }
        Ok(())
    }

    /// Terminates the simulation run of this instance, where the state
    /// machine allows it (after initialization, before an Error: Step
    /// Mode, Event Mode, Continuous-Time Mode); else it is only freed when
    /// dropped. Idempotent.
    pub fn terminate(&mut self) -> Result<()> {
        dispatch!(self, i => i.terminate())
    }

    /// Resets the instance to the state after instantiation.
    pub fn reset(&mut self) -> Result<()> {
        self.experiment = None;
        dispatch!(self, i => i.reset())?;
        if let Some(me) = &mut self.me {
            me.reset_run();
        }
        Ok(())
    }

    /// Sets one variable of any type through the matching FMI call.
    pub fn set_value(&mut self, vr: u32, value: &Value) -> Result<()> {
        match value {
            Value::F64(x) => self.set_f64(&[vr], &[*x]),
            Value::F32(x) => self.set_f32(&[vr], &[*x]),
            Value::I8(x) => self.set_i8(&[vr], &[*x]),
            Value::U8(x) => self.set_u8(&[vr], &[*x]),
            Value::I16(x) => self.set_i16(&[vr], &[*x]),
            Value::U16(x) => self.set_u16(&[vr], &[*x]),
            Value::U32(x) => self.set_u32(&[vr], &[*x]),
            Value::U64(x) => self.set_u64(&[vr], &[*x]),
            Value::I32(x) => self.set_i32(&[vr], &[*x]),
            Value::I64(x) => self.set_i64(&[vr], &[*x]),
            Value::Bool(x) => self.set_bool(&[vr], &[*x]),
            Value::Str(x) => self.set_string(&[vr], &[x.as_str()]),
            Value::Binary(x) => self.set_binary(&[vr], &[x.as_slice()]),
            Value::Array(items) => self.set_array(vr, items),
        }
    }

    /// Sets every element of array variable `vr` in one call of its type.
    fn set_array(&mut self, vr: u32, items: &[Value]) -> Result<()> {
        macro_rules! typed {
            ($variant:ident, $set:ident) => {{
                let values: Option<Vec<_>> = items
                    .iter()
                    .map(|x| match x {
                        Value::$variant(v) => Some(v.clone()),
                        _ => None,
                    })
                    .collect();
                match values {
                    Some(v) => self.$set(&[vr], &v),
                    None => Err(self.mixed_array(vr)),
                }
            }};
        }
        match items.first() {
            None => Ok(()),
            Some(Value::F64(_)) => typed!(F64, set_f64),
            Some(Value::F32(_)) => typed!(F32, set_f32),
            Some(Value::I8(_)) => typed!(I8, set_i8),
            Some(Value::U8(_)) => typed!(U8, set_u8),
            Some(Value::I16(_)) => typed!(I16, set_i16),
            Some(Value::U16(_)) => typed!(U16, set_u16),
            Some(Value::U32(_)) => typed!(U32, set_u32),
            Some(Value::U64(_)) => typed!(U64, set_u64),
            Some(Value::I32(_)) => typed!(I32, set_i32),
            Some(Value::I64(_)) => typed!(I64, set_i64),
            Some(Value::Bool(_)) => typed!(Bool, set_bool),
            Some(Value::Str(_)) => {
                let values: Option<Vec<&str>> = items
                    .iter()
                    .map(|x| match x {
                        Value::Str(v) => Some(v.as_str()),
                        _ => None,
                    })
                    .collect();
                match values {
                    Some(v) => self.set_string(&[vr], &v),
                    None => Err(self.mixed_array(vr)),
                }
            }
            Some(Value::Binary(_)) => {
                let values: Option<Vec<&[u8]>> = items
                    .iter()
                    .map(|x| match x {
                        Value::Binary(v) => Some(v.as_slice()),
                        _ => None,
                    })
                    .collect();
                match values {
                    Some(v) => self.set_binary(&[vr], &v),
                    None => Err(self.mixed_array(vr)),
                }
            }
            Some(Value::Array(_)) => Err(self.mixed_array(vr)),
        }
    }

    #[cold]
    fn mixed_array(&self, vr: u32) -> crate::FmiError {
        crate::FmiError::InvalidArgument {
            instance: self.name().to_string(),
            function: "set_value",
            reason: format!(
                "the elements given for value reference {vr} are not all of one scalar type"
            ),
        }
    }

    /// Reads float variables (FMI 2 Real, FMI 3 Float64).
    #[inline]
    pub fn get_f64(&mut self, vrs: &[u32], values: &mut [f64]) -> Result<()> {
        match &mut self.inner {
            Inner::V2(i) => i.get_real(vrs, values),
            Inner::V3(i) => i.get_float64(vrs, values),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// One step with float inputs held over it: sets `u` on `in_vrs`
    /// (no call without inputs), steps from `t` by `h`, and when the step
    /// completed reads `out_vrs` into `y` (no call without outputs). The
    /// same calls, checks and errors as [`Instance::set_f64`],
    /// [`Instance::do_step`] and [`Instance::get_f64`] in turn (FMI 2: in
    /// one function, with the OK path inline). `mark` is told of each call
    /// before it is made, and of the step's completion
    /// ([`StepCall::Completed`]) before `Ok(StepOutcome::Completed)` is
    /// returned: a caller that ends its bookkeeping there keeps the OK path
    /// free of a test of the result.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn set_step_get_f64(
        &mut self,
        in_vrs: &[u32],
        u: &[f64],
        t: f64,
        h: f64,
        no_set_prior: bool,
        out_vrs: &[u32],
        y: &mut [f64],
        mut mark: impl FnMut(StepCall),
    ) -> Result<StepOutcome> {
        if self.me.is_some() {
            return self.set_step_get_model_exchange(in_vrs, u, t, h, out_vrs, y, mark);
        }
        match &mut self.inner {
            Inner::V2(i) => i.set_step_get_real(in_vrs, u, t, h, no_set_prior, out_vrs, y, mark),
            Inner::V3(i) => {
                if !in_vrs.is_empty() {
                    mark(StepCall::SetInputs);
                    i.set_float64(in_vrs, u)?;
                }
                mark(StepCall::DoStep);
                let outcome = i.do_step(t, h, no_set_prior)?;
                if outcome == StepOutcome::Completed {
                    if !out_vrs.is_empty() {
                        mark(StepCall::GetOutputs);
                        i.get_float64(out_vrs, y)?;
                    }
                    mark(StepCall::Completed);
                }
                Ok(outcome)
            }
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// [`Instance::set_step_get_f64`] of a Model Exchange instance: the
    /// inputs, the integrator's step, the outputs.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn set_step_get_model_exchange(
        &mut self,
        in_vrs: &[u32],
        u: &[f64],
        t: f64,
        h: f64,
        out_vrs: &[u32],
        y: &mut [f64],
        mut mark: impl FnMut(StepCall),
    ) -> Result<StepOutcome> {
        if !in_vrs.is_empty() {
            mark(StepCall::SetInputs);
            self.set_f64(in_vrs, u)?;
        }
        mark(StepCall::DoStep);
        let outcome = self.do_step(t, h, true)?;
        if outcome == StepOutcome::Completed {
            if !out_vrs.is_empty() {
                mark(StepCall::GetOutputs);
                self.get_f64(out_vrs, y)?;
            }
            mark(StepCall::Completed);
        }
        Ok(outcome)
    }

    /// The calls of [`Instance::set_step_get_f64`] bound once to `values`,
    /// for a run of macro steps that make nothing else ([`HeldStep`]).
    /// `None` where the binding gives none
    /// ([`crate::ffi::common::FmiInstance::held_step`]: an instance for
    /// Model Exchange, one that logs its calls, ...).
    pub fn held_step<'a>(&'a mut self, values: HeldValues<'a>) -> Option<HeldStep<'a>> {
        Some(match &mut self.inner {
            Inner::V2(i) => HeldStep::V2(i.held_step(values)?),
            Inner::V3(i) => HeldStep::V3(i.held_step(values)?),
            Inner::Lent => return None,
        })
    }

    /// [`Instance::held_step`] of an FMI 2.0 instance (`None` for FMI 3.0).
    pub fn held_step_fmi2<'a>(
        &'a mut self,
        values: HeldValues<'a>,
    ) -> Option<crate::ffi::fmi2::Fmi2HeldStep<'a>> {
        match &mut self.inner {
            Inner::V2(i) => i.held_step(values),
            Inner::V3(_) => None,
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// [`Instance::held_step`] of an FMI 3.0 instance (`None` for FMI 2.0).
    pub fn held_step_fmi3<'a>(
        &'a mut self,
        values: HeldValues<'a>,
    ) -> Option<crate::ffi::fmi3::Fmi3HeldStep<'a>> {
        match &mut self.inner {
            Inner::V3(i) => i.held_step(values),
            Inner::V2(_) => None,
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Writes float variables (FMI 2 Real, FMI 3 Float64).
    #[inline]
    pub fn set_f64(&mut self, vrs: &[u32], values: &[f64]) -> Result<()> {
        if !self.before_set_values(vrs, values)? {
            return Ok(());
        }
        match &mut self.inner {
            Inner::V2(i) => i.set_real(vrs, values),
            Inner::V3(i) => i.set_float64(vrs, values),
            Inner::Lent => WhenLent::when_lent(),
        }?;
        if let Some(me) = &mut self.me {
            // The value holds over the step until derivatives are given.
            me.inputs_set(vrs, values);
        }
        Ok(())
    }

    /// Before `vrs` of a Model Exchange instance are set to `values`: a
    /// discrete input may be set in Event Mode only, so a change in
    /// Continuous-Time Mode enters it (the event iteration follows at the
    /// next step). A value equal to the one last set is no change: a
    /// coupled discrete input set again at every communication point makes
    /// an event only when its value changes, and is not set again (the FMU
    /// would refuse it in Continuous-Time Mode). False when there is
    /// nothing to set.
    #[inline]
    fn before_set_values<T: InputBits>(&mut self, vrs: &[u32], values: &[T]) -> Result<bool> {
        self.before_set_bits(vrs, values.iter().map(|v| Some(v.bits())))
    }

    /// [`Instance::before_set_values`] for values not compared (strings,
    /// binaries): each set is a change.
    #[inline]
    fn before_set(&mut self, vrs: &[u32]) -> Result<bool> {
        self.before_set_bits(vrs, vrs.iter().map(|_| None))
    }

    #[inline]
    fn before_set_bits(
        &mut self,
        vrs: &[u32],
        bits: impl Iterator<Item = Option<u64>>,
    ) -> Result<bool> {
        let Some(me) = &mut self.me else {
            return Ok(true);
        };
        if vrs.is_empty() {
            return Ok(true);
        }
        me.note_value_set();
        if !me.any_discrete_input(vrs) {
            return Ok(true);
        }
        let (changed, all_discrete) = me.discrete_inputs_change(vrs, bits);
        if self.inner.phase() != Some(Phase::ContinuousTimeMode) {
            return Ok(true);
        }
        if !changed && all_discrete {
            return Ok(false);
        }
        // (Unchanged discrete inputs set together with continuous ones
        // take Event Mode too: the call sets them all.)
        lent!(me, self, me.enter_event_mode_for_inputs())?;
        Ok(true)
    }

    /// Reads 32-bit integers (FMI 2 Integer/Enumeration, FMI 3 Int32).
    pub fn get_i32(&mut self, vrs: &[u32], values: &mut [i32]) -> Result<()> {
        match &mut self.inner {
            Inner::V2(i) => i.get_integer(vrs, values),
            Inner::V3(i) => i.get_int32(vrs, values),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Writes 32-bit integers (FMI 2 Integer/Enumeration, FMI 3 Int32).
    pub fn set_i32(&mut self, vrs: &[u32], values: &[i32]) -> Result<()> {
        if !self.before_set_values(vrs, values)? {
            return Ok(());
        }
        match &mut self.inner {
            Inner::V2(i) => i.set_integer(vrs, values),
            Inner::V3(i) => i.set_int32(vrs, values),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Reads 64-bit integers (FMI 3 Int64/Enumeration only).
    pub fn get_i64(&mut self, vrs: &[u32], values: &mut [i64]) -> Result<()> {
        match &mut self.inner {
            Inner::V2(i) => Err(FmiError::NotSupported {
                instance: i.name().to_string(),
                function: "fmi3GetInt64",
                reason: "FMI 2.0 has no 64-bit integers".into(),
            }),
            Inner::V3(i) => i.get_int64(vrs, values),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Writes 64-bit integers (FMI 3 Int64/Enumeration only).
    pub fn set_i64(&mut self, vrs: &[u32], values: &[i64]) -> Result<()> {
        if !self.before_set_values(vrs, values)? {
            return Ok(());
        }
        match &mut self.inner {
            Inner::V2(i) => Err(FmiError::NotSupported {
                instance: i.name().to_string(),
                function: "fmi3SetInt64",
                reason: "FMI 2.0 has no 64-bit integers".into(),
            }),
            Inner::V3(i) => i.set_int64(vrs, values),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// FMI 3 scalar types beyond Float64, Int32, Int64 and Boolean: FMI 2
    /// has none of them.
    fn fmi3_only(&mut self, function: &'static str) -> FmiError {
        FmiError::NotSupported {
            instance: self.name().to_string(),
            function,
            reason: "FMI 2.0 has no variables of this type".into(),
        }
    }

    /// Reads FMI 3 Float32 variables.
    pub fn get_f32(&mut self, vrs: &[u32], values: &mut [f32]) -> Result<()> {
        match &mut self.inner {
            Inner::V3(i) => i.get_float32(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3GetFloat32")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Writes FMI 3 Float32 variables.
    pub fn set_f32(&mut self, vrs: &[u32], values: &[f32]) -> Result<()> {
        if !self.before_set_values(vrs, values)? {
            return Ok(());
        }
        match &mut self.inner {
            Inner::V3(i) => i.set_float32(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3SetFloat32")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Reads FMI 3 Int8 variables.
    pub fn get_i8(&mut self, vrs: &[u32], values: &mut [i8]) -> Result<()> {
        match &mut self.inner {
            Inner::V3(i) => i.get_int8(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3GetInt8")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Writes FMI 3 Int8 variables.
    pub fn set_i8(&mut self, vrs: &[u32], values: &[i8]) -> Result<()> {
        if !self.before_set_values(vrs, values)? {
            return Ok(());
        }
        match &mut self.inner {
            Inner::V3(i) => i.set_int8(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3SetInt8")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Reads FMI 3 UInt8 variables.
    pub fn get_u8(&mut self, vrs: &[u32], values: &mut [u8]) -> Result<()> {
        match &mut self.inner {
            Inner::V3(i) => i.get_uint8(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3GetUInt8")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Writes FMI 3 UInt8 variables.
    pub fn set_u8(&mut self, vrs: &[u32], values: &[u8]) -> Result<()> {
        if !self.before_set_values(vrs, values)? {
            return Ok(());
        }
        match &mut self.inner {
            Inner::V3(i) => i.set_uint8(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3SetUInt8")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Reads FMI 3 Int16 variables.
    pub fn get_i16(&mut self, vrs: &[u32], values: &mut [i16]) -> Result<()> {
        match &mut self.inner {
            Inner::V3(i) => i.get_int16(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3GetInt16")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Writes FMI 3 Int16 variables.
    pub fn set_i16(&mut self, vrs: &[u32], values: &[i16]) -> Result<()> {
        if !self.before_set_values(vrs, values)? {
            return Ok(());
        }
        match &mut self.inner {
            Inner::V3(i) => i.set_int16(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3SetInt16")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Reads FMI 3 UInt16 variables.
    pub fn get_u16(&mut self, vrs: &[u32], values: &mut [u16]) -> Result<()> {
        match &mut self.inner {
            Inner::V3(i) => i.get_uint16(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3GetUInt16")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Writes FMI 3 UInt16 variables.
    pub fn set_u16(&mut self, vrs: &[u32], values: &[u16]) -> Result<()> {
        if !self.before_set_values(vrs, values)? {
            return Ok(());
        }
        match &mut self.inner {
            Inner::V3(i) => i.set_uint16(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3SetUInt16")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Reads FMI 3 UInt32 variables.
    pub fn get_u32(&mut self, vrs: &[u32], values: &mut [u32]) -> Result<()> {
        match &mut self.inner {
            Inner::V3(i) => i.get_uint32(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3GetUInt32")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Writes FMI 3 UInt32 variables.
    pub fn set_u32(&mut self, vrs: &[u32], values: &[u32]) -> Result<()> {
        if !self.before_set_values(vrs, values)? {
            return Ok(());
        }
        match &mut self.inner {
            Inner::V3(i) => i.set_uint32(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3SetUInt32")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Reads FMI 3 UInt64 variables.
    pub fn get_u64(&mut self, vrs: &[u32], values: &mut [u64]) -> Result<()> {
        match &mut self.inner {
            Inner::V3(i) => i.get_uint64(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3GetUInt64")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Writes FMI 3 UInt64 variables.
    pub fn set_u64(&mut self, vrs: &[u32], values: &[u64]) -> Result<()> {
        if !self.before_set_values(vrs, values)? {
            return Ok(());
        }
        match &mut self.inner {
            Inner::V3(i) => i.set_uint64(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3SetUInt64")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Reads Booleans.
    pub fn get_bool(&mut self, vrs: &[u32], values: &mut [bool]) -> Result<()> {
        dispatch!(self, i => i.get_boolean(vrs, values))
    }

    /// Writes Booleans.
    pub fn set_bool(&mut self, vrs: &[u32], values: &[bool]) -> Result<()> {
        if !self.before_set_values(vrs, values)? {
            return Ok(());
        }
        dispatch!(self, i => i.set_boolean(vrs, values))
    }

    /// Reads strings.
    pub fn get_string(&mut self, vrs: &[u32]) -> Result<Vec<String>> {
        dispatch!(self, i => i.get_string(vrs))
    }

    /// Writes strings.
    pub fn set_string(&mut self, vrs: &[u32], values: &[&str]) -> Result<()> {
        if !self.before_set(vrs)? {
            return Ok(());
        }
        dispatch!(self, i => i.set_string(vrs, values))
    }

    /// Reads FMI 3 Binary variables (copied out).
    pub fn get_binary(&mut self, vrs: &[u32]) -> Result<Vec<Vec<u8>>> {
        match &mut self.inner {
            Inner::V3(i) => i.get_binary(vrs),
            Inner::V2(_) => Err(self.fmi3_only("fmi3GetBinary")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Writes FMI 3 Binary variables.
    pub fn set_binary(&mut self, vrs: &[u32], values: &[&[u8]]) -> Result<()> {
        if !self.before_set(vrs)? {
            return Ok(());
        }
        match &mut self.inner {
            Inner::V3(i) => i.set_binary(vrs, values),
            Inner::V2(_) => Err(self.fmi3_only("fmi3SetBinary")),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Advances from communication point `t` by `h`. `no_set_prior` is
    /// `noSetFMUStatePriorToCurrentPoint`: true when no state saved before
    /// `t` will be restored (every master that never rolls back); false
    /// only where a restore may follow. Some FMUs misbehave with false
    /// (they keep history, or freeze), so pass true wherever possible. An
    /// instance for Model Exchange refuses (its importer integrates it).
    #[inline]
    pub fn do_step(&mut self, t: f64, h: f64, no_set_prior: bool) -> Result<StepOutcome> {
        if let Some(me) = &mut self.me {
            return lent!(me, self, me.step(t, h));
        }
        dispatch!(self, i => i.do_step(t, h, no_set_prior))
    }

    /// A Model Exchange instance driven by `cosim`'s integrator: the whole
    /// run's solver and event figures (`None` for Co-Simulation).
    pub fn model_exchange_statistics(&self) -> Option<ModelExchangeStatistics> {
        self.me.as_ref().map(|me| me.statistics())
    }

    /// The solver of a Model Exchange instance driven by `cosim`.
    pub fn solver_settings(&self) -> Option<SolverSettings> {
        self.me.as_ref().map(|me| *me.settings())
    }

    /// Saves the FMU state, into a new handle or overwriting `reuse`.
    pub fn get_state(&mut self, reuse: Option<StateHandle>) -> Result<StateHandle> {
        if let Some(me) = &mut self.me {
            return lent!(me, self, me.save(reuse));
        }
        dispatch!(self, i => i.get_fmu_state(reuse))
    }

    /// Restores a saved FMU state.
    pub fn set_state(&mut self, state: StateHandle) -> Result<()> {
        if let Some(me) = &mut self.me {
            return lent!(me, self, me.restore(state));
        }
        dispatch!(self, i => i.set_fmu_state(state))
    }

    /// Frees a saved FMU state.
    pub fn free_state(&mut self, state: StateHandle) -> Result<()> {
        if let Some(me) = &mut self.me {
            return lent!(me, self, me.free(state));
        }
        dispatch!(self, i => i.free_fmu_state(state))
    }

    /// Serializes a saved FMU state into bytes.
    pub fn serialize_state(&mut self, state: StateHandle) -> Result<Vec<u8>> {
        if self.me.is_some() {
            return Err(FmiError::NotSupported {
                instance: self.name().to_string(),
                function: "fmi2SerializeFMUstate",
                reason: "the state of a Model Exchange instance driven by cosim holds its solver's, which is not serialized".into(),
            });
        }
        dispatch!(self, i => i.serialize_fmu_state(state))
    }

    /// Recreates a saved FMU state from serialized bytes.
    pub fn deserialize_state(&mut self, bytes: &[u8]) -> Result<StateHandle> {
        if self.me.is_some() {
            return Err(FmiError::NotSupported {
                instance: self.name().to_string(),
                function: "fmi2DeSerializeFMUstate",
                reason: "the state of a Model Exchange instance driven by cosim holds its solver's, which is not serialized".into(),
            });
        }
        dispatch!(self, i => i.deserialize_fmu_state(bytes))
    }

    /// Sets the `order`-th time derivative (1..) of float inputs at the
    /// current communication point: FMI 2 `fmi2SetRealInputDerivatives`;
    /// FMI 3 (no input derivatives in co-simulation) the polynomial handed
    /// over in intermediate update, for the inputs registered with
    /// [`Instance::use_intermediate_inputs`].
    #[inline]
    pub fn set_input_derivatives(&mut self, vrs: &[u32], order: i32, values: &[f64]) -> Result<()> {
        if let Some(me) = &mut self.me {
            // Model Exchange has no input derivatives: the driver sets the
            // polynomial's values at each evaluation.
            me.input_derivatives_set(vrs, order, values);
            return Ok(());
        }
        match &mut self.inner {
            Inner::V2(i) => i.set_real_input_derivatives(vrs, order, values),
            Inner::V3(i) => i.set_input_derivatives(vrs, order, values),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// FMI 3: gives the float inputs `vrs` to the FMU inside each
    /// `fmi3DoStep` through intermediate update, as the polynomial of their
    /// value and input derivatives ([`Instance::set_input_derivatives`]).
    /// The FMU must provide intermediate update and declare each input
    /// `intermediateUpdate="true"`. FMI 2 refuses (it has input
    /// derivatives).
    pub fn use_intermediate_inputs(&mut self, vrs: &[u32]) -> Result<()> {
        match &mut self.inner {
            Inner::V2(i) => Err(FmiError::NotSupported {
                instance: i.name().to_string(),
                function: "fmi3IntermediateUpdateCallback",
                reason: "FMI 2.0 has no intermediate update (it takes input derivatives)".into(),
            }),
            Inner::V3(i) => i.use_intermediate_inputs(vrs),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// FMI 3: intermediate updates in which inputs were set so far (0 for
    /// FMI 2).
    pub fn intermediate_updates(&self) -> u64 {
        match &self.inner {
            Inner::V2(_) => 0,
            Inner::V3(i) => i.intermediate_updates(),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// Reads the `order`-th time derivative (1..) of float outputs.
    pub fn get_output_derivatives(
        &mut self,
        vrs: &[u32],
        order: i32,
        values: &mut [f64],
    ) -> Result<()> {
        if let Some(me) = &mut self.me {
            return lent!(me, self, me.output_derivatives(vrs, order, values));
        }
        dispatch!(self, i => i.get_output_derivatives(vrs, order, values))
    }

    /// `sensitivity = d(unknowns)/d(knowns) * seed`.
    pub fn get_directional_derivative(
        &mut self,
        unknowns: &[u32],
        knowns: &[u32],
        seed: &[f64],
        sensitivity: &mut [f64],
    ) -> Result<()> {
        dispatch!(self, i => i.get_directional_derivative(unknowns, knowns, seed, sensitivity))
    }

    /// The number of continuous states: FMI 2 the model description's
    /// `<Derivatives>`; FMI 3, for Model Exchange, what
    /// `fmi3GetNumberOfContinuousStates` said (at instantiation, and after
    /// Configuration Mode), else the model description's
    /// `<ContinuousStateDerivative>` elements.
    pub fn number_of_continuous_states(&self) -> usize {
        dispatch!(&self, i => i.number_of_continuous_states())
    }

    /// The number of event indicators: FMI 2 `numberOfEventIndicators`;
    /// FMI 3, for Model Exchange, what `fmi3GetNumberOfEventIndicators`
    /// said, else the model description's `<EventIndicator>` elements.
    pub fn number_of_event_indicators(&self) -> usize {
        dispatch!(&self, i => i.number_of_event_indicators())
    }

    /// Model Exchange: `fmi*SetTime` (Event Mode or Continuous-Time
    /// Mode).
    #[inline]
    pub fn set_time(&mut self, t: f64) -> Result<()> {
        dispatch!(self, i => i.set_time(t))
    }

    /// Model Exchange: `fmi*SetContinuousStates` (Continuous-Time Mode),
    /// one value per continuous state.
    #[inline]
    pub fn set_continuous_states(&mut self, x: &[f64]) -> Result<()> {
        dispatch!(self, i => i.set_continuous_states(x))
    }

    /// Model Exchange: `fmi*GetContinuousStates`, one value per continuous
    /// state.
    #[inline]
    pub fn get_continuous_states(&mut self, x: &mut [f64]) -> Result<()> {
        dispatch!(self, i => i.get_continuous_states(x))
    }

    /// Model Exchange: the derivatives of the continuous states (FMI 2
    /// `fmi2GetDerivatives`, FMI 3 `fmi3GetContinuousStateDerivatives`).
    #[inline]
    pub fn get_derivatives(&mut self, dx: &mut [f64]) -> Result<()> {
        dispatch!(self, i => i.get_derivatives(dx))
    }

    /// Model Exchange: `fmi*GetEventIndicators`, one value per event
    /// indicator.
    #[inline]
    pub fn get_event_indicators(&mut self, z: &mut [f64]) -> Result<()> {
        dispatch!(self, i => i.get_event_indicators(z))
    }

    /// Model Exchange: `fmi*GetNominalsOfContinuousStates`.
    pub fn get_nominals_of_continuous_states(&mut self, nominals: &mut [f64]) -> Result<()> {
        dispatch!(self, i => i.get_nominals_of_continuous_states(nominals))
    }

    /// `fmi*EnterEventMode`: Model Exchange (from Continuous-Time Mode),
    /// FMI 3 Co-Simulation with `eventModeUsed` (from Step Mode).
    pub fn enter_event_mode(&mut self) -> Result<()> {
        dispatch!(self, i => i.enter_event_mode())
    }

    /// One step of the event iteration in Event Mode: Model Exchange
    /// (`fmi2NewDiscreteStates`, `fmi3UpdateDiscreteStates`), FMI 3
    /// Co-Simulation with `eventModeUsed`.
    pub fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate> {
        dispatch!(self, i => i.update_discrete_states())
    }

    /// The event iteration at the instance's time, in Event Mode (FMI 3
    /// Co-Simulation with `eventModeUsed`; Model Exchange's driver makes
    /// its own with the same [`crate::events::iterate`]): the last
    /// update's answer.
    pub fn event_iteration(&mut self) -> Result<DiscreteStatesUpdate> {
        let (name, t) = match &self.inner {
            Inner::V2(i) => (i.name().to_string(), i.time),
            Inner::V3(i) => (i.name().to_string(), i.time),
            Inner::Lent => return WhenLent::when_lent(),
        };
        Ok(crate::events::iterate(&name, t, || self.update_discrete_states())?.last)
    }

    /// FMI 3 Co-Simulation with `eventModeUsed`: `fmi3EnterStepMode`
    /// (from Event Mode; FMI 2 has no event mode in Co-Simulation).
    pub fn enter_step_mode(&mut self) -> Result<()> {
        match &mut self.inner {
            Inner::V3(i) => i.enter_step_mode(),
            Inner::V2(i) => Err(FmiError::NotSupported {
                instance: i.name().to_string(),
                function: "fmi3EnterStepMode",
                reason: "FMI 2.0 Co-Simulation has no event mode".into(),
            }),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// The FMI 3 instance, for a function FMI 2 does not have
    /// (`function`, named in the error).
    fn as_fmi3(&mut self, function: &'static str) -> Result<&mut crate::ffi::fmi3::Fmi3Instance> {
        match &mut self.inner {
            Inner::V3(i) => Ok(i),
            Inner::V2(i) => Err(FmiError::NotSupported {
                instance: i.name().to_string(),
                function,
                reason: "FMI 2.0 has no clocks".into(),
            }),
            Inner::Lent => WhenLent::when_lent(),
        }
    }

    /// The instance's time: where its last step ended (or started, before
    /// the first), s (NaN while its binding is lent).
    pub fn time(&self) -> f64 {
        match &self.inner {
            Inner::V2(i) => i.time,
            Inner::V3(i) => i.time,
            Inner::Lent => f64::NAN,
        }
    }

    /// FMI 3 Scheduled Execution: `fmi3ActivateModelPartition` of input
    /// Clock `clock` at `t` (Clock Activation Mode).
    pub fn activate_model_partition(&mut self, clock: u32, t: f64) -> Result<()> {
        self.as_fmi3("fmi3ActivateModelPartition")?
            .activate_model_partition(clock, t)
    }

    /// FMI 3 Scheduled Execution: the output and countdown Clocks that
    /// `fmi3ClockUpdateCallback` asks about, in Clock Update Mode.
    pub fn watch_clock_updates(&mut self, outputs: &[u32], countdowns: &[u32]) -> Result<()> {
        self.as_fmi3("fmi3ClockUpdateCallback")?
            .watch_clock_updates(outputs, countdowns);
        Ok(())
    }

    /// FMI 3 Scheduled Execution, after `fmi3ActivateModelPartition`:
    /// what its Clock Update Mode callbacks found.
    pub fn take_clock_updates(&mut self, into: &mut crate::ClockUpdates) -> Result<()> {
        self.as_fmi3("fmi3ClockUpdateCallback")?
            .take_clock_updates(into)
    }

    /// FMI 3 `fmi3SetClock` (Event Mode): activates (or deactivates) input
    /// Clocks.
    pub fn set_clock(&mut self, vrs: &[u32], active: &[bool]) -> Result<()> {
        self.as_fmi3("fmi3SetClock")?.set_clock(vrs, active)
    }

    /// FMI 3 `fmi3GetClock` (Event Mode): which Clocks are active.
    pub fn get_clock(&mut self, vrs: &[u32], active: &mut [bool]) -> Result<()> {
        self.as_fmi3("fmi3GetClock")?.get_clock(vrs, active)
    }

    /// FMI 3 `fmi3GetIntervalDecimal`: time-based Clocks' intervals.
    pub fn get_interval_decimal(
        &mut self,
        vrs: &[u32],
    ) -> Result<Vec<(f64, crate::IntervalQualifier)>> {
        self.as_fmi3("fmi3GetIntervalDecimal")?
            .get_interval_decimal(vrs)
    }

    /// FMI 3 `fmi3GetShiftDecimal`: time-based Clocks' first activations.
    pub fn get_shift_decimal(&mut self, vrs: &[u32]) -> Result<Vec<f64>> {
        self.as_fmi3("fmi3GetShiftDecimal")?.get_shift_decimal(vrs)
    }

    /// FMI 3 `fmi3SetIntervalDecimal`: the intervals of `fixed` or
    /// `tunable` Clocks.
    pub fn set_interval_decimal(&mut self, vrs: &[u32], intervals: &[f64]) -> Result<()> {
        self.as_fmi3("fmi3SetIntervalDecimal")?
            .set_interval_decimal(vrs, intervals)
    }

    /// FMI 3 Co-Simulation: `eventModeUsed` and `earlyReturnAllowed` as
    /// instantiated (off for FMI 2, Model Exchange, and an FMU without
    /// `hasEventMode`).
    pub fn event_handling(&self) -> crate::EventHandling {
        match &self.inner {
            Inner::V3(i) => i.events,
            _ => crate::EventHandling::default(),
        }
    }

    /// Model Exchange: `fmi*EnterContinuousTimeMode` (from Event Mode).
    pub fn enter_continuous_time_mode(&mut self) -> Result<()> {
        dispatch!(self, i => i.enter_continuous_time_mode())
    }

    /// Model Exchange: `fmi*CompletedIntegratorStep` after an accepted
    /// integrator step (Continuous-Time Mode); `no_set_prior` is
    /// `noSetFMUStatePriorToCurrentPoint`.
    #[inline]
    pub fn completed_integrator_step(&mut self, no_set_prior: bool) -> Result<CompletedStep> {
        dispatch!(self, i => i.completed_integrator_step(no_set_prior))
    }
}
