//! Conversations and their messages, in SQLite in the app data folder.

use ponder_jobs::schema::{MovedAside, Schema, SchemaError};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Conversation {
    pub id: i64,
    pub title: String,
    pub updated_at: i64,
    /// The conversation's *Think* switch: `None` follows the model (on for reasoning models).
    /// Only models whose template has the switch (Qwen3) are affected.
    pub thinking: Option<bool>,
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// Figures shown under a reply.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplyStats {
    pub time_to_first_token_s: Option<f64>,
    pub tokens_per_second: f64,
    pub thinking_tokens: usize,
    pub answer_tokens: usize,
    pub thinking_seconds: Option<f64>,
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChatMessage {
    pub id: i64,
    pub conversation_id: i64,
    pub role: Role,
    /// The answer (for a reply) or the question.
    pub content: String,
    pub thinking: String,
    /// `None` while a reply is being written (or when the app stopped while it was).
    pub finish_reason: Option<String>,
    pub stats: Option<ReplyStats>,
}

#[derive(Debug, thiserror::Error)]
pub enum ChatStoreError {
    #[error("chat database: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("chat database: {0}")]
    Schema(#[from] SchemaError),
    #[error("no conversation {0}")]
    NoConversation(i64),
    #[error("no message {0}")]
    NoMessage(i64),
}

pub type Result<T> = std::result::Result<T, ChatStoreError>;

pub struct ChatStore {
    db: Connection,
}

/// The chat history's schema, version by version (see `ponder_jobs::schema`).
const SCHEMA: Schema = Schema {
    name: "chat history",
    application_id: 0x504f_4e43, // "PONC"
    marker_table: "conversations",
    migrations: &[
        // 1: the schema as it was before versions (a no-op on such files).
        "CREATE TABLE IF NOT EXISTS conversations (
            id INTEGER PRIMARY KEY,
            title TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL);
         CREATE TABLE IF NOT EXISTS messages (
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            thinking TEXT NOT NULL DEFAULT '',
            finish_reason TEXT,
            stats TEXT,
            created_at INTEGER NOT NULL);
         CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation_id, id);",
        // 2: a conversation's Think switch (NULL: the model's default).
        "ALTER TABLE conversations ADD COLUMN thinking INTEGER;",
    ],
};

pub const UNTITLED: &str = "";

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

impl ChatStore {
    /// Opens (or creates) the history and brings its schema up to date. A file it cannot use
    /// is moved aside (and said so), and the app starts with an empty history instead of not
    /// starting.
    pub fn open_or_move_aside(path: &Path) -> Result<(Self, Option<MovedAside>)> {
        let (db, moved) = SCHEMA.open_or_move_aside(path)?;
        Ok((Self::configure(db)?, moved))
    }

    fn configure(db: Connection) -> Result<Self> {
        db.pragma_update(None, "journal_mode", "WAL")?;
        db.pragma_update(None, "foreign_keys", true)?;
        Ok(Self { db })
    }

