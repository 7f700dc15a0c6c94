//! What the toy subsystems of these tests share.

/// The `Subsystem` methods a toy subsystem does nothing in: rollback,
/// leaving initialization, input derivatives, saved states, terminate,
/// the call counters.
macro_rules! no_op_subsystem_methods {
    () => {
        fn allow_rollback(
            &mut self,
            _to: cosim_core::subsystem::RollbackTo,
        ) -> cosim_core::Result<()> {
            Ok(())
        }
        fn exit_initialization(&mut self) -> cosim_core::Result<()> {
            Ok(())
        }
        fn set_input_derivatives(
            &mut self,
            _order: u32,
            _values: &[f64],
        ) -> cosim_core::Result<()> {
            Ok(())
        }
        fn save_state(
            &mut self,
            _reuse: Option<cosim_core::subsystem::StateId>,
        ) -> cosim_core::Result<cosim_core::subsystem::StateId> {
            Ok(cosim_core::subsystem::StateId(0))
        }
        fn restore_state(&mut self, _id: cosim_core::subsystem::StateId) -> cosim_core::Result<()> {
            Ok(())
        }
        fn free_state(&mut self, _id: cosim_core::subsystem::StateId) -> cosim_core::Result<()> {
            Ok(())
        }
        fn terminate(&mut self) -> cosim_core::Result<()> {
            Ok(())
        }
        fn counters(&self) -> cosim_core::subsystem::CallCounters {
            cosim_core::subsystem::CallCounters::default()
        }
    };
}
