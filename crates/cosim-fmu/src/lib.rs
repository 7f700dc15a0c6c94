//! The shared library of every FMU `cosim export` makes (`docs/export.md`):
//! the FMI 2.0 and FMI 3.0 C functions of the kit, strict about the
//! standards' state machines, with the model found from the FMU's
//! resources by [`cosim_export::engine::resolve`]. `cosim export` copies
//! this library into the FMU under the model identifier's name.
// The C exports are the FFI layer: each generated block carries its
// SAFETY note in `fmu_kit::ffi`.
#![allow(unsafe_code)]

fmu_kit::export_fmi!(fmu_kit::Resolver(cosim_export::engine::resolve));
