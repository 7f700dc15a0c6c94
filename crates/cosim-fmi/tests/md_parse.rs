//! Parsing of hand-written FMI 2.0 and FMI 3.0 model descriptions, checked
//! field by field.

// Test helpers outside #[test] functions may panic and use expect().
#![allow(clippy::panic, clippy::expect_used)]

use std::path::{Path, PathBuf};

use cosim_fmi::model_description::{
    BaseUnit, Causality, Dependencies, Dependency, DependencyKind, Dimension, FmiVersion, Initial,
    ModelDescription, StartValue, Unknown, Variability, VariableType, parse_model_description,
    parse_model_description_file,
};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn load(name: &str) -> ModelDescription {
    match parse_model_description_file(&data(name)) {
        Ok(md) => md,
        Err(e) => panic!("{name}: {e}"),
    }
}

fn var<'a>(
    md: &'a ModelDescription,
    name: &str,
) -> (usize, &'a cosim_fmi::model_description::Variable) {
    md.variable_by_name(name)
        .unwrap_or_else(|| panic!("no variable {name}"))
}

#[test]
fn fmi2_identity_and_capabilities() {
    let md = load("fmi2_chassis.xml");
    assert_eq!(md.fmi_version, FmiVersion::V2);
    assert_eq!(md.fmi_version_string, "2.0");
    assert_eq!(md.model_name, "QuarterCar.Chassis");
    assert_eq!(
        md.instantiation_token,
        "{8c4e810f-3df3-4a00-8276-176fa3c9f000}"
    );
    assert_eq!(
        md.description.as_deref(),
        Some("Chassis mass of a quarter car")
    );
    assert_eq!(md.author.as_deref(), Some("cosim tests"));
    assert_eq!(md.version.as_deref(), Some("1.2"));
    assert_eq!(md.generation_tool.as_deref(), Some("hand & keyboard"));
    assert_eq!(
        md.generation_date_and_time.as_deref(),
        Some("2024-05-01T12:00:00Z")
    );
    assert_eq!(md.variable_naming_convention.as_deref(), Some("structured"));
    assert!(md.model_exchange.is_none());

    let cs = md.co_simulation.as_ref().expect("CoSimulation");
    assert_eq!(cs.model_identifier, "chassis");
    assert!(!cs.needs_execution_tool);
    assert!(cs.can_handle_variable_communication_step_size);
    assert!(cs.can_interpolate_inputs);
    assert_eq!(cs.max_output_derivative_order, 1);
    assert!(!cs.can_run_asynchronuously);
    assert!(!cs.can_be_instantiated_only_once_per_process);
    assert!(cs.can_not_use_memory_management_functions);
    assert!(cs.can_get_and_set_fmu_state);
    assert!(!cs.can_serialize_fmu_state);
    assert!(!cs.provides_directional_derivatives);
    assert!(cs.has_source_files);
    // FMI 3 only flags stay at their defaults.
    assert!(!cs.has_event_mode);
    assert!(!cs.provides_intermediate_update);
    assert_eq!(cs.fixed_internal_step_size, None);
    assert_eq!(cs.recommended_intermediate_input_smoothness, None);

    let de = md.default_experiment.as_ref().expect("DefaultExperiment");
    assert_eq!(de.start_time, Some(0.0));
    assert_eq!(de.stop_time, Some(10.0));
    assert_eq!(de.tolerance, Some(1e-6));
    assert_eq!(de.step_size, Some(0.001));

    assert_eq!(md.log_categories.len(), 2);
    assert_eq!(md.log_categories[0].name, "logAll");
    assert_eq!(
        md.log_categories[0].description.as_deref(),
        Some("everything")
    );
    assert_eq!(md.log_categories[1].name, "logError");
    assert_eq!(md.log_categories[1].description, None);
}

