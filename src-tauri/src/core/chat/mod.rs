//! Chat: conversations kept in SQLite, replies streamed from the engine to the window.
pub mod commands;
pub mod export;
pub mod store;

use crate::core::engine::EngineState;
use crate::core::error::CommandError;
use crate::core::settings::Settings;
use ponder_engine::{Canceller, Channel, EngineError, Event, GenerateRequest, Message, Priority, SamplingParams};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use store::{ChatMessage, ChatStore, ReplyStats, Role};

/// What the window hears about a reply being written.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ChatEvent {
    /// The engine started reading the conversation.
    Started {
        prompt_tokens: usize,
    },
    Delta {
        channel: Channel,
        text: String,
    },
    /// The reply as saved, with why it ended (and the error, if it failed).
    Finished {
        message: ChatMessage,
        error: Option<CommandError>,
    },
}

/// Where a reply's events go; the Tauri channel in the app, a vector in tests.
pub trait ReplySink: Send + 'static {
    /// `false` once nobody is listening (the window went away).
    fn send(&self, event: ChatEvent) -> bool;
}

impl ReplySink for tauri::ipc::Channel<ChatEvent> {
    fn send(&self, event: ChatEvent) -> bool {
        tauri::ipc::Channel::send(self, event).is_ok()
    }
}

/// The conversation as the model sees it: questions and answers, without the thinking (R1's
/// template drops it too) and without replies that produced no answer.
pub fn history(messages: Vec<ChatMessage>) -> Vec<Message> {
    messages
        .into_iter()
        .filter(|m| m.role == Role::User || !m.content.is_empty())
        .map(|m| match m.role {
            Role::User => Message::user(m.content),
            Role::Assistant => Message::assistant(m.content),
        })
        .collect()
}

pub struct ChatState {
    pub store: Mutex<ChatStore>,
    /// Conversations with a reply being written, and how to stop it.
    running: Mutex<HashMap<i64, Arc<StopSwitch>>>,
}

/// Stops a reply, whether or not it has reached the engine yet: a stop before the request is
/// submitted is remembered and applied when it is.
#[derive(Default)]
struct StopSwitch(Mutex<(bool, Option<Canceller>)>);

impl StopSwitch {
    fn stop(&self) {
        let mut s = self.0.lock().unwrap();
        s.0 = true;
        if let Some(c) = &s.1 {
            c.cancel();
        }
    }

    /// Connects the switch to the submitted request; false if it was already stopped.
    fn connect(&self, canceller: Canceller) -> bool {
        let mut s = self.0.lock().unwrap();
        if s.0 {
            canceller.cancel();
        }
        s.1 = Some(canceller);
        !s.0
    }
}

/// Saving a long reply as it grows means a crash loses seconds of it, not all of it.
const SAVE_EVERY: Duration = Duration::from_secs(3);

/// Appends to `text` the deltas of `channel` that have already arrived, so that they travel as
/// one message (a speculative step accepts several tokens at once, and each message costs the
/// web process a script evaluation); returns the first other event, to be handled next.
fn merge_queued(channel: Channel, text: &mut String, mut next: impl FnMut() -> Option<Event>) -> Option<Event> {
    while let Some(event) = next() {
        match event {
            Event::Delta { channel: c, text: more, .. } if c == channel => text.push_str(&more),
            other => return Some(other),
        }
    }
    None
}

impl ChatState {
    pub fn new(store: ChatStore) -> Self {
        if let Err(e) = store.mark_interrupted() {
            tracing::warn!("{e}");
        }
        Self { store: Mutex::new(store), running: Mutex::new(HashMap::new()) }
    }

    pub fn stop(&self, conversation_id: i64) {
        if let Some(switch) = self.running.lock().unwrap().get(&conversation_id) {
            switch.stop();
        }
    }

    pub fn is_running(&self, conversation_id: i64) -> bool {
        self.running.lock().unwrap().contains_key(&conversation_id)
    }

