//! Panics planted on purpose (feature `fault-inject`, off by default), so that tests can prove a
//! panic in the engine ends only the requests it hit and the next request is served.
//!
//! `PONDER_FAULT` lists where to panic, read when an engine starts: `step@N` panics inside the
//! Nth model step (counting from 1 after the warm-up), `loop@N` between steps, in the
//! scheduler's part of the Nth turn of the loop. Example: `PONDER_FAULT=step@3,loop@7`.

#[derive(Debug, Default, Clone)]
pub(super) struct Faults {
    steps: Vec<u64>,
    loops: Vec<u64>,
    step: u64,
    turn: u64,
}

impl Faults {
    pub fn from_env() -> Self {
        let mut f = Self::default();
        for part in std::env::var("PONDER_FAULT").unwrap_or_default().split(',').filter(|p| !p.is_empty()) {
            match part.split_once('@').map(|(at, n)| (at, n.trim().parse::<u64>())) {
                Some(("step", Ok(n))) => f.steps.push(n),
                Some(("loop", Ok(n))) => f.loops.push(n),
                _ => tracing::warn!("PONDER_FAULT: ignoring `{part}` (expected step@N or loop@N)"),
            }
        }
        f
    }

    /// Called once per model step.
    pub fn on_step(&mut self) {
        self.step += 1;
        if self.steps.contains(&self.step) {
            panic!("fault injected in step {}", self.step);
        }
    }

    /// Called once per turn of the worker's loop, outside a step.
    pub fn on_turn(&mut self) {
        self.turn += 1;
        if self.loops.contains(&self.turn) {
            panic!("fault injected in turn {} of the engine loop", self.turn);
        }
    }
}