#[test]
fn fmi2_units_and_types() {
    let md = load("fmi2_chassis.xml");
    let names: Vec<&str> = md.units.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["N", "m/s", "kg", "m"]);
    assert_eq!(
        md.units[0].base_unit,
        Some(BaseUnit {
            kg: 1,
            m: 1,
            s: -2,
            ..BaseUnit::default()
        })
    );
    assert_eq!(md.units[1].display_units, ["km/h"]);
    assert_eq!(md.units[3].base_unit, None);

    assert_eq!(md.type_definitions.len(), 3);
    let force = &md.type_definitions[0];
    assert_eq!(force.name, "Modelica.SIunits.Force");
    assert_eq!(force.base_type, VariableType::Float64);
    assert_eq!(force.quantity.as_deref(), Some("Force"));
    assert_eq!(force.unit.as_deref(), Some("N"));
    let vel = &md.type_definitions[1];
    assert_eq!(vel.display_unit.as_deref(), Some("km/h"));
    assert_eq!((vel.min, vel.max), (Some(-100.0), Some(100.0)));
    assert_eq!(md.type_definitions[2].base_type, VariableType::Enumeration);
}

#[test]
fn fmi2_variables() {
    let md = load("fmi2_chassis.xml");
    // The <ScalarVariable> inside <VendorAnnotations> and <UnknownElement/>
    // are skipped.
    assert_eq!(md.variables.len(), 11);

    let (i, f) = var(&md, "F");
    assert_eq!(i, 0);
    assert_eq!(f.value_reference, 0);
    assert_eq!(f.var_type, VariableType::Float64);
    assert_eq!(f.causality, Causality::Input);
    assert_eq!(f.variability, Variability::Continuous);
    assert_eq!(f.initial, None);
    assert_eq!(f.description.as_deref(), Some("force from the wheel"));
    assert_eq!(f.declared_type.as_deref(), Some("Modelica.SIunits.Force"));
    // unit and quantity come from the declared type.
    assert_eq!(f.unit.as_deref(), Some("N"));
    assert_eq!(f.quantity.as_deref(), Some("Force"));
    assert_eq!(f.start, Some(StartValue::Float(vec![0.0])));
    assert_eq!(f.line, 71);
    assert!(f.is_scalar());

    let (_, v) = var(&md, "v");
    assert_eq!(v.causality, Causality::Output);
    assert_eq!(v.initial, Some(Initial::Calculated));
    assert_eq!(v.unit.as_deref(), Some("m/s"));
    // The variable's own displayUnit wins over the declared type's.
    assert_eq!(v.display_unit.as_deref(), Some("m/s"));
    assert_eq!(v.quantity.as_deref(), Some("Velocity"));
    assert_eq!((v.min, v.max), (Some(-100.0), Some(100.0)));
    assert_eq!(v.start, None);
    assert_eq!(v.line, 75);

    let (_, m) = var(&md, "m");
    assert_eq!(m.causality, Causality::Parameter);
    assert_eq!(m.variability, Variability::Fixed);
    assert_eq!(m.effective_initial(), Some(Initial::Exact));
    assert_eq!(m.start_f64(), Some(400.0));
    assert_eq!(m.min, Some(0.0));
    assert_eq!(m.nominal, Some(400.0));

    let (_, der) = var(&md, "der(x)");
    assert_eq!(der.derivative_of, Some(2));
    assert_eq!(der.value_reference, 6);

    let (_, mode) = var(&md, "mode");
    assert_eq!(mode.var_type, VariableType::Enumeration);
    assert_eq!(mode.variability, Variability::Fixed);
    assert_eq!(mode.start, Some(StartValue::Int(vec![2])));

    let (_, label) = var(&md, "label");
    assert_eq!(label.var_type, VariableType::String);
    assert_eq!(
        label.start,
        Some(StartValue::String(vec!["front left".into()]))
    );

    let (_, enabled) = var(&md, "enabled");
    assert_eq!(enabled.var_type, VariableType::Boolean);
    assert_eq!(enabled.variability, Variability::Tunable);
    assert_eq!(enabled.start, Some(StartValue::Bool(vec![true])));

    let (_, counter) = var(&md, "counter");
    assert_eq!(counter.var_type, VariableType::Int32);
    assert_eq!(counter.variability, Variability::Discrete);
    assert_eq!(counter.start, Some(StartValue::Int(vec![-3])));

    let (_, time) = var(&md, "time");
    assert_eq!(time.causality, Causality::Independent);

    let (i, alias) = var(&md, "v_alias");
    assert_eq!(i, 10);
    assert_eq!(alias.value_reference, 1);
    assert_eq!(alias.causality, Causality::Local);
}

