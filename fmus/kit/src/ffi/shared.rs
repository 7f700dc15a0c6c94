//! What the FMI 2.0 and FMI 3.0 C layers share: one implementation of each
//! function whose versions differ only in names, argument lists and state
//! masks (value access, FMU states, directional derivatives). `fmi2.rs` and
//! `fmi3.rs` pass their version's names ([`Api`]) and masks.

use std::ffi::{c_char, c_int, c_void};

use super::{guard, slice, slice_mut, with_instance, write_out};
use crate::instance::{Cap, Fail, Instance, R, Status};
use crate::model::{VarType, Vr};

pub(crate) const ERROR: c_int = Status::Error as c_int;

/// The words one FMI version uses for the arguments the kit names in its
/// messages.
#[derive(Debug)]
pub(crate) struct Api {
    /// The value reference array (`vr[]` / `valueReferences`).
    pub(crate) vrs: &'static str,
    /// The value array (`value[]` / `values`).
    pub(crate) values: &'static str,
    /// The FMU-state handle (`FMUstate` / `FMUState`).
    pub(crate) state: &'static str,
}

/// FMI 2.0's names.
pub(crate) const FMI2: Api = Api {
    vrs: "vr[]",
    values: "value[]",
    state: "FMUstate",
};

/// FMI 3.0's names.
pub(crate) const FMI3: Api = Api {
    vrs: "valueReferences",
    values: "values",
    state: "FMUState",
};

/// A call that returns `OK` when `f` succeeds (panics contained, failures
/// logged; see [`with_instance`]).
pub(crate) fn simple(
    c: *mut c_void,
    fname: &str,
    mask: u32,
    f: impl FnOnce(&mut Instance) -> R<()>,
) -> c_int {
    status_call(c, fname, mask, |inst| {
        f(inst)?;
        Ok(Status::Ok)
    })
}

/// A call that returns the status `f` gives (panics contained, failures
/// logged; see [`with_instance`]).
pub(crate) fn status_call(
    c: *mut c_void,
    fname: &str,
    mask: u32,
    f: impl FnOnce(&mut Instance) -> R<Status>,
) -> c_int {
    guard(ERROR, || with_instance(c, fname, mask, f) as c_int)
}

/// `fmi2SetDebugLogging` / `fmi3SetDebugLogging`.
///
/// # Safety
/// FMI calling convention: `cats` holds `n` NUL-terminated strings.
pub(crate) unsafe fn set_debug_logging(
    c: *mut c_void,
    fname: &str,
    mask: u32,
    on: bool,
    (cats, n): (*const *const c_char, usize),
) -> c_int {
    simple(c, fname, mask, |inst| {
        // SAFETY: FMI calling convention: `cats` holds `n` strings.
        let ptrs = unsafe { slice(cats, n, "categories")? };
        let mut names = Vec::with_capacity(n);
        for &p in ptrs {
            // SAFETY: each category is a NUL-terminated string.
            names.push(unsafe { super::cstr(p, "category")? });
        }
        inst.set_debug_logging(on, &names)
    })
}

/// FMI 3's `nValues` against FMI 2's implied one: `Some(n)` is checked
/// against the variables' current sizes ([`Instance::check_value_count`]),
/// `None` is one value per value reference.
fn value_count(inst: &Instance, vrs: &[Vr], n: Option<usize>) -> R<usize> {
    match n {
        Some(n) => {
            inst.check_value_count(vrs, n)?;
            Ok(n)
        }
        None => Ok(vrs.len()),
    }
}

/// `fmi2Get<Type>` / `fmi3Get<Type>` of a number type or Boolean: the
/// values of `ty` converted to the C type by `conv`.
///
/// # Safety
/// FMI calling convention: `vr` holds `nvr` value references, `v` room for
/// `n` values (`nvr` without `n`).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn get_numbers<T>(
    c: *mut c_void,
    api: &Api,
    fname: &str,
    mask: u32,
    (vr, nvr): (*const u32, usize),
    (v, n): (*mut T, Option<usize>),
    ty: VarType,
    conv: impl Fn(f64) -> T,
) -> c_int {
    simple(c, fname, mask, |inst| {
        // SAFETY: FMI calling convention: nvr value references.
        let vrs = unsafe { slice(vr, nvr, api.vrs)? };
        let n = value_count(inst, vrs, n)?;
        // SAFETY: FMI calling convention: n values.
        let out = unsafe { slice_mut(v, n, api.values)? };
        inst.get(vrs, ty, &mut |k, x| out[k] = conv(x))
    })
}

/// `fmi2Set<Type>` / `fmi3Set<Type>` of a number type or Boolean: `store`
/// writes the C values into the instance.
///
/// # Safety
/// FMI calling convention: `vr` holds `nvr` value references, `v` `n`
/// values (`nvr` without `n`).
pub(crate) unsafe fn set_numbers<T>(
    c: *mut c_void,
    api: &Api,
    fname: &str,
    mask: u32,
    (vr, nvr): (*const u32, usize),
    (v, n): (*const T, Option<usize>),
    store: impl FnOnce(&mut Instance, &[Vr], &[T]) -> R<()>,
) -> c_int {
    simple(c, fname, mask, |inst| {
        // SAFETY: the caller's contract, passed on.
        let (vrs, vals) = unsafe { numbers_in(inst, api, (vr, nvr), (v, n))? };
        store(inst, vrs, vals)
    })
}