    /// Newest first; `query` filters by title and message text (case-insensitive).
    pub fn conversations(&self, query: &str) -> Result<Vec<Conversation>> {
        let pattern = format!("%{}%", query.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
        let mut stmt = self.db.prepare(
            "SELECT id, title, updated_at, thinking FROM conversations c
             WHERE ?1 = '%%' OR title LIKE ?1 ESCAPE '\\'
                OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.content LIKE ?1 ESCAPE '\\')
             ORDER BY updated_at DESC, id DESC",
        )?;
        let rows = stmt.query_map([pattern], row_to_conversation)?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    pub fn create(&self, title: &str) -> Result<Conversation> {
        let t = now();
        self.db.execute("INSERT INTO conversations (title, created_at, updated_at) VALUES (?1, ?2, ?2)", params![title, t])?;
        Ok(Conversation { id: self.db.last_insert_rowid(), title: title.to_string(), updated_at: t, thinking: None })
    }

    pub fn rename(&self, id: i64, title: &str) -> Result<()> {
        match self.db.execute("UPDATE conversations SET title = ?2 WHERE id = ?1", params![id, title])? {
            0 => Err(ChatStoreError::NoConversation(id)),
            _ => Ok(()),
        }
    }

    /// Sets the conversation's *Think* switch (`None`: back to the model's default).
    pub fn set_thinking(&self, id: i64, thinking: Option<bool>) -> Result<()> {
        match self.db.execute("UPDATE conversations SET thinking = ?2 WHERE id = ?1", params![id, thinking])? {
            0 => Err(ChatStoreError::NoConversation(id)),
            _ => Ok(()),
        }
    }

    pub fn delete(&self, id: i64) -> Result<()> {
        self.db.execute("DELETE FROM conversations WHERE id = ?1", [id])?;
        Ok(())
    }

    pub fn conversation(&self, id: i64) -> Result<Conversation> {
        self.db
            .query_row("SELECT id, title, updated_at, thinking FROM conversations WHERE id = ?1", [id], row_to_conversation)
            .optional()?
            .ok_or(ChatStoreError::NoConversation(id))
    }

    pub fn messages(&self, conversation_id: i64) -> Result<Vec<ChatMessage>> {
        self.conversation(conversation_id)?;
        let mut stmt = self.db.prepare(
            "SELECT id, conversation_id, role, content, thinking, finish_reason, stats FROM messages
             WHERE conversation_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([conversation_id], row_to_message)?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    pub fn message(&self, id: i64) -> Result<ChatMessage> {
        self.db
            .query_row(
                "SELECT id, conversation_id, role, content, thinking, finish_reason, stats FROM messages WHERE id = ?1",
                [id],
                row_to_message,
            )
            .optional()?
            .ok_or(ChatStoreError::NoMessage(id))
    }

    /// Adds a message; the first question also names an untitled conversation.
    pub fn add(&self, conversation_id: i64, role: Role, content: &str) -> Result<ChatMessage> {
        let conv = self.conversation(conversation_id)?;
        let t = now();
        let role_s = if role == Role::User { "user" } else { "assistant" };
        self.db.execute(
            "INSERT INTO messages (conversation_id, role, content, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![conversation_id, role_s, content, t],
        )?;
        let id = self.db.last_insert_rowid();
        self.db.execute("UPDATE conversations SET updated_at = ?2 WHERE id = ?1", params![conversation_id, t])?;
        if role == Role::User && conv.title == UNTITLED {
            self.rename(conversation_id, &title_from(content))?;
        }
        self.message(id)
    }

    /// Saves a reply's text so far; with a finish reason it is complete.
    pub fn save_reply(
        &self,
        id: i64,
        content: &str,
        thinking: &str,
        finish_reason: Option<&str>,
        stats: Option<&ReplyStats>,
    ) -> Result<()> {
        let stats = stats.map(|s| serde_json::to_string(s).expect("stats serialise"));
        self.db.execute(
            "UPDATE messages SET content = ?2, thinking = ?3, finish_reason = ?4, stats = ?5 WHERE id = ?1",
            params![id, content, thinking, finish_reason, stats],
        )?;
        Ok(())
    }

    /// Ends a reply as failed, keeping the text it had written.
    pub fn mark_failed(&self, id: i64) -> Result<()> {
        self.db.execute("UPDATE messages SET finish_reason = 'error' WHERE id = ?1", [id])?;
        Ok(())
    }

    pub fn set_content(&self, id: i64, content: &str) -> Result<()> {
        match self.db.execute("UPDATE messages SET content = ?2 WHERE id = ?1", params![id, content])? {
            0 => Err(ChatStoreError::NoMessage(id)),
            _ => Ok(()),
        }
    }

    /// Deletes the messages after `id` in its conversation (for regenerate and edit-and-resend).
    pub fn truncate_after(&self, id: i64) -> Result<()> {
        let m = self.message(id)?;
        self.db.execute("DELETE FROM messages WHERE conversation_id = ?1 AND id > ?2", params![m.conversation_id, id])?;
        Ok(())
    }

    /// Replies the app was writing when it last stopped are marked as interrupted, not lost.
    pub fn mark_interrupted(&self) -> Result<usize> {
        Ok(self.db.execute(
            "UPDATE messages SET finish_reason = 'interrupted' WHERE role = 'assistant' AND finish_reason IS NULL",
            [],
        )?)
    }
}

fn row_to_conversation(r: &rusqlite::Row<'_>) -> rusqlite::Result<Conversation> {
    Ok(Conversation { id: r.get(0)?, title: r.get(1)?, updated_at: r.get(2)?, thinking: r.get(3)? })
}

fn row_to_message(r: &rusqlite::Row<'_>) -> rusqlite::Result<ChatMessage> {
    let role: String = r.get(2)?;
    let stats: Option<String> = r.get(6)?;
    Ok(ChatMessage {
        id: r.get(0)?,
        conversation_id: r.get(1)?,
        role: if role == "user" { Role::User } else { Role::Assistant },
        content: r.get(3)?,
        thinking: r.get(4)?,
        finish_reason: r.get(5)?,
        stats: stats.and_then(|s| serde_json::from_str(&s).ok()),
    })
}

/// The first line of the first question, cut at a word near 60 characters.
fn title_from(question: &str) -> String {
    let line = question.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if line.chars().count() <= 60 {
        return line.to_string();
    }
    let cut: String = line.chars().take(60).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > 30 => &cut[..i],
        _ => &cut,
    };
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, ChatStore) {
        let dir = tempfile::tempdir().unwrap();
        let s = ChatStore::open_or_move_aside(&dir.path().join("chat.sqlite")).unwrap().0;
        (dir, s)
    }

    #[test]
    fn a_conversation_is_named_by_its_first_question_and_found_by_search() {
        let (_d, s) = store();
        let a = s.create(UNTITLED).unwrap();
        s.add(a.id, Role::User, "  \nWhat is the sum of the first 100 odd numbers, and why is it a perfect square?").unwrap();
        let b = s.create(UNTITLED).unwrap();
        s.add(b.id, Role::User, "求 x^2 = 4 的解").unwrap();
        let all = s.conversations("").unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].title, "求 x^2 = 4 的解");
        assert_eq!(all[1].title, "What is the sum of the first 100 odd numbers, and why is it…");
        assert_eq!(s.conversations("PERFECT").unwrap().iter().map(|c| c.id).collect::<Vec<_>>(), vec![a.id]);
        assert_eq!(s.conversations("x^2").unwrap().iter().map(|c| c.id).collect::<Vec<_>>(), vec![b.id]);
        // LIKE wildcards in the query are taken literally.
        assert!(s.conversations("100%").unwrap().is_empty());
        s.rename(a.id, "Odd numbers").unwrap();
        assert_eq!(s.conversations("odd").unwrap()[0].title, "Odd numbers");
    }

    #[test]
    fn replies_truncation_and_deletion() {
        let (_d, s) = store();
        let c = s.create("t").unwrap();
        let q = s.add(c.id, Role::User, "2+2?").unwrap();
        let r = s.add(c.id, Role::Assistant, "").unwrap();
        assert_eq!(s.message(r.id).unwrap().finish_reason, None);
        let stats = ReplyStats { tokens_per_second: 12.5, thinking_tokens: 3, answer_tokens: 2, ..Default::default() };
        s.save_reply(r.id, "4", "add", Some("stop"), Some(&stats)).unwrap();
        let saved = s.message(r.id).unwrap();
        assert_eq!((saved.content.as_str(), saved.thinking.as_str(), saved.finish_reason.as_deref()), ("4", "add", Some("stop")));
        assert_eq!(saved.stats, Some(stats));
        // A failed reply keeps what it had written.
        let failed = s.add(c.id, Role::Assistant, "").unwrap();
        s.save_reply(failed.id, "The answer is", "Let me", None, None).unwrap();
        s.mark_failed(failed.id).unwrap();
        let kept = s.message(failed.id).unwrap();
        assert_eq!(
            (kept.content.as_str(), kept.thinking.as_str(), kept.finish_reason.as_deref()),
            ("The answer is", "Let me", Some("error"))
        );
        let r2 = s.add(c.id, Role::Assistant, "").unwrap();
        assert_eq!(s.mark_interrupted().unwrap(), 1);
        assert_eq!(s.message(r2.id).unwrap().finish_reason.as_deref(), Some("interrupted"));
        s.truncate_after(q.id).unwrap();
        assert_eq!(s.messages(c.id).unwrap().len(), 1);
        s.delete(c.id).unwrap();
        assert!(matches!(s.messages(c.id), Err(ChatStoreError::NoConversation(_))));
        assert!(matches!(s.message(q.id), Err(ChatStoreError::NoMessage(_))));
    }

    #[test]
    fn a_conversations_think_switch_is_kept_and_older_files_gain_it() {
        let (d, s) = store();
        let c = s.create("t").unwrap();
        assert_eq!(c.thinking, None);
        s.set_thinking(c.id, Some(false)).unwrap();
        assert_eq!(s.conversation(c.id).unwrap().thinking, Some(false));
        assert_eq!(s.conversations("").unwrap()[0].thinking, Some(false));
        s.set_thinking(c.id, None).unwrap();
        assert_eq!(s.conversation(c.id).unwrap().thinking, None);
        assert!(matches!(s.set_thinking(c.id + 1, Some(true)), Err(ChatStoreError::NoConversation(_))));

        // A history written before the switch existed opens with its conversations following the model.
        let old_path = d.path().join("old.sqlite");
        let old = Connection::open(&old_path).unwrap();
        old.execute_batch(SCHEMA.migrations[0]).unwrap();
        old.execute("INSERT INTO conversations VALUES (1, 'Old', 1, 1)", []).unwrap();
        drop(old);
        let (s, moved) = ChatStore::open_or_move_aside(&old_path).unwrap();
        assert!(moved.is_none());
        let c = s.conversation(1).unwrap();
        assert_eq!((c.title.as_str(), c.thinking), ("Old", None));
        s.set_thinking(1, Some(true)).unwrap();
        assert_eq!(s.conversation(1).unwrap().thinking, Some(true));
    }
}
