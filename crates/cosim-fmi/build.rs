//! Compiles the small C shim that formats FMI 2.0's variadic log messages.
fn main() {
    println!("cargo:rerun-if-changed=c/fmi2_logger.c");
    cc::Build::new()
        .file("c/fmi2_logger.c")
        .warnings(true)
        .extra_warnings(true)
        .compile("cosim_fmi2_logger");
}
