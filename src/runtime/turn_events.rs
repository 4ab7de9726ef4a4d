//! What a turn's caller receives: the backend's events in order (a prefix of them if it fell
//! behind a stopped turn past the stop's grace). The stream hands them on in
//! bursts, one channel message a burst, so a fast backend's turn wakes its caller once a
//! burst rather than once an event.

use super::events::SessionEvent;
use tokio::sync::mpsc;

/// Bursts in flight to the caller at most. A slow backend's bursts hold an event each, so this
/// is how many events a caller that does not keep up may fall behind before the turn waits
/// for it (a fast backend's bursts hold up to `stream::BURST` events each).
pub(super) const BURSTS: usize = 64;

/// The receiving end of a turn's events.
pub struct TurnEvents {
    bursts: mpsc::Receiver<Vec<SessionEvent>>,
    burst: std::vec::IntoIter<SessionEvent>,
}

impl TurnEvents {
    pub(super) fn new(bursts: mpsc::Receiver<Vec<SessionEvent>>) -> Self {
        TurnEvents {
            bursts,
            burst: Vec::new().into_iter(),
        }
    }

    /// The next event, or `None` once the turn has handed on its last.
    pub async fn recv(&mut self) -> Option<SessionEvent> {
        loop {
            if let Some(event) = self.burst.next() {
                return Some(event);
            }
            self.burst = self.bursts.recv().await?.into_iter();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(n: usize) -> SessionEvent {
        SessionEvent::TextDelta {
            id: format!("e{n}"),
            turn_id: "t".into(),
            ts: n as f64,
            message_id: "m".into(),
            text: "x".into(),
            start_offset: None,
        }
    }

    /// Events come out one at a time, in order across bursts (an empty burst among them
    /// included), and `None` once the sender is gone and every burst is drained.
    #[tokio::test]
    async fn bursts_come_out_as_events_in_order() {
        let (tx, rx) = mpsc::channel(BURSTS);
        let mut events = TurnEvents::new(rx);
        tx.send((0..3).map(delta).collect()).await.unwrap();
        tx.send(Vec::new()).await.unwrap();
        tx.send((3..5).map(delta).collect()).await.unwrap();
        drop(tx);
        let mut ids = Vec::new();
        while let Some(e) = events.recv().await {
            ids.push(e.id().to_owned());
        }
        assert_eq!(ids, ["e0", "e1", "e2", "e3", "e4"]);
        assert!(events.recv().await.is_none());
    }
}