    /// Adds an empty reply to the conversation and writes it on a thread of its own; returns the
    /// reply as it is now. Earlier replies go back to the model without their thinking, as
    /// R1-style templates expect.
    pub fn start_reply(
        self: &Arc<Self>,
        conversation_id: i64,
        engine: Arc<EngineState>,
        settings: &Settings,
        sink: impl ReplySink,
    ) -> Result<ChatMessage, CommandError> {
        let cancel = Arc::new(StopSwitch::default());
        {
            let mut running = self.running.lock().unwrap();
            if running.contains_key(&conversation_id) {
                return Err(CommandError::coded("chat.busy", "a reply is still being written in this conversation", &[]));
            }
            running.insert(conversation_id, cancel.clone());
        }
        let prepared = (|| {
            let store = self.store.lock().unwrap();
            let thinking = store.conversation(conversation_id)?.thinking;
            let history = history(store.messages(conversation_id)?);
            let reply = store.add(conversation_id, Role::Assistant, "")?;
            Ok::<_, store::ChatStoreError>((history, thinking, reply))
        })();
        let (history, thinking, reply) = match prepared {
            Ok(p) => p,
            Err(e) => {
                self.running.lock().unwrap().remove(&conversation_id);
                return Err(e.into());
            }
        };
        let request = GenerateRequest {
            sampling: SamplingParams { temperature: settings.temperature, top_p: settings.top_p, ..Default::default() },
            max_tokens: settings.max_tokens,
            thinking_budget: settings.thinking_budget,
            thinking,
            priority: Priority::Interactive,
            speculate: settings.speculative_decoding,
            ..GenerateRequest::chat(history)
        };
        let this = self.clone();
        let reply_id = reply.id;
        std::thread::Builder::new()
            .name("ponder-chat-reply".into())
            .spawn(move || {
                let outcome = this.write_reply(reply_id, request, &engine, &cancel, &sink);
                this.running.lock().unwrap().remove(&conversation_id);
                let store = this.store.lock().unwrap();
                let (message, error) = match outcome {
                    Ok(()) => (store.message(reply_id), None),
                    Err(e) => {
                        // What was written before the failure stays (write_reply saved it).
                        let _ = store.mark_failed(reply_id);
                        (store.message(reply_id), Some(e))
                    }
                };
                match message {
                    Ok(message) => {
                        sink.send(ChatEvent::Finished { message, error });
                    }
                    // The conversation was deleted while the reply was written.
                    Err(e) => tracing::info!("reply {reply_id} not kept: {e}"),
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(reply)
    }

    fn write_reply(
        &self,
        reply_id: i64,
        request: GenerateRequest,
        engine: &EngineState,
        cancel: &StopSwitch,
        sink: &impl ReplySink,
    ) -> Result<(), CommandError> {
        // The reply's own errors travel in its Finished event.
        let engine = engine.wait()?;
        // A long conversation gets the room that is left rather than an error.
        let used = engine.prompt_tokens(&request.prompt)?;
        let context = engine.context_length();
        let room = context.saturating_sub(used);
        if room < 16 {
            let message =
                format!("this conversation ({used} tokens) fills the model's context of {context} tokens: start a new one");
            let params = [("used", used.to_string()), ("context_length", context.to_string())];
            return Err(CommandError::coded("chat.context_full", message, &params));
        }
        let request = GenerateRequest { max_tokens: request.max_tokens.min(room), ..request };
        let mut handle = engine.submit(request)?;
        // A stop that came while the model loaded applies now; the engine then ends the reply
        // as cancelled, which is saved like any other ending.
        cancel.connect(handle.canceller());
        let (mut answer, mut thinking) = (String::new(), String::new());
        let (mut thinking_started, mut thinking_ended) = (None::<Instant>, None::<Instant>);
        let mut last_save = Instant::now();
        let mut next = None::<Event>;
        loop {
            let Some(event) = next.take().or_else(|| handle.recv()) else {
                let _ = self.store.lock().unwrap().save_reply(reply_id, &answer, &thinking, None, None);
                return Err(EngineError::EngineStopped.into());
            };
            match event {
                Event::Started { prompt_tokens, .. } => {
                    sink.send(ChatEvent::Started { prompt_tokens });
                }
                Event::Delta { channel, mut text, .. } => {
                    next = merge_queued(channel, &mut text, || handle.try_recv().ok());
                    match channel {
                        Channel::Thinking => {
                            thinking_started.get_or_insert_with(Instant::now);
                            thinking.push_str(&text);
                        }
                        Channel::Answer => {
                            if thinking_started.is_some() {
                                thinking_ended.get_or_insert_with(Instant::now);
                            }
                            answer.push_str(&text);
                        }
                    }
                    if !sink.send(ChatEvent::Delta { channel, text }) {
                        handle.cancel();
                    }
                    if last_save.elapsed() > SAVE_EVERY {
                        let _ = self.store.lock().unwrap().save_reply(reply_id, &answer, &thinking, None, None);
                        last_save = Instant::now();
                    }
                }
                Event::Finished { reason, usage, error, .. } => {
                    let thinking_seconds =
                        thinking_started.map(|s| thinking_ended.unwrap_or_else(Instant::now).duration_since(s).as_secs_f64());
                    let stats = ReplyStats {
                        time_to_first_token_s: usage.time_to_first_token.map(|d| d.as_secs_f64()),
                        tokens_per_second: usage.tokens_per_second,
                        thinking_tokens: usage.thinking_tokens,
                        answer_tokens: usage.answer_tokens,
                        thinking_seconds,
                    };
                    let reason = reason.as_str();
                    self.store.lock().unwrap().save_reply(reply_id, &answer, &thinking, Some(reason), Some(&stats))?;
                    return match error {
                        Some(detail) => {
                            let message = format!("the engine failed: {detail}");
                            Err(CommandError::coded("engine.failed", message, &[("detail", detail)]))
                        }
                        None => Ok(()),
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::test_models::r1_model;
    use std::sync::mpsc;

    impl ReplySink for mpsc::Sender<ChatEvent> {
        fn send(&self, event: ChatEvent) -> bool {
            mpsc::Sender::send(self, event).is_ok()
        }
    }

    fn finished(rx: &mpsc::Receiver<ChatEvent>) -> (Vec<ChatEvent>, ChatMessage, Option<CommandError>) {
        let mut seen = Vec::new();
        loop {
            match rx.recv_timeout(Duration::from_secs(300)).expect("the reply never finished") {
                ChatEvent::Finished { message, error } => return (seen, message, error),
                ev => seen.push(ev),
            }
        }
    }

    #[test]
    fn queued_deltas_of_one_channel_travel_together_and_any_other_event_waits_its_turn() {
        let delta = |channel, text: &str| Event::Delta { index: 0, channel, text: text.into() };
        let mut queue = vec![
            delta(Channel::Thinking, " b"),
            delta(Channel::Thinking, " c"),
            delta(Channel::Answer, "d"),
            delta(Channel::Answer, "e"),
        ]
        .into_iter();
        let mut text = "a".to_string();
        let next = merge_queued(Channel::Thinking, &mut text, || queue.next());
        assert_eq!(text, "a b c");
        assert!(matches!(next, Some(Event::Delta { channel: Channel::Answer, ref text, .. }) if text == "d"), "{next:?}");
        // The answer's own deltas merge in turn; an empty queue ends the merge.
        let mut text = "d".to_string();
        assert!(merge_queued(Channel::Answer, &mut text, || queue.next()).is_none());
        assert_eq!(text, "de");
    }

    #[test]
    fn history_drops_thinking_and_empty_replies() {
        let m = |id, role, content: &str, thinking: &str| ChatMessage {
            id,
            conversation_id: 1,
            role,
            content: content.into(),
            thinking: thinking.into(),
            finish_reason: Some("stop".into()),
            stats: None,
        };
        let h = history(vec![
            m(1, Role::User, "a", ""),
            m(2, Role::Assistant, "", "cut short"),
            m(3, Role::User, "b", ""),
            m(4, Role::Assistant, "B", "because"),
        ]);
        assert_eq!(h, vec![Message::user("a"), Message::user("b"), Message::assistant("B")]);
    }

    #[test]
    fn a_reply_streams_thinking_then_answer_is_saved_and_can_be_stopped() {
        ponder_testkit::threads();
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            thinking_budget: Some(12),
            max_tokens: 40,
            temperature: 0.0,
            max_sequences: 2,
            context_size: 2048,
            ..Settings::default()
        };
        let engine = Arc::new(EngineState::default());
        engine.load(r1_model(), &settings);
        let chat = Arc::new(ChatState::new(ChatStore::open_or_move_aside(&dir.path().join("chat.sqlite")).unwrap().0));
        let conv = chat.store.lock().unwrap().create(store::UNTITLED).unwrap();
        chat.store.lock().unwrap().add(conv.id, Role::User, "What is 2 + 3?").unwrap();

        let (tx, rx) = mpsc::channel();
        let reply = chat.start_reply(conv.id, engine.clone(), &settings, tx).unwrap();
        assert_eq!((reply.role, reply.finish_reason.as_deref()), (Role::Assistant, None));
        // One reply at a time per conversation.
        let (tx2, _rx2) = mpsc::channel();
        assert!(chat.start_reply(conv.id, engine.clone(), &settings, tx2).unwrap_err().code == "chat.busy");

        let (events, saved, error) = finished(&rx);
        assert_eq!(error, None);
        assert!(matches!(events[0], ChatEvent::Started { prompt_tokens } if prompt_tokens > 5));
        let text = |want: Channel| -> String {
            events
                .iter()
                .filter_map(|e| match e {
                    ChatEvent::Delta { channel, text } if *channel == want => Some(text.as_str()),
                    _ => None,
                })
                .collect()
        };
        let first_answer =
            events.iter().position(|e| matches!(e, ChatEvent::Delta { channel: Channel::Answer, .. })).expect("an answer");
        let last_thinking =
            events.iter().rposition(|e| matches!(e, ChatEvent::Delta { channel: Channel::Thinking, .. })).expect("thinking");
        assert!(last_thinking < first_answer, "thinking comes first");
        assert_eq!(saved.id, reply.id);
        assert_eq!(saved.thinking, text(Channel::Thinking));
        assert_eq!(saved.content, text(Channel::Answer));
        let stats = saved.stats.clone().unwrap();
        assert!(stats.thinking_tokens >= 12 && stats.answer_tokens > 0 && stats.tokens_per_second > 0.0, "{stats:?}");
        assert!(stats.time_to_first_token_s.is_some() && stats.thinking_seconds.is_some());
        assert!(!chat.is_running(conv.id));
        assert_eq!(chat.store.lock().unwrap().messages(conv.id).unwrap().len(), 2);

        // A long reply stopped after its first words keeps what was written.
        chat.store.lock().unwrap().add(conv.id, Role::User, "Now count from 1 to 500, one number per line.").unwrap();
        let long = Settings { max_tokens: 2000, thinking_budget: Some(4), ..settings.clone() };
        let (tx, rx) = mpsc::channel();
        chat.start_reply(conv.id, engine.clone(), &long, tx).unwrap();
        loop {
            match rx.recv_timeout(Duration::from_secs(300)).unwrap() {
                ChatEvent::Delta { channel: Channel::Answer, .. } => break,
                ChatEvent::Finished { message, error } => panic!("finished before answering: {message:?} {error:?}"),
                _ => {}
            }
        }
        chat.stop(conv.id);
        let (_, stopped, error) = finished(&rx);
        assert_eq!(error, None);
        assert_eq!(stopped.finish_reason.as_deref(), Some("cancelled"));
        assert!(!stopped.content.is_empty());
        assert!(stopped.stats.unwrap().answer_tokens < 1500);

        // A conversation that fills the context ends its reply with a coded error the window
        // translates, and the reply is saved as failed.
        let full = chat.store.lock().unwrap().create(store::UNTITLED).unwrap();
        chat.store.lock().unwrap().add(full.id, Role::User, &"seven ".repeat(2100)).unwrap();
        let (tx, rx) = mpsc::channel();
        chat.start_reply(full.id, engine.clone(), &settings, tx).unwrap();
        let (_, failed, error) = finished(&rx);
        let error = error.expect("a full context is an error");
        assert_eq!(error.code, "chat.context_full", "{error:?}");
        assert_eq!(error.params["context_length"], "2048");
        assert_eq!(failed.finish_reason.as_deref(), Some("error"));
    }

    #[test]
    fn the_speculative_decoding_setting_reaches_the_engine() {
        ponder_testkit::threads();
        let dir = tempfile::tempdir().unwrap();
        let settings =
            Settings { thinking_budget: Some(4), max_tokens: 48, temperature: 0.0, context_size: 2048, ..Settings::default() };
        let engine = Arc::new(EngineState::default());
        engine.load(r1_model(), &settings);
        let chat = Arc::new(ChatState::new(ChatStore::open_or_move_aside(&dir.path().join("chat.sqlite")).unwrap().0));
        let drafted_by = |speculative_decoding: bool| {
            let conv = chat.store.lock().unwrap().create(store::UNTITLED).unwrap();
            chat.store.lock().unwrap().add(conv.id, Role::User, "Repeat `x = 1; y = 2;` ten times, one per line.").unwrap();
            let before = engine.wait().unwrap().stats().total_drafted;
            let (tx, rx) = mpsc::channel();
            chat.start_reply(conv.id, engine.clone(), &Settings { speculative_decoding, ..settings.clone() }, tx).unwrap();
            assert_eq!(finished(&rx).2, None);
            engine.wait().unwrap().stats().total_drafted - before
        };
        assert_eq!(drafted_by(false), 0, "off: no drafts");
        assert!(drafted_by(true) > 0, "on (the default): a repetitive reply drafts");
    }

    #[test]
    fn a_conversations_think_switch_reaches_a_model_that_has_one() {
        use ponder_testkit::tiny::{Quant, Tiny, Value, QWEN3_TEMPLATE};
        ponder_testkit::threads();
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("tiny-qwen3.gguf");
        Tiny::of(ponder_engine::Family::Qwen3).write_gguf(&model, Quant::Q8_0, |md| {
            md.insert("tokenizer.chat_template".into(), Value::String(QWEN3_TEMPLATE.into()));
        });
        let settings = Settings { max_tokens: 8, temperature: 0.0, context_size: 1024, ..Settings::default() };
        let engine = Arc::new(EngineState::default());
        engine.load(model, &settings);
        let chat = Arc::new(ChatState::new(ChatStore::open_or_move_aside(&dir.path().join("chat.sqlite")).unwrap().0));
        let reply_in = |thinking: Option<bool>| {
            let store = chat.store.lock().unwrap();
            let conv = store.create(store::UNTITLED).unwrap();
            store.set_thinking(conv.id, thinking).unwrap();
            store.add(conv.id, Role::User, "What is 2 + 3?").unwrap();
            drop(store);
            let (tx, rx) = mpsc::channel();
            chat.start_reply(conv.id, engine.clone(), &settings, tx).unwrap();
            let (_, saved, error) = finished(&rx);
            assert_eq!(error, None);
            saved.stats.unwrap()
        };
        // Qwen3 thinks unless the conversation turns it off; random weights never close the thought.
        for on in [None, Some(true)] {
            let stats = reply_in(on);
            assert!(stats.thinking_tokens > 0 && stats.answer_tokens == 0, "{on:?}: {stats:?}");
        }
        let off = reply_in(Some(false));
        assert!(off.thinking_tokens == 0 && off.answer_tokens > 0, "{off:?}");
    }
}