#[test]
fn fmi2_model_structure() {
    let md = load("fmi2_chassis.xml");
    let ms = &md.model_structure;
    assert_eq!(
        ms.outputs,
        vec![
            Unknown {
                variable: 1,
                dependencies: Dependencies::Listed(vec![Dependency {
                    variable: 0,
                    kind: Some(DependencyKind::Constant)
                }])
            },
            // No dependencies attribute: depends on everything.
            Unknown {
                variable: 2,
                dependencies: Dependencies::All
            },
            // dependencies="": depends on nothing.
            Unknown {
                variable: 8,
                dependencies: Dependencies::Listed(vec![])
            },
        ]
    );
    assert_eq!(
        ms.derivatives,
        vec![Unknown {
            variable: 4,
            dependencies: Dependencies::Listed(vec![
                Dependency {
                    variable: 0,
                    kind: Some(DependencyKind::Dependent)
                },
                Dependency {
                    variable: 1,
                    kind: Some(DependencyKind::Fixed)
                },
            ])
        }]
    );
    assert_eq!(
        ms.initial_unknowns,
        vec![Unknown {
            variable: 1,
            dependencies: Dependencies::Listed(vec![Dependency {
                variable: 3,
                kind: None
            }])
        }]
    );
    assert!(ms.clocked_states.is_empty());
    assert!(ms.event_indicators.is_empty());

    // Feed-through as seen by the master.
    assert_eq!(md.output_input_dependencies(1), vec![0]);
    assert_eq!(md.output_input_dependencies(2), vec![0]);
    assert!(md.output_input_dependencies(8).is_empty());
    assert!(md.has_direct_feedthrough(1));
    assert!(!md.has_direct_feedthrough(8));
}

#[test]
fn fmi3_identity_and_capabilities() {
    let md = load("fmi3_drive.xml");
    assert_eq!(md.fmi_version, FmiVersion::V3);
    assert_eq!(md.fmi_version_string, "3.0");
    assert_eq!(md.model_name, "Drive");
    assert_eq!(
        md.instantiation_token,
        "{a1b2c3d4-0000-4000-8000-000000000003}"
    );
    let me = md.model_exchange_info().expect("ModelExchange");
    assert_eq!(me.model_identifier, "drive");
    // Not declared: the FMI 3 defaults.
    assert!(!me.needs_completed_integrator_step);
    assert!(!me.can_get_and_set_fmu_state);
    // One <EventIndicator>, one <ContinuousStateDerivative> (der(phi) of
    // phi, vr 15).
    assert_eq!(me.number_of_event_indicators, 1);
    assert_eq!(md.number_of_event_indicators(), 1);
    assert_eq!(md.continuous_states(), vec![(15, 16)]);
    assert_eq!(md.number_of_continuous_states(), 1);
    assert_eq!(md.continuous_state_nominals(), vec![1.0]);
    assert_eq!(
        md.default_interface(),
        Some(cosim_fmi::Interface::CoSimulation)
    );
    let cs = md.co_simulation.as_ref().expect("CoSimulation");
    assert_eq!(cs.model_identifier, "drive");
    assert!(cs.needs_execution_tool);
    assert!(cs.can_be_instantiated_only_once_per_process);
    assert!(cs.can_get_and_set_fmu_state);
    assert!(cs.can_serialize_fmu_state);
    assert!(cs.provides_directional_derivatives);
    assert!(cs.provides_adjoint_derivatives);
    assert!(cs.can_handle_variable_communication_step_size);
    assert_eq!(cs.fixed_internal_step_size, Some(0.0005));
    assert_eq!(cs.max_output_derivative_order, 2);
    assert_eq!(cs.recommended_intermediate_input_smoothness, Some(1));
    assert!(cs.provides_intermediate_update);
    assert!(cs.might_return_early_from_do_step);
    assert!(!cs.can_return_early_after_intermediate_update);
    assert!(cs.has_event_mode);
    assert!(cs.provides_evaluate_discrete_states);
    assert!(!cs.can_interpolate_inputs);
    assert!(!cs.has_source_files);

    let de = md.default_experiment.as_ref().expect("DefaultExperiment");
    assert_eq!((de.start_time, de.stop_time), (Some(0.5), Some(2.0)));
    assert_eq!((de.tolerance, de.step_size), (None, None));

    assert_eq!(md.units.len(), 4);
    let rpm = md.unit("rpm").and_then(|u| u.base_unit).expect("rpm");
    assert_eq!((rpm.s, rpm.rad), (-1, 1));
    assert!((rpm.factor - 0.104_719_755_119_659_77).abs() < 1e-15);
    let degc = md.unit("degC").and_then(|u| u.base_unit).expect("degC");
    assert_eq!((degc.k, degc.offset), (1, 273.15));

    let types: Vec<(&str, VariableType)> = md
        .type_definitions
        .iter()
        .map(|t| (t.name.as_str(), t.base_type))
        .collect();
    assert_eq!(
        types,
        [
            ("Torque", VariableType::Float64),
            ("Temperature", VariableType::Float64),
            ("Gear", VariableType::Enumeration),
            ("Tick", VariableType::Clock),
        ]
    );
    assert_eq!(md.log_categories.len(), 1);
}

