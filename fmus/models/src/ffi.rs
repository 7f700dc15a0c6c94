//! The FMI 2.0 / 3.0 C exports of this library, for every model in the registry.
#![allow(unsafe_code)]

fmu_kit::export_fmi!(crate::registry());
