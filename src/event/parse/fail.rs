//! A refusal on its way out of the parser, and the path it gathers as it goes.

use super::super::error::EventError;
use super::super::path::Path;

pub(super) enum Segment {
    Key(String),
    Index(usize),
}

/// A refusal on its way out: the path it happened at is gathered as it leaves each object and
/// array (innermost first), so reading a valid text spends nothing on paths.
pub(super) struct Fail {
    inside: Vec<Segment>,
    why: Why,
}

pub(super) enum Why {
    Invalid(String),
    LoneSurrogate,
}

impl Fail {
    pub(super) fn new(why: Why) -> Fail {
        Fail {
            inside: Vec::new(),
            why,
        }
    }

    pub(super) fn within(mut self, segment: Segment) -> Fail {
        self.inside.push(segment);
        self
    }

    pub(super) fn into_error(self) -> EventError {
        let field = self
            .inside
            .iter()
            .rev()
            .fold(Path::root(), |path, segment| match segment {
                Segment::Key(key) => path.key(key),
                Segment::Index(index) => path.index(*index),
            })
            .render();
        match self.why {
            Why::Invalid(why) => EventError::Invalid { field, why },
            Why::LoneSurrogate => EventError::LoneSurrogate { field },
        }
    }
}
