//! Scenario parse and resolve time against the number of connections (a
//! chain of N+1 gains): both must grow linearly.
//!
//!     cargo run --release -p cosim-scenario --example import_scaling
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;
use std::time::Instant;
fn main() {
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="Gain" guid="{00000000-0000-0000-0000-000000000000}">
  <CoSimulation modelIdentifier="Gain"/>
  <ModelVariables>
    <ScalarVariable name="u" valueReference="1" causality="input"><Real start="0"/></ScalarVariable>
    <ScalarVariable name="y" valueReference="2" causality="output"><Real/></ScalarVariable>
  </ModelVariables>
  <ModelStructure><Outputs><Unknown index="2" dependencies="1"/></Outputs></ModelStructure>
</fmiModelDescription>"#;
    let md =
        cosim_fmi::model_description::parse_model_description(xml, Path::new("md.xml")).unwrap();
    for n in [1000usize, 2000, 4000, 8000] {
        let mut s = String::from("[simulation]\nstop = 1.0\n[master]\nstep = 1e-3\n");
        for i in 0..=n {
            s += &format!("[[subsystems]]\nname = \"g{i}\"\nfmu = \"Gain.fmu\"\n");
        }
        for i in 0..n {
            s += &format!(
                "[[connections]]\nfrom = \"g{i}.y\"\nto = \"g{}.u\"\n",
                i + 1
            );
        }
        let t = Instant::now();
        let sc = cosim_scenario::Scenario::from_str(&s, "x.toml").unwrap();
        let t1 = t.elapsed();
        let names: Vec<String> = (0..=n).map(|i| format!("g{i}")).collect();
        let models: Vec<(&str, &cosim_fmi::ModelDescription)> =
            names.iter().map(|x| (x.as_str(), &md)).collect();
        let t = Instant::now();
        let r = sc.resolve(&models).unwrap();
        let t2 = t.elapsed();
        println!(
            "{n}: parse {t1:?} resolve {t2:?} ({} conns)",
            r.connections.len()
        );
    }
}