#[test]
fn fmi3_variables() {
    let md = load("fmi3_drive.xml");
    assert_eq!(md.variables.len(), 19);

    let (_, tau) = var(&md, "tau");
    assert_eq!(tau.causality, Causality::Input);
    assert_eq!(tau.unit.as_deref(), Some("N.m"), "unit from declaredType");
    assert_eq!(tau.quantity.as_deref(), Some("Torque"));
    assert_eq!(tau.nominal, Some(10.0));
    assert_eq!(tau.start, Some(StartValue::Float(vec![0.0])));
    assert!(tau.intermediate_update, "intermediateUpdate=\"true\"");

    let (_, omega) = var(&md, "omega");
    assert!(
        !omega.intermediate_update,
        "intermediateUpdate defaults to false"
    );
    assert_eq!(omega.unit.as_deref(), Some("rad/s"));
    assert_eq!(omega.display_unit.as_deref(), Some("rpm"));
    assert_eq!(omega.quantity.as_deref(), Some("AngularVelocity"));
    assert_eq!(omega.variability, Variability::Continuous);

    let (_, n) = var(&md, "n");
    assert_eq!(n.causality, Causality::StructuralParameter);
    assert_eq!(n.var_type, VariableType::Int32);
    assert_eq!(n.start, Some(StartValue::Int(vec![2])));
    assert_eq!((n.min, n.max), (Some(0.0), Some(10.0)));

    let (_, positions) = var(&md, "positions");
    assert_eq!(positions.unit.as_deref(), Some("m"));
    assert_eq!(positions.dimensions, vec![Dimension::Fixed(3)]);
    assert!(!positions.is_scalar());
    assert_eq!(positions.start, None);

    let (_, gains) = var(&md, "gains");
    assert_eq!(
        gains.dimensions,
        vec![Dimension::Fixed(2), Dimension::Variable(3)]
    );
    assert_eq!(
        gains.start,
        Some(StartValue::Float(vec![1.5, -2.0, 300.0, f64::INFINITY]))
    );
    assert_eq!(gains.variability, Variability::Tunable);

    let (_, temperature) = var(&md, "temperature");
    assert_eq!(temperature.unit.as_deref(), Some("degC"));
    assert_eq!(temperature.display_unit.as_deref(), Some("degC"));
    assert_eq!(
        temperature.quantity.as_deref(),
        Some("ThermodynamicTemperature")
    );
    assert_eq!(temperature.min, Some(-273.15));

    let (_, ratio) = var(&md, "ratio");
    assert_eq!(ratio.var_type, VariableType::Float32);
    assert_eq!(ratio.start, Some(StartValue::Float(vec![0.25])));

    let (_, offset8) = var(&md, "offset8");
    assert_eq!(offset8.var_type, VariableType::Int8);
    assert_eq!(offset8.start, Some(StartValue::Int(vec![-128])));

    let (_, big) = var(&md, "big");
    assert_eq!(big.var_type, VariableType::UInt64);
    // UInt64 values above i64::MAX keep their bit pattern.
    assert_eq!(big.start, Some(StartValue::Int(vec![u64::MAX.into()])));

    let (_, flags) = var(&md, "flags");
    assert_eq!(flags.start, Some(StartValue::Bool(vec![true, false, true])));
    assert_eq!(flags.variability, Variability::Fixed);

    let (_, label) = var(&md, "label");
    assert_eq!(
        label.start,
        Some(StartValue::String(vec!["left <wheel>".into()]))
    );

    let (_, blob) = var(&md, "blob");
    assert_eq!(
        blob.start,
        Some(StartValue::Binary(vec![vec![0x0a, 0xff, 0x10]]))
    );

    let (_, gear) = var(&md, "gear");
    assert_eq!(gear.var_type, VariableType::Enumeration);
    assert_eq!(gear.declared_type.as_deref(), Some("Gear"));
    assert_eq!(gear.start, Some(StartValue::Int(vec![1])));
    assert_eq!(gear.variability, Variability::Discrete);

    let (_, tick) = var(&md, "tick");
    assert_eq!(tick.var_type, VariableType::Clock);
    assert_eq!(tick.start, None);
    // The Clock's attributes from its declared <ClockType>; `count` is
    // clocked by it.
    let clock = tick.clock.expect("a Clock's attributes");
    assert_eq!(
        clock.interval_variability,
        cosim_fmi::model_description::IntervalVariability::Constant
    );
    assert_eq!(clock.interval_decimal, Some(0.01));
    assert_eq!(clock.shift_decimal, 0.0);
    assert!(!clock.can_be_deactivated && !clock.supports_fraction);
    let (_, count) = var(&md, "count");
    assert_eq!(count.clocks, vec![14]);
    assert_eq!(count.clock, None);

    let (phi, _) = var(&md, "phi");
    let (_, der) = var(&md, "der(phi)");
    assert_eq!(der.derivative_of, Some(phi));
}