/// The value references and values of a setter, checked (FMI 3: `nValues`
/// against the variables' current sizes).
///
/// # Safety
/// As [`set_numbers`].
pub(crate) unsafe fn numbers_in<'a, T>(
    inst: &Instance,
    api: &Api,
    (vr, nvr): (*const u32, usize),
    (v, n): (*const T, Option<usize>),
) -> R<(&'a [Vr], &'a [T])> {
    // SAFETY: FMI calling convention: nvr value references.
    let vrs = unsafe { slice(vr, nvr, api.vrs)? };
    let n = value_count(inst, vrs, n)?;
    // SAFETY: FMI calling convention: n values.
    let vals = unsafe { slice(v, n, api.values)? };
    Ok((vrs, vals))
}

/// FMI 3: a `nValues` that must equal `nValueReferences` (Strings, Binary,
/// output derivatives: no arrays of these).
pub(crate) fn check_n(nvr: usize, n: usize) -> R<()> {
    if nvr == n {
        Ok(())
    } else {
        Err(Fail::usage(format!(
            "nValues ({n}) differs from nValueReferences ({nvr}); all variables are scalars"
        )))
    }
}

/// `fmi2GetString` / `fmi3GetString`: the returned strings are owned by the
/// instance and valid until its next `GetString` (the standards promise
/// them until the next call of any function of the instance).
///
/// # Safety
/// FMI calling convention: `vr` holds `nvr` value references, `v` room for
/// as many pointers.
pub(crate) unsafe fn get_strings(
    c: *mut c_void,
    api: &Api,
    fname: &str,
    mask: u32,
    (vr, nvr): (*const u32, usize),
    (v, n): (*mut *const c_char, Option<usize>),
) -> c_int {
    simple(c, fname, mask, |inst| {
        if let Some(n) = n {
            check_n(nvr, n)?;
        }
        // SAFETY: FMI calling convention: arrays of length nvr.
        let (vrs, out) = unsafe { (slice(vr, nvr, api.vrs)?, slice_mut(v, nvr, api.values)?) };
        inst.get_c_strings(vrs, out)
    })
}

/// `fmi2SetString` / `fmi3SetString`: the strings are copied (NULL or
/// invalid UTF-8 is refused, changing nothing).
///
/// # Safety
/// FMI calling convention: `vr` holds `nvr` value references, `v` as many
/// NUL-terminated strings.
pub(crate) unsafe fn set_strings(
    c: *mut c_void,
    api: &Api,
    fname: &str,
    mask: u32,
    (vr, nvr): (*const u32, usize),
    (v, n): (*const *const c_char, Option<usize>),
) -> c_int {
    simple(c, fname, mask, |inst| {
        if let Some(n) = n {
            check_n(nvr, n)?;
        }
        // SAFETY: FMI calling convention: arrays of length nvr.
        let (vrs, ptrs) = unsafe { (slice(vr, nvr, api.vrs)?, slice(v, nvr, api.values)?) };
        let what = api.values.trim_end_matches("[]");
        // SAFETY: FMI calling convention: each value is a NUL-terminated
        // string valid for the call (NULL is refused by `cstr`).
        let vals = unsafe { super::cstrs(ptrs, what)? };
        inst.set_strings(vrs, &vals)
    })
}

/// `fmi2GetFMUstate` / `fmi3GetFMUState`: a new state, or `*s` overwritten.
///
/// # Safety
/// FMI calling convention: `s` points to one FMU-state handle.
pub(crate) unsafe fn get_fmu_state(
    c: *mut c_void,
    api: &Api,
    fname: &str,
    mask: u32,
    s: *mut *mut c_void,
) -> c_int {
    simple(c, fname, mask, |inst| {
        inst.require_cap(Cap::State)?;
        // SAFETY: FMI calling convention: s points to one handle.
        let slot = unsafe { slice_mut(s, 1, api.state)? };
        let existing = (!slot[0].is_null()).then_some(slot[0] as usize);
        let id = inst.get_state(existing)?;
        slot[0] = id as *mut c_void;
        Ok(())
    })
}

/// `fmi2SetFMUstate` / `fmi3SetFMUState`.
pub(crate) fn set_fmu_state(
    c: *mut c_void,
    api: &Api,
    fname: &str,
    mask: u32,
    s: *mut c_void,
) -> c_int {
    simple(c, fname, mask, |inst| {
        inst.require_cap(Cap::State)?;
        if s.is_null() {
            return Err(Fail::usage(format!("{} is NULL", api.state)));
        }
        inst.set_state(s as usize)
    })
}

