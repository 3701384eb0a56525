//! The R3Net policy: an ONNX file run by `tract-onnx` through the loader the `onnx` controller
//! uses ([`ReadModel`]), with the GRU's hidden state kept here between 50-ms decisions.
//!
//! Model contract: inputs `(obs [1, 4], h [1, 1, H])`; outputs: the first is the action mean in
//! (0, 1) with one element, the last is the new hidden state `[1, 1, H]`; an output named
//! `action_std` (one element) carries the Gaussian policy's std (a critic output is ignored).

use crate::controllers::onnx::model::{run, tensor, with_floats, ReadModel};
use std::collections::HashMap;
use tract_onnx::prelude::{tvec, TypedSimpleState};

/// A loaded R3Net policy with its recurrent state.
pub struct R3NetPolicy {
    state: TypedSimpleState,
    hidden: usize,
    h: Vec<f32>,
    std_output: Option<usize>,
    metadata: HashMap<String, String>,
}

impl std::fmt::Debug for R3NetPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { write!(f, "R3NetPolicy(H = {})", self.hidden) }
}

impl R3NetPolicy {
    pub fn load(bytes: &[u8]) -> Result<R3NetPolicy, String> {
        let model = ReadModel::read(bytes)?;
        if model.inputs.len() != 2 { return Err(format!("an R3Net model takes 2 inputs (obs, h), this one takes {}", model.inputs.len())); }
        if model.inputs[0].1.as_deref() != Some(&[Some(1), Some(4)]) { return Err(format!("input 0 must be obs [1, 4], got {:?}", model.inputs[0].1)); }
        let hidden = match model.inputs[1].1.as_deref() { Some([Some(1), Some(1), Some(h)]) if *h > 0 => *h, d => return Err(format!("input 1 must be h [1, 1, H], got {d:?}")) };
        if model.outputs.len() < 2 { return Err("an R3Net model has at least 2 outputs (action mean, …, h)".into()); }
        let std_output = model.outputs.iter().position(|n| n == "action_std");
        let metadata = model.metadata();
        let state = model.into_state(&[vec![1, 4], vec![1, 1, hidden]])?;
        let mut p = R3NetPolicy { state, hidden, h: vec![0.0; hidden], std_output, metadata };
        // Smoke-run once so that a model with inconsistent shapes fails at load, not mid-run.
        p.step(&[0.0; 4])?;
        p.reset();
        Ok(p)
    }

    pub fn hidden_size(&self) -> usize { self.hidden }
    /// The recurrent state the next decision starts from.
    pub fn hidden_state(&self) -> &[f32] { &self.h }
    pub fn reset(&mut self) { self.h.iter_mut().for_each(|v| *v = 0.0); }

    /// The value of the file's metadata key `key` (ONNX `metadata_props`).
    pub fn metadata(&self, key: &str) -> Option<&str> { self.metadata.get(key).map(String::as_str) }

    /// One 50-ms decision: scaled observation → action mean in (0, 1); updates the hidden state.
    pub fn step(&mut self, obs: &[f32; 4]) -> Result<f32, String> { self.step_with_std(obs).map(|(m, _)| m) }

    /// Like [`R3NetPolicy::step`], also returning the policy's std (0 when the model has none).
    /// A non-finite new hidden state is not kept (the next decision starts from the old one).
    pub fn step_with_std(&mut self, obs: &[f32; 4]) -> Result<(f32, f32), String> {
        let out = run(&mut self.state, tvec![tensor(&[1, 4], obs)?, tensor(&[1, 1, self.hidden], &self.h)?])?;
        let (n_a, mu) = with_floats(out.first().ok_or("no output")?, |v| (v.len(), v.first().copied().unwrap_or(f32::NAN)))?;
        let hidden = self.hidden;
        let h = &mut self.h;
        with_floats(out.last().ok_or("no output")?, |v| {
            if n_a != 1 || v.len() != hidden { return Err(format!("model outputs have {n_a} / {} values, expected 1 / {hidden}", v.len())); }
            if v.iter().all(|x| x.is_finite()) { h.copy_from_slice(v); }
            Ok(())
        })??;
        let std = match self.std_output.and_then(|i| out.get(i)) {
            Some(t) => with_floats(t, |v| v.first().copied())?.filter(|s| s.is_finite() && *s >= 0.0).unwrap_or(0.0),
            None => 0.0,
        };
        Ok((mu, std))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::r3net::SHIPPED_MODEL;

    #[test]
    fn the_shipped_model_loads_with_its_state_std_and_metadata() {
        let mut p = R3NetPolicy::load(SHIPPED_MODEL).unwrap();
        assert_eq!(p.hidden_size(), 64);
        assert!(p.hidden_state().iter().all(|v| *v == 0.0), "a loaded policy starts from h = 0");
        assert_eq!(p.metadata("trainer"), Some("ratelab.rl.train"));
        assert_eq!(p.metadata("no such key"), None);
        let (mu, std) = p.step_with_std(&[1.0, 1.0, 0.0, 0.5]).unwrap();
        assert!(mu > 0.0 && mu < 1.0 && std > 0.0, "({mu}, {std})");
        // the step carried the state: the same observation now answers differently, and after
        // a reset exactly as the first time
        assert!(p.hidden_state().iter().any(|v| *v != 0.0));
        assert_ne!(p.step(&[1.0, 1.0, 0.0, 0.5]).unwrap(), mu);
        p.reset();
        assert_eq!(p.step(&[1.0, 1.0, 0.0, 0.5]).unwrap(), mu);
    }

    #[test]
    fn garbage_is_one_clear_error() {
        let e = R3NetPolicy::load(b"definitely not protobuf").unwrap_err();
        assert!(e.starts_with("not a readable ONNX model"), "{e}");
    }
}
