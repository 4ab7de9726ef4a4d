//! A session's timeline as SVG: one row per run, a bar from its creation to its completion
//! (or to the session's last known instant while it is open), coloured by outcome; tool calls
//! marked on their turn's last run's row, errors in red. Plain SVG with <title> tooltips, no script.

use super::gather::SessionRead;
use super::html::esc;
use crate::time::{duration, iso8601};
use makalog::model::StoredMessage;
use std::collections::HashMap;
use std::fmt::Write;

const WIDTH: f64 = 960.0;
const LEFT: f64 = 210.0;
const ROW: f64 = 24.0;

/// The fill of a run's bar by its status.
pub fn colour(status: &str) -> &'static str {
    match status {
        "completed" => "#2e7d32",
        "failed" => "#c62828",
        "cancelled" => "#757575",
        "waiting_for_user" => "#ef6c00",
        _ => "#1565c0",
    }
}

fn num(v: &serde_json::Value, key: &str) -> Option<f64> {
    v.get(key).and_then(serde_json::Value::as_f64)
}

/// The SVG, or `None` when the session has no run to draw.
pub fn timeline(s: &SessionRead) -> Option<String> {
    if s.runs.is_empty() {
        return None;
    }
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    let mut see = |t: Option<f64>| {
        if let Some(t) = t.filter(|t| t.is_finite()) {
            lo = lo.min(t);
            hi = hi.max(t);
        }
    };
    for r in &s.runs {
        see(num(r.header.value(), "createdAt"));
        see(num(r.header.value(), "completedAt"));
        see(num(r.header.value(), "updatedAt"));
    }
    for m in &s.messages {
        see(num(m.value(), "ts"));
    }
    if !lo.is_finite() {
        return None;
    }
    let span = (hi - lo).max(1.0);
    let x = |t: f64| LEFT + (t - lo) / span * (WIDTH - LEFT - 20.0);
    let height = 40.0 + ROW * s.runs.len() as f64;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" role="img"><title>{} runs from {} over {}</title>"#,
        s.runs.len(),
        iso8601(lo),
        duration(hi - lo)
    );
    let _ = write!(
        out,
        r##"<line x1="{LEFT}" y1="{y}" x2="{}" y2="{y}" stroke="#999"/><text x="{LEFT}" y="{ty}" class="axis">{}</text><text x="{}" y="{ty}" class="axis" text-anchor="end">+{}</text>"##,
        WIDTH - 20.0,
        iso8601(lo),
        WIDTH - 20.0,
        duration(hi - lo),
        y = height - 24.0,
        ty = height - 8.0
    );
    // A turn's messages are grouped once and marked once, on the row of the turn's last run:
    // marked on each run of a turn, a session of many runs of one turn drew runs × messages
    // marks (a crafted one of 20,000 of each ran the page out of memory).
    let mut by_turn: HashMap<&str, Vec<&StoredMessage>> = HashMap::new();
    for m in &s.messages {
        if let Some(turn) = m.turn_id() {
            by_turn.entry(turn).or_default().push(m);
        }
    }
    let last_run_of_turn: HashMap<&str, usize> = s
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| (turn_of(r), i))
        .collect();
    for (i, r) in s.runs.iter().enumerate() {
        let v = r.header.value();
        let y = 10.0 + ROW * i as f64;
        let start = num(v, "createdAt").unwrap_or(lo);
        let end = num(v, "completedAt").unwrap_or(hi).max(start);
        let (x0, x1) = (x(start), x(end));
        let status = r.header.status();
        let failure = v.get("failureClass").and_then(|f| f.as_str()).unwrap_or("");
        let _ = write!(
            out,
            r#"<text x="4" y="{}" class="run">{}</text><rect class="run-bar" data-status="{}" x="{x0:.1}" y="{y}" width="{:.1}" height="16" rx="3" fill="{}"><title>run {} {}{} — {} for {}; events: {}</title></rect>"#,
            y + 12.0,
            esc(&short(r.header.run_id())),
            esc(status),
            (x1 - x0).max(3.0),
            colour(status),
            esc(r.header.run_id()),
            esc(status),
            if failure.is_empty() {
                String::new()
            } else {
                format!(" ({})", esc(failure))
            },
            iso8601(start),
            duration(end - start),
            esc(&r.events.join(", "))
        );
        if status == "failed" {
            let _ = write!(
                out,
                r##"<circle class="error" cx="{x1:.1}" cy="{}" r="5" fill="#c62828" stroke="#fff"><title>failed: {}</title></circle>"##,
                y + 8.0,
                esc(failure)
            );
        }
        let turn = turn_of(r);
        let marked = (last_run_of_turn.get(turn) == Some(&i))
            .then(|| by_turn.get(turn))
            .flatten();
        for m in marked.into_iter().flatten() {
            let Some(t) = num(m.value(), "ts") else {
                continue;
            };
            let mv = m.value();
            let is_error = mv.get("isError").and_then(|e| e.as_bool()) == Some(true);
            match m.message_type() {
                "tool_call" => {
                    let _ = write!(
                        out,
                        r##"<path class="tool-call" d="M{:.1} {} l4 7 h-8 z" fill="#fbc02d" stroke="#333" stroke-width="0.5"><title>tool call {} at {}</title></path>"##,
                        x(t),
                        y + 1.0,
                        esc(mv.get("toolName").and_then(|n| n.as_str()).unwrap_or("")),
                        iso8601(t)
                    );
                }
                "tool_result" if is_error => {
                    let _ = write!(
                        out,
                        r##"<circle class="error" cx="{:.1}" cy="{}" r="4" fill="#c62828"><title>tool error at {}</title></circle>"##,
                        x(t),
                        y + 8.0,
                        iso8601(t)
                    );
                }
                _ => {}
            }
        }
    }
    out.push_str("</svg>");
    Some(out)
}