#[test]
fn fmi3_model_structure() {
    let md = load("fmi3_drive.xml");
    let idx = |name: &str| var(&md, name).0;
    let ms = &md.model_structure;
    assert_eq!(
        ms.outputs,
        vec![
            Unknown {
                variable: idx("omega"),
                dependencies: Dependencies::Listed(vec![
                    Dependency {
                        variable: idx("tau"),
                        kind: Some(DependencyKind::Constant)
                    },
                    Dependency {
                        variable: idx("phi"),
                        kind: Some(DependencyKind::Dependent)
                    },
                ])
            },
            Unknown {
                variable: idx("positions"),
                dependencies: Dependencies::All
            },
            Unknown {
                variable: idx("temperature"),
                dependencies: Dependencies::Listed(vec![])
            },
        ]
    );
    assert_eq!(ms.derivatives.len(), 1);
    assert_eq!(ms.derivatives[0].variable, idx("der(phi)"));
    assert_eq!(
        ms.derivatives[0].dependencies,
        Dependencies::Listed(vec![Dependency {
            variable: idx("omega"),
            kind: None
        }])
    );
    assert_eq!(
        ms.clocked_states,
        vec![Unknown {
            variable: idx("count"),
            dependencies: Dependencies::All
        }]
    );
    assert_eq!(ms.initial_unknowns.len(), 1);
    assert_eq!(
        ms.event_indicators,
        vec![Unknown {
            variable: idx("indicator"),
            dependencies: Dependencies::Listed(vec![])
        }]
    );

    // Feed-through: omega depends on tau (an input) and phi (a state).
    assert_eq!(md.output_input_dependencies(idx("omega")), vec![idx("tau")]);
    // positions has no dependencies attribute: all inputs (tau, gear, tick).
    assert_eq!(
        md.output_input_dependencies(idx("positions")),
        vec![idx("tau"), idx("gear"), idx("tick")]
    );
    assert!(md.output_input_dependencies(idx("temperature")).is_empty());
}

