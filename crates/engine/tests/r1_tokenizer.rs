//! The default model's real tokenizer and chat template against the references made from the
//! published DeepSeek-R1-Distill-Qwen GGUF (tests/data/r1-tokenizer): llama.cpp's ids for 14
//! texts, and Jinja2's rendering of 4 conversations with their ids, exactly one BOS included.

use ponder_engine::chat_template::ChatTemplate;
use ponder_engine::tokenizer::Tokenizer;
use ponder_engine::{Message, Role};
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/r1-tokenizer").join(name)
}

fn jsonl(name: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(data(name)).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect()
}

fn vocab() -> (Tokenizer, ChatTemplate) {
    let (ct, _) = ponder_engine::loader::read_gguf_header(&data("r1-distill-qwen-vocab.gguf")).unwrap();
    assert_eq!(ct.metadata["tokenizer.ggml.pre"].to_string().unwrap(), "deepseek-r1-qwen");
    let tok = Tokenizer::from_gguf(&ct).unwrap();
    let template = ct.metadata["tokenizer.chat_template"].to_string().unwrap();
    let template = ChatTemplate::new(template, &tok.bos_token, &tok.eos_token).unwrap();
    (tok, template)
}

#[test]
fn token_ids_match_llama_cpp_for_every_reference_text() {
    let (tok, _) = vocab();
    let cases = jsonl("tokens.jsonl");
    assert_eq!(cases.len(), 14);
    for case in cases {
        let text = case["text"].as_str().unwrap();
        // Special tokens written in a prompt are the control tokens (as the template writes them).
        assert_eq!(tok.encode_plain(text).unwrap(), ids(&case["ids_parse_special"]), "{text:?}");
        assert_eq!(tok.decode(&ids(&case["ids_parse_special"])).unwrap(), text, "decoding {text:?}");
    }
}

#[test]
fn rendered_conversations_match_jinja2_with_one_bos() {
    let (tok, template) = vocab();
    assert!(template.is_reasoning());
    let bos = tok.bos_id.unwrap();
    assert!(tok.add_bos, "the file asks for a BOS: the template's is the one kept");
    let cases = jsonl("templates.jsonl");
    assert_eq!(cases.len(), 4);
    let think = tok.encode_plain("<think>\n").unwrap();
    for case in cases {
        let messages: Vec<Message> = case["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let content = m["content"].as_str().unwrap().to_string();
                let role = match m["role"].as_str().unwrap() {
                    "system" => Role::System,
                    "user" => Role::User,
                    _ => Role::Assistant,
                };
                Message { role, content }
            })
            .collect();
        let reference = case["rendered"].as_str().unwrap();
        let ours = template.render(&messages).unwrap();
        // This older template leaves `<think>\n` to the application, which Ponder appends.
        assert_eq!(ours, format!("{reference}<think>\n"), "{messages:?}");
        let mut want = ids(&case["ids"]);
        want.extend(&think);
        let got = tok.encode_prompt(&ours).unwrap();
        assert_eq!(got, want, "{reference:?}");
        assert_eq!(got.iter().filter(|&&t| t == bos).count(), 1, "one BOS: {reference:?}");
    }
}