/// `fmi2FreeFMUstate` / `fmi3FreeFMUState`: `*s` freed and set to NULL (a
/// NULL `*s` is no error).
///
/// # Safety
/// FMI calling convention: `s` points to one FMU-state handle.
pub(crate) unsafe fn free_fmu_state(
    c: *mut c_void,
    api: &Api,
    fname: &str,
    mask: u32,
    s: *mut *mut c_void,
) -> c_int {
    simple(c, fname, mask, |inst| {
        inst.require_cap(Cap::State)?;
        // SAFETY: FMI calling convention: s points to one handle.
        let slot = unsafe { slice_mut(s, 1, api.state)? };
        if slot[0].is_null() {
            return Ok(());
        }
        inst.free_state(slot[0] as usize)?;
        slot[0] = std::ptr::null_mut();
        Ok(())
    })
}

/// `fmi2SerializedFMUstateSize` / `fmi3SerializedFMUStateSize`.
///
/// # Safety
/// FMI calling convention: `size` points to one `size_t`.
pub(crate) unsafe fn serialized_fmu_state_size(
    c: *mut c_void,
    fname: &str,
    mask: u32,
    s: *mut c_void,
    size: *mut usize,
) -> c_int {
    simple(c, fname, mask, |inst| {
        let n = inst.serialized_size(s as usize)?;
        // SAFETY: FMI calling convention: size points to one size_t.
        unsafe { write_out(size, n, "size") }
    })
}

/// `fmi2SerializeFMUstate` / `fmi3SerializeFMUState`.
///
/// # Safety
/// FMI calling convention: `bytes` has `size` writable bytes.
pub(crate) unsafe fn serialize_fmu_state(
    c: *mut c_void,
    fname: &str,
    mask: u32,
    s: *mut c_void,
    (bytes, size): (*mut u8, usize),
) -> c_int {
    simple(c, fname, mask, |inst| {
        inst.require_cap(Cap::Serialize)?;
        // SAFETY: FMI calling convention: `bytes` has `size` writable bytes.
        let buf = unsafe { slice_mut(bytes, size, "serializedState")? };
        inst.serialize(s as usize, buf)
    })
}

/// `fmi2DeSerializeFMUstate` / `fmi3DeserializeFMUState`: a new state, or
/// `*s` overwritten.
///
/// # Safety
/// FMI calling convention: `bytes` has `size` bytes, `s` points to one
/// FMU-state handle.
pub(crate) unsafe fn deserialize_fmu_state(
    c: *mut c_void,
    api: &Api,
    fname: &str,
    mask: u32,
    (bytes, size): (*const u8, usize),
    s: *mut *mut c_void,
) -> c_int {
    simple(c, fname, mask, |inst| {
        inst.require_cap(Cap::Serialize)?;
        // SAFETY: FMI calling convention: `bytes` has `size` bytes, `s` one slot.
        let (data, slot) = unsafe {
            (
                slice(bytes, size, "serializedState")?,
                slice_mut(s, 1, api.state)?,
            )
        };
        let existing = (!slot[0].is_null()).then_some(slot[0] as usize);
        let id = inst.deserialize(data, existing)?;
        slot[0] = id as *mut c_void;
        Ok(())
    })
}

/// The arrays of a directional or adjoint derivative call.
pub(crate) struct Seeded {
    /// `unknowns` / `vUnknown_ref` and its name.
    pub(crate) unknowns: (*const u32, usize, &'static str),
    /// `knowns` / `vKnown_ref` and its name.
    pub(crate) knowns: (*const u32, usize, &'static str),
    /// The seed, its length and name.
    pub(crate) seed: (*const f64, usize, &'static str),
    /// The sensitivity (result), its length and name.
    pub(crate) sensitivity: (*mut f64, usize, &'static str),
    /// FMI 3: whether `nSeed` and `nSensitivity` fit the knowns and
    /// unknowns (checked after the capability, before the arrays).
    pub(crate) lengths: R<()>,
}

/// `fmi2GetDirectionalDerivative`, `fmi3GetDirectionalDerivative` and
/// (`adjoint`) `fmi3GetAdjointDerivative`.
///
/// # Safety
/// FMI calling convention: each array holds the given number of elements.
pub(crate) unsafe fn seeded_derivative(
    c: *mut c_void,
    fname: &str,
    mask: u32,
    a: Seeded,
    adjoint: bool,
) -> c_int {
    simple(c, fname, mask, |inst| {
        inst.require_cap(Cap::Directional)?;
        a.lengths?;
        // SAFETY: FMI calling convention: arrays of the given lengths.
        let (u, k, seed, out) = unsafe {
            (
                slice(a.unknowns.0, a.unknowns.1, a.unknowns.2)?,
                slice(a.knowns.0, a.knowns.1, a.knowns.2)?,
                slice(a.seed.0, a.seed.1, a.seed.2)?,
                slice_mut(a.sensitivity.0, a.sensitivity.1, a.sensitivity.2)?,
            )
        };
        if adjoint {
            inst.adjoint_derivative(u, k, seed, out)
        } else {
            inst.directional_derivative(u, k, seed, out)
        }
    })
}
