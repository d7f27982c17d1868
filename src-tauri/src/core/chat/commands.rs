//! The chat's Tauri commands: each one a thin call into the store or [`ChatState`].
use super::store::{ChatMessage, Conversation, Role, UNTITLED};
use super::{ChatEvent, ChatState};
use crate::core::engine::EngineState;
use crate::core::error::CommandError;
use crate::core::files::{Access, FileGrants};
use crate::core::settings::SettingsState;
use serde::Serialize;
use std::sync::Arc;
use tauri::ipc::Channel;
use tauri::State;

type Chat<'a> = State<'a, Arc<ChatState>>;

#[tauri::command]
pub fn list_conversations(chat: Chat<'_>, query: Option<String>) -> Result<Vec<Conversation>, CommandError> {
    chat.store.lock().unwrap().conversations(query.as_deref().unwrap_or("").trim()).map_err(CommandError::from)
}

#[tauri::command]
pub fn create_conversation(chat: Chat<'_>) -> Result<Conversation, CommandError> {
    chat.store.lock().unwrap().create(UNTITLED).map_err(CommandError::from)
}

#[tauri::command]
pub fn rename_conversation(chat: Chat<'_>, id: i64, title: String) -> Result<(), CommandError> {
    chat.store.lock().unwrap().rename(id, title.trim()).map_err(CommandError::from)
}

/// The conversation's *Think* switch, for its next replies (`None`: the model's default).
#[tauri::command]
pub fn set_conversation_thinking(chat: Chat<'_>, id: i64, thinking: Option<bool>) -> Result<Conversation, CommandError> {
    let store = chat.store.lock().unwrap();
    store.set_thinking(id, thinking)?;
    store.conversation(id).map_err(CommandError::from)
}

#[tauri::command]
pub fn delete_conversation(chat: Chat<'_>, id: i64) -> Result<(), CommandError> {
    chat.stop(id);
    chat.store.lock().unwrap().delete(id).map_err(CommandError::from)
}

#[tauri::command]
pub fn get_messages(chat: Chat<'_>, conversation_id: i64) -> Result<Vec<ChatMessage>, CommandError> {
    chat.store.lock().unwrap().messages(conversation_id).map_err(CommandError::from)
}

/// Writes the conversation as Markdown (`super::export`) where the user chose to save it.
#[tauri::command(async)]
pub fn export_conversation(
    chat: Chat<'_>,
    grants: State<'_, FileGrants>,
    id: i64,
    path: String,
    with_thinking: bool,
) -> Result<(), CommandError> {
    let path = grants.check(&path, Access::Write)?;
    let markdown = {
        let store = chat.store.lock().unwrap();
        super::export::to_markdown(&store.conversation(id)?, &store.messages(id)?, with_thinking)
    };
    Ok(std::fs::write(&path, markdown).map_err(|e| format!("{}: {e}", path.display()))?)
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Serialize)]
pub struct Sent {
    pub question: ChatMessage,
    pub reply: ChatMessage,
}

/// Adds the question and starts the reply, whose text arrives on `on_event`.
#[tauri::command]
pub fn send_message(
    chat: Chat<'_>,
    engine: State<'_, Arc<EngineState>>,
    settings: State<'_, SettingsState>,
    conversation_id: i64,
    content: String,
    on_event: Channel<ChatEvent>,
) -> Result<Sent, CommandError> {
    let content = content.trim();
    if content.is_empty() {
        return Err(CommandError::coded("chat.empty", "the message is empty", &[]));
    }
    if chat.is_running(conversation_id) {
        return Err(CommandError::coded("chat.busy", "a reply is still being written in this conversation", &[]));
    }
    let question = chat.store.lock().unwrap().add(conversation_id, Role::User, content)?;
    let reply = chat.start_reply(conversation_id, engine.inner().clone(), &settings.get(), on_event)?;
    Ok(Sent { question, reply })
}

/// Replaces the conversation's last reply with a new one.
#[tauri::command]
pub fn regenerate(
    chat: Chat<'_>,
    engine: State<'_, Arc<EngineState>>,
    settings: State<'_, SettingsState>,
    conversation_id: i64,
    on_event: Channel<ChatEvent>,
) -> Result<ChatMessage, CommandError> {
    let last_question = {
        let store = chat.store.lock().unwrap();
        let messages = store.messages(conversation_id)?;
        messages.into_iter().rev().find(|m| m.role == Role::User).ok_or(CommandError::coded(
            "chat.nothing_to_regenerate",
            "nothing to regenerate",
            &[],
        ))?
    };
    resend_from(&chat, &engine, &settings, last_question, None, on_event)
}

/// Changes a question and answers it again; everything after it in the conversation goes.
#[tauri::command]
pub fn edit_and_resend(
    chat: Chat<'_>,
    engine: State<'_, Arc<EngineState>>,
    settings: State<'_, SettingsState>,
    message_id: i64,
    content: String,
    on_event: Channel<ChatEvent>,
) -> Result<ChatMessage, CommandError> {
    let question = chat.store.lock().unwrap().message(message_id)?;
    if question.role != Role::User {
        return Err(CommandError::coded("chat.not_a_question", "only questions can be edited", &[]));
    }
    let content = content.trim().to_string();
    if content.is_empty() {
        return Err(CommandError::coded("chat.empty", "the message is empty", &[]));
    }
    resend_from(&chat, &engine, &settings, question, Some(content), on_event)
}

fn resend_from(
    chat: &Arc<ChatState>,
    engine: &Arc<EngineState>,
    settings: &SettingsState,
    question: ChatMessage,
    new_content: Option<String>,
    on_event: Channel<ChatEvent>,
) -> Result<ChatMessage, CommandError> {
    if chat.is_running(question.conversation_id) {
        return Err(CommandError::coded("chat.busy", "a reply is still being written in this conversation", &[]));
    }
    {
        let store = chat.store.lock().unwrap();
        if let Some(c) = &new_content {
            store.set_content(question.id, c)?;
        }
        store.truncate_after(question.id)?;
    }
    chat.start_reply(question.conversation_id, engine.clone(), &settings.get(), on_event)
}

#[tauri::command]
pub fn stop_reply(chat: Chat<'_>, conversation_id: i64) {
    chat.stop(conversation_id);
}
