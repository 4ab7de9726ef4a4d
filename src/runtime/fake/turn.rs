//! One turn of the fake backend: the script a prompt selects (§11), its events sent in order.

use super::{Shared, FAKE_ASK_USER_QUESTION_PROMPT, FAKE_ERROR_PROMPT_PREFIX};
use crate::runtime::backend::SendInput;
use crate::runtime::events::SessionEvent;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

const CHUNK_CHARS: usize = 9;
const CHUNK_DELAY: Duration = Duration::from_millis(45);
const QUESTION_DELAY: Duration = Duration::from_millis(100);
const ERROR_DELAY: Duration = Duration::from_millis(250);

/// One turn of the fake backend, sending its events.
pub(super) struct Turn {
    pub(super) shared: Arc<Shared>,
    pub(super) tx: mpsc::Sender<SessionEvent>,
    pub(super) turn_id: String,
    pub(super) delays: bool,
}

impl Turn {
    pub(super) async fn run(self, input: SendInput) {
        if input.text == FAKE_ASK_USER_QUESTION_PROMPT {
            self.ask().await;
        } else if let Some(reason) = input.text.strip_prefix(FAKE_ERROR_PROMPT_PREFIX) {
            self.fail(reason).await;
        } else {
            let mut text = format!("Fake backend received: {}", input.text);
            if !input.attachments.is_empty() {
                text.push_str(&format!(
                    "\nAttachments received: {}",
                    input
                        .attachments
                        .iter()
                        .map(|a| a.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            text.push_str(
                "\n\nThis proves the session stream, SQLite storage, and renderer loop are connected.",
            );
            self.echo(&text).await;
        }
    }

    fn stopped(&self) -> bool {
        self.shared.stopped.load(Ordering::SeqCst)
    }

    /// Waits `delay` (none without delays); false if the turn was stopped meanwhile.
    async fn pause(&self, delay: Duration) -> bool {
        if self.delays {
            let stopped = self.shared.stop.notified();
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = stopped => {}
            }
        }
        !self.stopped()
    }

    async fn emit(&self, event: SessionEvent) {
        // A consumer that went away ends nothing: the turn still finishes.
        let _ = self.tx.send(event).await;
    }

    fn ids(&self) -> (String, String, f64) {
        let s = &self.shared.sources;
        (s.new_id(), self.turn_id.clone(), s.now())
    }

    async fn echo(&self, text: &str) {
        let message_id = self.shared.sources.new_id();
        for piece in pieces(text, CHUNK_CHARS) {
            if !self.pause(CHUNK_DELAY).await {
                return self.stop_turn().await;
            }
            let (id, turn_id, ts) = self.ids();
            self.emit(SessionEvent::TextDelta {
                id,
                turn_id,
                ts,
                message_id: message_id.clone(),
                text: piece.to_owned(),
                start_offset: None,
            })
            .await;
        }
        self.finish(message_id, text.to_owned()).await;
    }

    async fn finish(&self, message_id: String, text: String) {
        let (id, turn_id, ts) = self.ids();
        self.emit(SessionEvent::TextComplete {
            id,
            turn_id,
            ts,
            message_id,
            text,
        })
        .await;
        self.complete("end_turn").await;
    }

    async fn complete(&self, stop_reason: &str) {
        let (id, turn_id, ts) = self.ids();
        let stop_reason = stop_reason.to_owned();
        self.emit(SessionEvent::Complete {
            id,
            turn_id,
            ts,
            stop_reason,
            context_budget_exhausted_detail: None,
        })
        .await;
    }

    async fn stop_turn(&self) {
        let (id, turn_id, ts) = self.ids();
        let reason = "user_stop".to_owned();
        self.emit(SessionEvent::Abort {
            id,
            turn_id,
            ts,
            reason,
        })
        .await;
        self.complete("user_stop").await;
    }

    async fn ask(&self) {
        if !self.pause(QUESTION_DELAY).await {
            return self.stop_turn().await;
        }
        let questions = questions();
        let tool_use_id = self.shared.sources.new_id();
        let (id, turn_id, ts) = self.ids();
        self.emit(SessionEvent::ToolStart {
            id,
            turn_id,
            ts,
            tool_use_id: tool_use_id.clone(),
            tool_name: "AskUserQuestion".into(),
            args: json!({"questions": questions}),
            details: Default::default(),
        })
        .await;
        let request_id = self.shared.sources.new_id();
        let (answer_tx, answer_rx) = oneshot::channel();
        if let Ok(mut pending) = self.shared.question.lock() {
            *pending = Some((request_id.clone(), answer_tx));
        }
        let (id, turn_id, ts) = self.ids();
        self.emit(SessionEvent::UserQuestionRequest {
            id,
            turn_id,
            ts,
            request_id: request_id.clone(),
            tool_use_id: tool_use_id.clone(),
            questions: questions.clone(),
        })
        .await;
        // A stop that came before the question was posted resolves it unanswered too.
        let answers = if self.stopped() {
            None
        } else {
            answer_rx.await.ok().flatten()
        };
        let Some(answers) = answers.filter(|_| !self.stopped()) else {
            return self.stop_turn().await;
        };
        let (id, turn_id, ts) = self.ids();
        self.emit(SessionEvent::UserQuestionAnswerAck {
            id,
            turn_id,
            ts,
            request_id,
        })
        .await;
        let asked = questions.as_array().cloned().unwrap_or_default();
        let pairs: Vec<Value> = asked
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let answer = answers.get(i).cloned().flatten();
                json!({"question": q["question"], "answer": answer})
            })
            .collect();
        let (id, turn_id, ts) = self.ids();
        self.emit(SessionEvent::ToolResult {
            id,
            turn_id,
            ts,
            tool_use_id,
            is_error: false,
            content: json!({"kind": "json", "value": {"answers": pairs}}),
            details: Default::default(),
        })
        .await;
        let said: Vec<String> = (0..asked.len())
            .map(|i| {
                answers
                    .get(i)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| "未回答".into())
            })
            .collect();
        let message_id = self.shared.sources.new_id();
        self.finish(
            message_id,
            format!("Fake question answers: {}", said.join(" / ")),
        )
        .await;
    }

