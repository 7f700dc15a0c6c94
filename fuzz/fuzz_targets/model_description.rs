//! The modelDescription.xml parser (FMI 2 and 3) on arbitrary text: it must
//! return a model description or a located error, never panic, hang or
//! allocate without bound. What `cosim inspect` and assembly derive from a
//! parsed description is exercised too.
#![no_main]

use std::path::Path;

use cosim_fmi::model_description::Causality;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(xml) = std::str::from_utf8(data) else {
        return;
    };
    let file = Path::new("fuzz/modelDescription.xml");
    if let Ok(md) = cosim_fmi::model_description::parse_model_description(xml, file) {
        for (i, v) in md.variables.iter().enumerate() {
            if v.causality == Causality::Output {
                let _ = md.output_input_dependencies(i);
            }
        }
        let _ = cosim_fmi::bonds::find_bond_candidates(&md);
        let _ = cosim_fmi::inspect::InspectReport::new(file, &md, None).render_text();
    }
});
