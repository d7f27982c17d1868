//! `ponder perplexity`'s arithmetic on the small test model: the logits of a chunk's last rows
//! are the logits decoding gives, and perplexity orders texts as it should.

use ponder_engine::decoder::StepInput;
use ponder_engine::perplexity::{perplexity, PerplexityOptions};
use ponder_engine::{load, EngineError, KvCacheType, LoadOptions, LoadedModel};

const TEXT: &str = "The river runs past the old mill, where the miller grinds wheat into flour. \
    Every morning he opens the sluice, and the wheel turns slowly while the village wakes. \
    Children walk along the bank to school, and the baker buys his flour before noon. ";

#[test]
fn a_chunks_last_rows_are_the_logits_decoding_gives() {
    ponder_testkit::threads();
    let m = load(&ponder_testkit::small_model(), &LoadOptions::default()).unwrap();
    for kind in KvCacheType::ALL {
        check_chunk_against_decoding(&m, kind);
    }
}

fn check_chunk_against_decoding(m: &LoadedModel, kind: KvCacheType) {
    let tokens = m.tokenizer.encode_plain(TEXT).unwrap();
    let (n, k) = (tokens.len(), 10);
    let mut cache = m.model.new_cache(kind);
    let chunk = m.model.forward(&mut [StepInput { tokens: &tokens, cache: &mut cache, logit_rows: k }]).unwrap().unwrap();
    assert_eq!(chunk.dims(), &[k, m.model.config().vocab_size]);
    let chunk = chunk.to_vec2::<f32>().unwrap();

    // The same positions, read as a prompt and then decoded a token at a time.
    let mut cache = m.model.new_cache(kind);
    let mut rows = Vec::new();
    let prompt = &tokens[..n - k + 1];
    let first = m.model.forward(&mut [StepInput { tokens: prompt, cache: &mut cache, logit_rows: 1 }]).unwrap().unwrap();
    rows.push(first.to_vec2::<f32>().unwrap().remove(0));
    for t in &tokens[n - k + 1..] {
        let next = m.model.forward(&mut [StepInput { tokens: &[*t], cache: &mut cache, logit_rows: 1 }]).unwrap().unwrap();
        rows.push(next.to_vec2::<f32>().unwrap().remove(0));
    }
    // Each row is computed on its own, whatever shares the step: the same bits.
    assert_eq!(chunk, rows, "{kind}");
}

#[test]
fn a_repeated_text_is_less_perplexing_than_the_same_words_shuffled() {
    ponder_testkit::threads();
    let m = load(&ponder_testkit::small_model(), &LoadOptions::default()).unwrap();
    let opts = PerplexityOptions { context: 64, max_chunks: Some(3), ..Default::default() };
    // A sentence shorter than half a chunk: each scored token has been seen before.
    let repeated = "The miller grinds wheat into flour by the river. ".repeat(40);
    // The same words in a scrambled order, so only their order differs.
    let mut words: Vec<&str> = repeated.split_whitespace().collect();
    let mut seed = 12345u64;
    for i in (1..words.len()).rev() {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        words.swap(i, (seed >> 33) as usize % (i + 1));
    }
    let shuffled = words.join(" ");
    let mut seen = Vec::new();
    let a = perplexity(&m, &repeated, &opts, |c, n, ppl| seen.push((c, n, ppl))).unwrap();
    let b = perplexity(&m, &shuffled, &opts, |_, _, _| {}).unwrap();
    assert_eq!((a.chunks, a.context, a.scored_tokens), (3, 64, 3 * 31));
    assert_eq!(seen.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>(), vec![(1, 3), (2, 3), (3, 3)]);
    assert!(a.perplexity > 1.0 && a.perplexity < 2.0, "a text seen before is easy: {a:?}");
    assert!(b.perplexity > 10.0 * a.perplexity, "shuffled {b:?} against {a:?}");
    assert!(a.std_error > 0.0 && a.std_error.is_finite());

    let short = perplexity(&m, "Too short.", &opts, |_, _, _| {}).unwrap_err();
    assert!(matches!(short, EngineError::TextTooShort { needed: 128, context: 64, .. }), "{short}");
}

/// The 8-bit cache costs little: on a real text (Debian's copy of the GPL, on every Debian
/// system, six chunks of 512), each test model's perplexity is within 0.75 % of the f16 cache's
/// (measured: 0.5B +0.23 %, 1.5B -0.49 %). The 0.5B model's keys have channels a hundred times
/// larger than the rest, which cost it +5.4 % here before the cache evened them out, and +1.4 %
/// before the key bias of the slowly turning pairs was taken off (`channel_scales`).
#[test]
fn the_8_bit_cache_scores_a_text_almost_as_the_f16_cache_does() {
    ponder_testkit::threads();
    let text = std::fs::read_to_string("/usr/share/common-licenses/GPL-3").expect("Debian's base-files");
    for model in [ponder_testkit::small_model(), ponder_testkit::model(ponder_testkit::LARGE)] {
        let m = load(&model, &LoadOptions::default()).unwrap();
        let score = |kv_cache| {
            let opts = PerplexityOptions { context: 512, max_chunks: Some(6), kv_cache };
            perplexity(&m, &text, &opts, |_, _, _| {}).unwrap()
        };
        let (f16, q8) = (score(KvCacheType::F16), score(KvCacheType::Q8_0));
        assert_eq!((f16.kv_cache, q8.kv_cache), (KvCacheType::F16, KvCacheType::Q8_0));
        assert_ne!(f16.perplexity, q8.perplexity, "the two caches store different values");
        let change = q8.perplexity / f16.perplexity - 1.0;
        let name = model.file_name().unwrap().to_string_lossy();
        assert!(change.abs() < 0.0075, "{name}: q8_0 {} against f16 {}: {:+.2} %", q8.perplexity, f16.perplexity, 100.0 * change);
    }
}
