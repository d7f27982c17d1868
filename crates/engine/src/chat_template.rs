//! Renders chat prompts with the model's own Jinja template (`tokenizer.chat_template`), so
//! ChatML (Qwen), Qwen3 and DeepSeek-R1 templates work unchanged, with Transformers' settings
//! (`trim_blocks`, `lstrip_blocks`). A template also says how its model thinks ([`Thinking`]).

use crate::error::{EngineError, Result};
use minijinja::{context, Environment, Error, ErrorKind};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Self { role: Role::User, content: content.into() }
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self { role: Role::Assistant, content: content.into() }
    }
    pub fn system(content: impl Into<String>) -> Self {
        Self { role: Role::System, content: content.into() }
    }
}

/// A template used when a model ships none: plain ChatML, what Qwen models speak.
pub const CHATML_TEMPLATE: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// Whether a model thinks before it answers, as its template says.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Thinking {
    /// No thinking block (Qwen2.5 and other instruct models).
    Never,
    /// Always (DeepSeek-R1 and its distills: their templates strip earlier thoughts, and the
    /// model is trained to think every time).
    Always,
    /// On unless the request turns it off (Qwen3's `enable_thinking`).
    Switchable,
}

impl Thinking {
    /// What a template's text says, without compiling it (for showing a model before loading).
    pub fn of_template(source: &str) -> Self {
        if source.contains("enable_thinking") {
            Thinking::Switchable
        } else if source.contains("</think>") {
            Thinking::Always
        } else {
            Thinking::Never
        }
    }

    /// Whether a request that asks for `wanted` (or the model's default, `None`) thinks.
    pub fn thinks(self, wanted: Option<bool>) -> bool {
        match self {
            Thinking::Never => false,
            Thinking::Always => true,
            Thinking::Switchable => wanted.unwrap_or(true),
        }
    }
}

pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
    thinking: Thinking,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate").field("thinking", &self.thinking).finish()
    }
}

/// Instructions one rendering may run.
const TEMPLATE_FUEL: u64 = 5_000_000;
/// Prompt text one rendering may write (far beyond any context: 1M tokens of 16 bytes).
const MAX_PROMPT_BYTES: usize = 16 << 20;

impl ChatTemplate {
    pub fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<Self> {
        let mut env = Environment::new();
        // As Transformers renders templates: a block tag's own line break and the indentation
        // before it are not part of the output.
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        // A template comes with the model file: one that loops for ever (or nearly) runs out
        // of fuel instead of hanging the request. Real templates use a few hundred
        // instructions a message.
        env.set_fuel(Some(TEMPLATE_FUEL));
        // Real templates call Python string methods (`.strip()`, `.split()`, `.startswith()`).
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |msg: String| -> Result<String, Error> {
            Err(Error::new(ErrorKind::InvalidOperation, msg))
        });
        env.add_function("strftime_now", |_fmt: String| -> String { String::new() });
        env.add_template_owned("chat", source.to_string()).map_err(|e| EngineError::Template(describe(&e)))?;
        Ok(Self {
            env,
            bos_token: bos_token.to_string(),
            eos_token: eos_token.to_string(),
            thinking: Thinking::of_template(source),
        })
    }

    /// Whether the model thinks before answering, always or by default.
    pub fn is_reasoning(&self) -> bool {
        self.thinking != Thinking::Never
    }

    pub fn thinking(&self) -> Thinking {
        self.thinking
    }

    /// The prompt for the next assistant turn, with the model's default thinking.
    pub fn render(&self, messages: &[Message]) -> Result<String> {
        self.render_with(messages, None)
    }

    /// The prompt for the next assistant turn. `enable_thinking` goes to the template as
    /// Qwen3's templates read it (left undefined when `None`); R1 models think whatever it
    /// says. A prompt that thinks always ends with `<think>\n`, which newer templates add
    /// themselves and older ones (and Qwen3's, which lets the model write it) do not.
    pub fn render_with(&self, messages: &[Message], enable_thinking: Option<bool>) -> Result<String> {
        let tmpl = self.env.get_template("chat").map_err(|e| EngineError::Template(describe(&e)))?;
        let base = context! {
            messages => messages,
            add_generation_prompt => true,
            bos_token => &self.bos_token,
            eos_token => &self.eos_token,
        };
        let ctx = match enable_thinking {
            Some(on) => context! { enable_thinking => on, ..base },
            None => base,
        };
        let mut text = tmpl.render(ctx).map_err(|e| EngineError::Template(describe(&e)))?;
        if text.len() > MAX_PROMPT_BYTES {
            return Err(EngineError::Template(format!(
                "the template wrote {} MiB of prompt, more than any context holds",
                text.len() >> 20
            )));
        }
        // A template that closed an empty thought (thinking off) has said all there is to say.
        let thinks = self.thinking.thinks(enable_thinking) && !text.trim_end().ends_with("</think>");
        if thinks && !text.trim_end().ends_with("<think>") {
            text.push_str("<think>\n");
        }
        Ok(text)
    }
}

