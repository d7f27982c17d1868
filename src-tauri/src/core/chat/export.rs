//! A conversation as a Markdown file to share: the title, then each turn under a heading, with
//! the model's thinking as a quoted block when it is wanted.

use super::store::{ChatMessage, Conversation, Role};

pub fn to_markdown(conversation: &Conversation, messages: &[ChatMessage], with_thinking: bool) -> String {
    let mut md = format!("# {}\n", conversation.title.trim());
    for m in messages {
        match m.role {
            Role::User => md.push_str("\n## Question\n\n"),
            Role::Assistant => md.push_str("\n## Answer\n\n"),
        }
        let thinking = m.thinking.trim();
        if with_thinking && m.role == Role::Assistant && !thinking.is_empty() {
            // A quote keeps the thought apart from the answer in any Markdown viewer; each of
            // its lines is quoted so that a blank line does not end it.
            md.push_str("> **Thinking**\n>\n");
            for line in thinking.lines() {
                md.push_str(if line.trim().is_empty() { ">".to_string() } else { format!("> {line}") }.as_str());
                md.push('\n');
            }
            md.push('\n');
        }
        md.push_str(m.content.trim());
        md.push('\n');
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(role: Role, content: &str, thinking: &str) -> ChatMessage {
        ChatMessage {
            id: 0,
            conversation_id: 1,
            role,
            content: content.into(),
            thinking: thinking.into(),
            finish_reason: None,
            stats: None,
        }
    }

    #[test]
    fn a_conversation_reads_as_markdown_with_or_without_the_thinking() {
        let c = Conversation { id: 1, title: "Sum of angles".into(), updated_at: 0, thinking: None };
        let messages = [
            message(Role::User, "What do a triangle's angles add up to?", ""),
            message(Role::Assistant, "They add up to $180^\\circ$.", "A triangle...\n\nSo $\\pi$ radians."),
        ];
        assert_eq!(
            to_markdown(&c, &messages, true),
            "# Sum of angles\n\n## Question\n\nWhat do a triangle's angles add up to?\n\n## Answer\n\n\
             > **Thinking**\n>\n> A triangle...\n>\n> So $\\pi$ radians.\n\nThey add up to $180^\\circ$.\n"
        );
        let without = to_markdown(&c, &messages, false);
        assert!(
            !without.contains("Thinking") && !without.contains("radians") && without.ends_with("They add up to $180^\\circ$.\n")
        );
    }
}
