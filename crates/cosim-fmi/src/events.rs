//! The event iteration in Event Mode, one implementation for Model
//! Exchange (the driver's events: `model_exchange`) and for FMI 3
//! Co-Simulation with event mode ([`crate::Instance::event_iteration`]):
//! `fmi2NewDiscreteStates` / `fmi3UpdateDiscreteStates` until the FMU no
//! longer asks for another update at the same time (FMI 2.0 sec. 3.2.2,
//! FMI 3.0 sec. 3.2.3 and 4.2).

use crate::{DiscreteStatesUpdate, FmiError, Result};

/// The most updates of one event iteration: an FMU still asking for
/// another after this many does not settle.
pub const MAX_UPDATES: usize = 1000;

/// How an event iteration ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EventIteration {
    /// The last update's answer: no further update needed, or the end of
    /// the simulation asked for (`terminate_simulation`).
    pub last: DiscreteStatesUpdate,
    /// The updates made.
    pub updates: usize,
}

/// The event iteration of `instance` at time `t`: `update` until it no
/// longer says `discreteStatesNeedUpdate`, or asks to end the simulation.
/// An FMU that does not settle within [`MAX_UPDATES`], and a
/// `nextEventTime` not after `t` (it would never be passed), are errors
/// naming the instance.
pub fn iterate(
    instance: &str,
    t: f64,
    mut update: impl FnMut() -> Result<DiscreteStatesUpdate>,
) -> Result<EventIteration> {
    let error = |function: &'static str, reason: String| FmiError::InvalidArgument {
        instance: instance.to_string(),
        function,
        reason,
    };
    for updates in 1..=MAX_UPDATES {
        let last = update()?;
        if last.terminate_simulation {
            return Ok(EventIteration { last, updates });
        }
        if last.discrete_states_need_update {
            continue;
        }
        if let Some(te) = last.next_event_time
            && te <= t
        {
            return Err(error(
                "nextEventTime",
                format!(
                    "the FMU announced its next time event at t = {te}, not after the event it just handled (t = {t})"
                ),
            ));
        }
        return Ok(EventIteration { last, updates });
    }
    Err(error(
        "discreteStatesNeedUpdate",
        format!(
            "the FMU still asked for another update of its discrete states after {MAX_UPDATES} at t = {t}: its event iteration does not settle"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(need: bool, next: Option<f64>) -> DiscreteStatesUpdate {
        DiscreteStatesUpdate {
            discrete_states_need_update: need,
            next_event_time: next,
            ..DiscreteStatesUpdate::default()
        }
    }

    #[test]
    fn updates_until_no_more_is_needed() {
        let mut left = 3;
        let it = iterate("m", 1.0, || {
            left -= 1;
            Ok(answer(left > 0, Some(2.0)))
        })
        .unwrap();
        assert_eq!(it.updates, 3);
        assert_eq!(it.last.next_event_time, Some(2.0));
    }

    #[test]
    fn a_next_event_time_not_after_the_event_is_an_error() {
        let e = iterate("m", 1.0, || Ok(answer(false, Some(1.0)))).unwrap_err();
        assert!(e.to_string().contains("not after the event"), "{e}");
        assert!(
            e.to_string().contains("'m'") || e.to_string().contains("m"),
            "{e}"
        );
    }

    #[test]
    fn an_iteration_that_does_not_settle_is_an_error() {
        let mut n = 0;
        let e = iterate("m", 0.5, || {
            n += 1;
            Ok(answer(true, None))
        })
        .unwrap_err();
        assert_eq!(n, MAX_UPDATES);
        assert!(e.to_string().contains("does not settle"), "{e}");
    }

    #[test]
    fn termination_ends_the_iteration_at_once() {
        let mut n = 0;
        let it = iterate("m", 0.5, || {
            n += 1;
            Ok(DiscreteStatesUpdate {
                discrete_states_need_update: true,
                terminate_simulation: true,
                ..DiscreteStatesUpdate::default()
            })
        })
        .unwrap();
        assert_eq!((n, it.updates), (1, 1));
        assert!(it.last.terminate_simulation);
    }
}