#[test]
fn fmi3_patch_version_and_minimal_file() {
    let xml = r#"<fmiModelDescription fmiVersion="3.0.1" modelName="M" instantiationToken="t">
  <ModelVariables/>
  <ModelStructure/>
</fmiModelDescription>"#;
    let md = parse_model_description(xml, Path::new("mini.xml")).expect("parse");
    assert_eq!(md.fmi_version, FmiVersion::V3);
    assert_eq!(md.fmi_version_string, "3.0.1");
    assert!(md.co_simulation.is_none());
    assert!(md.variables.is_empty());
}

#[test]
fn utf8_bom_is_accepted() {
    let xml = "\u{feff}<?xml version=\"1.0\"?><fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\"/>";
    let md = parse_model_description(xml, Path::new("bom.xml")).expect("parse");
    assert_eq!(md.model_name, "M");
}

/// ISO-8859-1 where the declaration says so (exporters in the wild write
/// it); undeclared bytes that are not UTF-8 stay an error, now saying what
/// the declaration claims.
#[test]
fn latin1_is_read_where_the_declaration_says_so() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let write = |name: &str, decl: &str| {
        let mut bytes = format!(
            "<?xml version=\"1.0\" encoding=\"{decl}\"?>\n<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\" description=\"Fl"
        )
        .into_bytes();
        bytes.push(0xfc); // 'ü' in Latin-1
        bytes.extend_from_slice(b"gel\"/>");
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        path
    };
    let md = parse_model_description_file(&write("latin1.xml", "ISO-8859-1")).expect("parse");
    assert_eq!(md.description.as_deref(), Some("Fl\u{fc}gel"));
    let err = parse_model_description_file(&write("utf8.xml", "UTF-8"))
        .expect_err("not UTF-8")
        .to_string();
    assert!(err.contains("utf8.xml:2:"), "{err}");
    assert!(
        err.contains("invalid UTF-8 at byte offset") && err.contains("encoding=\"UTF-8\""),
        "{err}"
    );
}

#[test]
fn model_description_serializes() {
    let md = load("fmi3_drive.xml");
    let json = serde_json::to_string(&md).expect("json");
    assert!(json.contains("\"model_name\":\"Drive\""));
}

/// FMI 2 `<ModelExchange>`: its identifier and flags (the standard's
/// defaults where absent), `numberOfEventIndicators` of the root, the
/// states from `<Derivatives>` and the `derivative` attributes, nominals.
#[test]
fn fmi2_model_exchange() {
    let xml = r#"<fmiModelDescription fmiVersion="2.0" modelName="M" guid="g" numberOfEventIndicators="3">
  <ModelExchange modelIdentifier=" m_me " completedIntegratorStepNotNeeded="true" canGetAndSetFMUstate="true" providesDirectionalDerivative="true" canNotUseMemoryManagementFunctions="true"/>
  <ModelVariables>
    <ScalarVariable name="x" valueReference="4"><Real start="1" nominal="0.01"/></ScalarVariable>
    <ScalarVariable name="der(x)" valueReference="5"><Real derivative="1"/></ScalarVariable>
    <ScalarVariable name="y" valueReference="6"><Real/></ScalarVariable>
    <ScalarVariable name="der(y)" valueReference="7"><Real derivative="3"/></ScalarVariable>
  </ModelVariables>
  <ModelStructure>
    <Derivatives><Unknown index="4"/><Unknown index="2"/></Derivatives>
  </ModelStructure>
</fmiModelDescription>"#;
    let md = parse_model_description(xml, Path::new("m.xml")).expect("parses");
    assert!(md.co_simulation.is_none());
    assert_eq!(
        md.default_interface(),
        Some(cosim_fmi::Interface::ModelExchange)
    );
    let me = md.model_exchange_info().expect("ModelExchange");
    assert_eq!(me.model_identifier, "m_me");
    assert!(!me.needs_completed_integrator_step);
    assert!(me.can_get_and_set_fmu_state && !me.can_serialize_fmu_state);
    assert!(me.provides_directional_derivatives);
    assert!(me.can_not_use_memory_management_functions);
    assert_eq!(me.number_of_event_indicators, 3);
    assert_eq!(md.number_of_event_indicators(), 3);
    assert_eq!(
        md.model_identifier(cosim_fmi::Interface::ModelExchange),
        Some("m_me")
    );
    assert_eq!(
        md.model_identifier(cosim_fmi::Interface::CoSimulation),
        None
    );
    // In the order of <Derivatives>: y first.
    assert_eq!(md.continuous_states(), vec![(6, 7), (4, 5)]);
    assert_eq!(md.number_of_continuous_states(), 2);
    assert_eq!(md.continuous_state_nominals(), vec![1.0, 0.01]);
    // A flag that is no Boolean is an error, as in <CoSimulation>.
    let bad = xml.replace(
        r#"completedIntegratorStepNotNeeded="true""#,
        r#"completedIntegratorStepNotNeeded="yes""#,
    );
    let err = parse_model_description(&bad, Path::new("m.xml"))
        .expect_err("refused")
        .to_string();
    assert!(err.contains("completedIntegratorStepNotNeeded"), "{err}");
}

