// CVODE from Debian's libsundials-dev (6.4): the libraries the FFI in
// src/cvode.rs names.
fn main() {
    for lib in [
        "sundials_cvode",
        "sundials_nvecserial",
        "sundials_sunmatrixdense",
        "sundials_sunlinsoldense",
    ] {
        println!("cargo:rustc-link-lib={lib}");
    }
}
