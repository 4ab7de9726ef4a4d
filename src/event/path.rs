//! JSON paths that name the field an error is about, in the form `actions.permissionRequest.kind`.

/// A position in the event: keys joined by `.`, array indexes as `[n]`; empty at the event itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Path(String);

/// What the event itself is called in errors.
pub const EVENT: &str = "<event>";

impl Path {
    /// The event itself.
    pub fn root() -> Path {
        Path(String::new())
    }

    /// The member `key` of the object at this path.
    pub fn key(&self, key: &str) -> Path {
        if self.0.is_empty() {
            Path(key.to_string())
        } else {
            Path(format!("{}.{key}", self.0))
        }
    }

    /// The element `index` of the array at this path.
    pub fn index(&self, index: usize) -> Path {
        Path(format!("{}[{index}]", self.0))
    }

    /// The path as errors print it.
    pub fn render(&self) -> String {
        if self.0.is_empty() {
            EVENT.to_string()
        } else {
            self.0.clone()
        }
    }
}