#[test]
fn fmi3_clocks_their_attributes_and_clocked_variables() {
    let xml = r#"<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="t">
  <CoSimulation modelIdentifier="m" hasEventMode="true"/>
  <ModelVariables>
    <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
    <Clock name="tick" valueReference="1" causality="input" intervalVariability="tunable" intervalDecimal="0.1" shiftDecimal="0.05" canBeDeactivated="true" priority="2"/>
    <Clock name="crossed" valueReference="2" causality="output" intervalVariability="triggered"/>
    <Float64 name="x" valueReference="3" causality="input" variability="discrete" clocks="1" start="0"/>
    <Int32 name="n" valueReference="4" causality="output" variability="discrete" clocks="1 2"/>
  </ModelVariables>
  <ModelStructure>
    <Output valueReference="2"/>
    <Output valueReference="4"/>
  </ModelStructure>
</fmiModelDescription>"#;
    let md = parse_model_description(xml, Path::new("m.xml")).expect("parses");
    use cosim_fmi::model_description::IntervalVariability as IV;
    let tick = var(&md, "tick").1.clock.expect("attributes");
    assert_eq!(tick.interval_variability, IV::Tunable);
    assert_eq!(tick.interval_decimal, Some(0.1));
    assert_eq!(tick.shift_decimal, 0.05);
    assert!(tick.can_be_deactivated && !tick.supports_fraction);
    assert_eq!(tick.priority, Some(2));
    assert!(tick.interval_variability.is_time_based());
    let crossed = var(&md, "crossed").1.clock.expect("attributes");
    assert_eq!(crossed.interval_variability, IV::Triggered);
    assert!(!crossed.interval_variability.is_time_based());
    assert_eq!(var(&md, "x").1.clocks, vec![1]);
    assert_eq!(var(&md, "n").1.clocks, vec![1, 2]);
    // A Clock without intervalVariability, one with an unknown value, and
    // a `clocks` list that is no list of value references are errors
    // naming the attribute.
    for (from, to, key) in [
        (
            r#" intervalVariability="triggered""#,
            "",
            "intervalVariability",
        ),
        (
            r#"intervalVariability="triggered""#,
            r#"intervalVariability="sometimes""#,
            "intervalVariability",
        ),
        (r#"clocks="1 2""#, r#"clocks="1 two""#, "clocks"),
    ] {
        let bad = xml.replace(from, to);
        let err = parse_model_description(&bad, Path::new("m.xml"))
            .expect_err("refused")
            .to_string();
        assert!(err.contains(key) && err.contains("m.xml"), "{err}");
    }
}
