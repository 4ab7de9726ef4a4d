//! The machine's faults, crashes and clean reopens: what each leaves on the simulated disk,
//! checked against the model (or the model with a failed write landed, which it then adopts).

use super::ops::Machine;
use super::state::State;
use makalog::storage::{Fault, FaultKind, Tear};
use makalog::store::ReadOnlySessions;
use makalog::verify::verify_root;

impl Machine {
    pub(super) fn arm(&mut self, after: u8, kind: u8) {
        let kinds = [
            FaultKind::Eio,
            FaultKind::ShortWrite,
            FaultKind::NoSpace,
            FaultKind::SyncLost,
        ];
        match kinds.get(usize::from(kind % 5)) {
            Some(&kind) => self.storage.inject(Fault {
                nth: self.storage.operations() + 1 + u64::from(after % 32),
                forever: false,
                kind,
            }),
            None => self
                .storage
                .crash_before_point(self.storage.persistence_points() + 1 + u64::from(after % 16)),
        }
        self.armed = Some(Tear::ALL[usize::from(kind / 5) % Tear::ALL.len()]);
    }

    /// A clean close: the root verifies clean and reads, without the lease, as the model says.
    pub(super) fn reopen(&mut self) {
        if let Some((owner, stores)) = self.live.take() {
            let closed = stores.close();
            drop(owner);
            if let Err(e) = closed {
                assert!(self.armed.is_some(), "a clean close failed: {e}");
                let tear = self.armed.take().unwrap_or(Tear::None);
                return self.crash(tear, &[]);
            }
        }
        if self.armed.is_none() {
            // A session is recovered when it is opened for writing: one only read since a
            // crash may still end in what the crash left, which verify reports.
            let report = verify_root(&*self.storage).expect("verify");
            for finding in &report.findings {
                let session = finding
                    .strip_prefix("sessions/")
                    .and_then(|f| f.split('/').next());
                let untouched = session.is_some_and(|s| !self.touched.contains(s));
                assert!(
                    untouched && finding.contains("torn"),
                    "verify after a clean close: {finding}"
                );
            }
        }
        // The process starts again; an armed fault goes with it.
        self.storage.restart();
        self.armed = None;
        self.expect_files(&[]);
        self.open();
        self.check();
    }

    /// The machine loses power. The root must then read as the model, or as one of `maybe`
    /// (a write that failed may have landed), which the model adopts.
    pub(super) fn crash(&mut self, tear: Tear, maybe: &[State]) {
        self.live = None;
        self.touched.clear();
        self.armed = None;
        self.storage.crash(tear, &mut self.rng);
        self.expect_files(maybe);
        self.open();
        let seen = self.observe().expect("reading the stores after a crash");
        self.adopt(seen, maybe, "the stores after a crash");
    }

    pub(super) fn expect_files(&mut self, maybe: &[State]) {
        let seen = State::of_files(&ReadOnlySessions::new(&*self.storage))
            .expect("reading the files without the lease");
        let ok = std::iter::once(&self.model)
            .chain(maybe)
            .any(|s| s.without_claims() == seen);
        assert!(
            ok,
            "the files read {seen:?}, the model holds {:?} or {maybe:?}",
            self.model
        );
    }

    pub(super) fn adopt(&mut self, seen: State, maybe: &[State], what: &str) {
        let ok = seen == self.model || maybe.contains(&seen);
        assert!(
            ok,
            "{what}: {seen:?}, the model holds {:?} or {maybe:?}",
            self.model
        );
        self.model = seen;
    }
}
