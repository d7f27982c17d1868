mod common;
#[test]
fn show() {
    let l = ponder_engine::load(&common::model(common::SMALL), &Default::default()).unwrap();
    let p = l.template.render(&[ponder_engine::Message::user("Hi there")]).unwrap();
    println!("PROMPT<<{p}>>");
    let ids = l.tokenizer.encode_prompt(&p).unwrap();
    println!("IDS {:?}", ids);
    println!("eos {:?} bos {:?} add_bos {}", l.tokenizer.eos_ids, l.tokenizer.bos_id, l.tokenizer.add_bos);
}
