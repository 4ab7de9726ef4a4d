//! Which recovered roots a runtime workload's model allows.

use super::{RuntimeModel, RuntimeView};
use makalog::claims::AdmissionStatus;

/// Every run ended by exactly one terminal run event and one terminal RuntimeEvent; every
/// acknowledged turn ended as acknowledged; every started run there; nothing that was not
/// asked for; a run not acknowledged as ended either completed, was cancelled, or failed with
/// `app_restarted`; one run per claimed turn, ended as acknowledged, its claim `executing`, or
/// `cancelled` once its run was answered cancelled; every run's turn in the state its run ended
/// in; and no session left running or waiting.
pub fn check(model: &RuntimeModel, got: &RuntimeView) -> Result<(), String> {
    if got.unfinished != 0 {
        return Err(format!(
            "{} runs left unfinished after recovery",
            got.unfinished
        ));
    }
    for (session, status) in &got.session_status {
        if status == "running" || status == "waiting_for_user" {
            return Err(format!("session {session} is left {status}"));
        }
    }
    for (key, run) in &got.runs {
        let turn = match run.status.as_str() {
            "cancelled" => "aborted",
            other => other,
        };
        if run.turn_state.as_deref() != Some(turn) {
            return Err(format!(
                "run {key:?} ended {}, its turn's last state is {:?}",
                run.status, run.turn_state
            ));
        }
        if !model.asked.contains(key) {
            return Err(format!("run {key:?} was never asked for"));
        }
        if (run.terminal_run_events, run.terminal_events) != (1, 1) {
            return Err(format!(
                "run {key:?}: {} terminal run events and {} terminal runtime events",
                run.terminal_run_events, run.terminal_events
            ));
        }
        match model.ended.get(key) {
            Some(status) if *status != run.status => {
                return Err(format!(
                    "run {key:?} ended {status}, recovered {}",
                    run.status
                ))
            }
            Some(_) => {}
            None => {
                let recovered =
                    run.status == "failed" && run.failure_class.as_deref() == Some("app_restarted");
                if !(recovered || run.status == "completed" || run.status == "cancelled") {
                    return Err(format!(
                        "run {key:?} is {} {:?}",
                        run.status, run.failure_class
                    ));
                }
            }
        }
    }
    for key in &model.started {
        if !got.runs.contains_key(key) {
            return Err(format!("started run {key:?} is missing"));
        }
    }
    for key in model.ended.keys() {
        if !got.runs.contains_key(key) {
            return Err(format!("ended run {key:?} is missing"));
        }
    }
    for (child, status) in &model.claims {
        let runs: Vec<_> = got.runs.iter().filter(|((s, _), _)| s == child).collect();
        if runs.len() != 1 {
            return Err(format!("claimed child {child} has {} runs", runs.len()));
        }
        if runs[0].1.status != *status {
            return Err(format!(
                "claimed run of {child} ended {status}, recovered {}",
                runs[0].1.status
            ));
        }
        let admission = match status.as_str() {
            "cancelled" => AdmissionStatus::Cancelled,
            _ => AdmissionStatus::Executing,
        };
        if got.claim_status.get(child) != Some(&admission) {
            return Err(format!(
                "the claim of {child}, answered {status}, is {:?}",
                got.claim_status.get(child)
            ));
        }
    }
    Ok(())
}