fn short(id: &str) -> String {
    match id.char_indices().nth(26) {
        Some((cut, _)) => format!("{}…", &id[..cut]),
        None => id.to_owned(),
    }
}

/// The turn a run belongs to.
fn turn_of(r: &super::gather::Run) -> &str {
    let v = r.header.value();
    v.get("turnId").and_then(|t| t.as_str()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::gather::{Run, Session, SessionRead};
    use makalog::model::{RunHeader, StoredMessage};
    use serde_json::json;

    fn run(i: usize) -> Run {
        let header = RunHeader::from_value(json!({
            "runId": format!("run-{i}"), "sessionId": "s", "turnId": "turn-1",
            "llmConnectionSlug": "fake", "modelId": "m", "cwd": "/w", "status": "completed",
            "backendKind": "fake", "permissionMode": "ask", "createdAt": i, "updatedAt": i,
            "completedAt": i + 1
        }))
        .expect("run");
        Run {
            header,
            events: Vec::new(),
        }
    }

    fn tool_call(i: usize) -> StoredMessage {
        StoredMessage::from_value(json!({
            "type": "tool_call", "id": format!("call-{i}"), "turnId": "turn-1", "ts": i,
            "toolName": "grep", "args": {}
        }))
        .expect("tool call")
    }

    /// Many runs of one turn (a retried turn, or a crafted session) mark the turn's messages
    /// once, on its last run's row: the page grows with the runs plus the messages.
    #[test]
    fn a_turns_messages_are_marked_once_however_many_runs_it_has() {
        let read = SessionRead {
            session: Session {
                id: "s".into(),
                header: None,
                section: String::new(),
            },
            runs: (0..200).map(run).collect(),
            messages: (0..300).map(tool_call).collect(),
            invocations: Vec::new(),
            claims: Vec::new(),
            unreadable: None,
        };
        let svg = super::timeline(&read).expect("runs to draw");
        assert_eq!(svg.matches("class=\"tool-call\"").count(), 300);
        assert_eq!(svg.matches("class=\"run-bar\"").count(), 200);
    }
}
