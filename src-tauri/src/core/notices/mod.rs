//! What the app has to tell the user about its own launch (a store that could not be used and
//! was moved aside), kept until the window asks for it once.
pub mod commands;

use crate::core::error::CommandError;
use ponder_jobs::schema::MovedAside;
use std::sync::Mutex;

#[derive(Default)]
pub struct Notices(Mutex<Vec<CommandError>>);

impl Notices {
    pub fn push(&self, notice: CommandError) {
        self.0.lock().unwrap().push(notice);
    }

    /// A store that could not be used, where it went, and that a fresh one took its place.
    pub fn moved_aside(&self, m: MovedAside) {
        let (path, moved_to) = (m.path.display().to_string(), m.moved_to.display().to_string());
        let message = format!("{path} could not be used ({}); it was kept as {moved_to}, and Ponder started afresh", m.why);
        self.push(CommandError::coded("store.moved_aside", message, &[("path", path), ("moved_to", moved_to), ("why", m.why)]));
    }

    /// Everything not shown yet; each notice is given out once.
    pub fn take(&self) -> Vec<CommandError> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_is_given_once_with_its_values() {
        let n = Notices::default();
        n.moved_aside(MovedAside {
            path: "/d/chat.sqlite".into(),
            moved_to: "/d/chat.sqlite.unusable-x".into(),
            why: "damaged".into(),
        });
        let all = n.take();
        assert_eq!(all.len(), 1);
        assert_eq!(
            (all[0].code.as_str(), all[0].params["moved_to"].as_str()),
            ("store.moved_aside", "/d/chat.sqlite.unusable-x")
        );
        assert!(all[0].message.contains("could not be used (damaged)"), "{}", all[0].message);
        assert!(n.take().is_empty());
    }
}