fn describe(e: &Error) -> String {
    let mut s = e.to_string();
    if let Some(line) = e.line() {
        s.push_str(&format!(" (template line {line})"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const R1: &str = crate::gguf_edit::R1_TEMPLATE;
    const BOS: &str = "<｜begin▁of▁sentence｜>";
    const EOS: &str = "<｜end▁of▁sentence｜>";

    #[test]
    fn deepseek_r1_template() {
        let t = ChatTemplate::new(R1, BOS, EOS).unwrap();
        assert!(t.is_reasoning());
        let p = t.render(&[Message::user("1+1?")]).unwrap();
        assert_eq!(p, "<｜begin▁of▁sentence｜><｜User｜>1+1?<｜Assistant｜><think>\n");
    }

    #[test]
    fn older_r1_template_gets_the_think_tag() {
        let old = R1.replace("<think>\\n", "");
        let t = ChatTemplate::new(&old, BOS, EOS).unwrap();
        let p = t.render(&[Message::user("1+1?")]).unwrap();
        assert!(p.ends_with("<｜Assistant｜><think>\n"), "{p}");
    }

    #[test]
    fn chatml_template_with_system_prompt() {
        let t = ChatTemplate::new(CHATML_TEMPLATE, "", "<|im_end|>").unwrap();
        assert!(!t.is_reasoning());
        let p = t.render(&[Message::system("Be brief."), Message::user("Hi")]).unwrap();
        assert_eq!(p, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    }

    /// Qwen3's published template (tests/data/templates), against Jinja2's renderings with
    /// thinking left to the model, on, and off.
    #[test]
    fn qwen3_template_with_and_without_thinking_matches_jinja2() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/templates");
        let source = std::fs::read_to_string(root.join("qwen3.jinja")).unwrap();
        let t = ChatTemplate::new(&source, "", "<|im_end|>").unwrap();
        assert_eq!(t.thinking(), Thinking::Switchable);
        let cases = std::fs::read_to_string(root.join("qwen3-renderings.jsonl")).unwrap();
        let mut seen = 0;
        for line in cases.lines() {
            let case: serde_json::Value = serde_json::from_str(line).unwrap();
            let messages: Vec<Message> = serde_json::from_value(case["messages"].clone()).unwrap();
            let wanted = case["enable_thinking"].as_bool();
            let reference = case["rendered"].as_str().unwrap();
            let ours = t.render_with(&messages, wanted).unwrap();
            if wanted == Some(false) {
                assert!(reference.ends_with("<think>\n\n</think>\n\n"));
                assert_eq!(ours, reference, "{messages:?}");
            } else {
                // The model would open its thought itself; Ponder opens it so it streams as one.
                assert_eq!(ours, format!("{reference}<think>\n"), "{messages:?} {wanted:?}");
            }
            seen += 1;
        }
        assert_eq!(seen, 12);
    }

    /// R1 models think whatever a request asks; instruct models never do.
    #[test]
    fn r1_always_thinks_and_chatml_never_does() {
        let r1 = ChatTemplate::new(R1, BOS, EOS).unwrap();
        assert_eq!(r1.thinking(), Thinking::Always);
        assert!(r1.render_with(&[Message::user("1+1?")], Some(false)).unwrap().ends_with("<think>\n"));
        let chatml = ChatTemplate::new(CHATML_TEMPLATE, "", "<|im_end|>").unwrap();
        assert_eq!(chatml.thinking(), Thinking::Never);
        assert!(chatml.render_with(&[Message::user("1+1?")], Some(true)).unwrap().ends_with("assistant\n"));
    }

    #[test]
    fn python_string_methods_work() {
        let t = ChatTemplate::new("{{ messages[0]['content'].strip().upper() }}|{{ 'a,b'.split(',')[-1] }}", "", "").unwrap();
        assert_eq!(t.render(&[Message::user("  hi ")]).unwrap(), "HI|b");
    }

    #[test]
    fn template_errors_are_reported() {
        assert!(matches!(ChatTemplate::new("{% if %}", "", ""), Err(EngineError::Template(_))));
    }

    #[test]
    fn a_template_that_loops_for_ever_or_writes_too_much_fails_the_request() {
        let spin = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
        let err = ChatTemplate::new(spin, "", "").unwrap().render(&[Message::user("hi")]).unwrap_err();
        assert!(err.to_string().contains("fuel"), "{err}");
        let flood = "{% for i in range(40) %}{{ 'x' * 1000000 }}{% endfor %}";
        let err = ChatTemplate::new(flood, "", "").unwrap().render(&[Message::user("hi")]).unwrap_err();
        assert!(err.to_string().contains("MiB of prompt"), "{err}");
        // A long conversation with a real template stays well within the fuel.
        let t = ChatTemplate::new(crate::gguf_edit::R1_TEMPLATE, "<s>", "</s>").unwrap();
        let turns: Vec<Message> =
            (0..500).map(|i| if i % 2 == 0 { Message::user("a question") } else { Message::assistant("an answer") }).collect();
        assert!(t.render(&turns).is_ok());
    }
}