    async fn fail(&self, reason: &str) {
        if !self.pause(ERROR_DELAY).await {
            return self.stop_turn().await;
        }
        let known = matches!(reason, "network" | "auth" | "rate_limit");
        let (id, turn_id, ts) = self.ids();
        self.emit(SessionEvent::Error {
            id,
            turn_id,
            ts,
            recoverable: false,
            message: if known {
                format!("Deterministic {reason} failure")
            } else {
                "Operation failed".into()
            },
            code: None,
            reason: known.then(|| reason.to_owned()),
            details: None,
        })
        .await;
        self.complete("error").await;
    }
}

/// The three fixed questions, two options each.
fn questions() -> Value {
    let q = |question: &str, header: &str, a: &str, b: &str| {
        json!({"question": question, "header": header,
               "options": [{"label": a}, {"label": b}], "multiSelect": false})
    };
    json!([
        q(
            "Which area should the change touch?",
            "Area",
            "storage",
            "runtime"
        ),
        q(
            "How thorough should the review be?",
            "Depth",
            "quick",
            "deep"
        ),
        q("Should the tests run afterwards?", "Tests", "yes", "no"),
    ])
}

/// `text` in consecutive pieces of `n` characters (the last may be shorter), borrowed.
fn pieces(text: &str, n: usize) -> impl Iterator<Item = &str> {
    debug_assert!(n > 0);
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest.char_indices().nth(n).map_or(rest.len(), |(i, _)| i);
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_what_chunking_the_characters_gives() {
        for text in [
            "",
            "a",
            "123456789",
            "1234567890",
            "héllo wörld, ça va? 🚀🚀 ok",
            "日本語のテキストを九文字ずつ",
        ] {
            let want: Vec<String> = text
                .chars()
                .collect::<Vec<_>>()
                .chunks(CHUNK_CHARS)
                .map(|c| c.iter().collect())
                .collect();
            assert_eq!(
                pieces(text, CHUNK_CHARS).collect::<Vec<_>>(),
                want,
                "{text:?}"
            );
        }
    }
}
