//! The fake backend (kind `fake`, MAKA-MODEL §11): a streamed echo, a prompt that asks the user
//! questions and waits, and prompts that fail. Its delays run on tokio's clock, so a test with
//! paused time never sleeps for real; `with_delays(false)` drops them (benchmarks).

mod turn;

use super::backend::{Backend, SendInput};
use super::events::SessionEvent;
use super::sources::Sources;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot, Notify};

/// The prompt that makes the fake backend ask three questions and wait for the answers.
pub const FAKE_ASK_USER_QUESTION_PROMPT: &str = "__e2e_ask_user_question__";
/// The prefix of a prompt that makes the fake backend fail with the reason after it.
pub const FAKE_ERROR_PROMPT_PREFIX: &str = "__e2e_error__:";

/// What a question's wait ends with: the answers, or none when the turn is stopped.
type Answers = Option<Vec<Option<String>>>;

/// The fake backend of one session.
pub struct FakeBackend {
    shared: Arc<Shared>,
    delays: bool,
}

struct Shared {
    sources: Sources,
    stopped: AtomicBool,
    stop: Notify,
    question: Mutex<Option<(String, oneshot::Sender<Answers>)>>,
}

impl FakeBackend {
    /// A fake backend with the delays of §11.
    pub fn new(sources: Sources) -> FakeBackend {
        FakeBackend {
            shared: Arc::new(Shared {
                sources,
                stopped: AtomicBool::new(false),
                stop: Notify::new(),
                question: Mutex::new(None),
            }),
            delays: true,
        }
    }

    /// The same backend with (`true`) or without its delays.
    pub fn with_delays(mut self, delays: bool) -> FakeBackend {
        self.delays = delays;
        self
    }
}

impl Backend for FakeBackend {
    fn kind(&self) -> &str {
        "fake"
    }

    fn send(&self, input: SendInput) -> mpsc::Receiver<SessionEvent> {
        let (tx, rx) = mpsc::channel(64);
        self.shared.stopped.store(false, Ordering::SeqCst);
        let turn = turn::Turn {
            shared: self.shared.clone(),
            tx,
            turn_id: input.turn_id.clone(),
            delays: self.delays,
        };
        tokio::spawn(turn.run(input));
        rx
    }

    fn stop(&self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.shared.stop.notify_waiters();
        let pending = self.shared.question.lock().map(|mut q| q.take());
        if let Ok(Some((_, answer))) = pending {
            let _ = answer.send(None);
        }
    }

    fn respond_to_user_question(&self, request_id: &str, answers: Vec<Option<String>>) -> bool {
        let Ok(mut pending) = self.shared.question.lock() else {
            return false;
        };
        match pending.take() {
            Some((id, answer)) if id == request_id => answer.send(Some(answers)).is_ok(),
            other => {
                *pending = other;
                false
            }
        }
    }
}
