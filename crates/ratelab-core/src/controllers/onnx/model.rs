//! A user's ONNX bandwidth estimator, run by `tract-onnx` (pure Rust, maintained; no Python,
//! no native runtime). The model's inputs say which signature it has:
//!
//! * stateless, `obs → bps`: one input holding the 150-value observation (`[1, 150]` or
//!   `[1, 1, 150]`), first output's first value = the estimate in bit/s;
//! * stateful, exactly as the MMSys'24 challenge requires (microsoft/RL4BandwidthEstimationChallenge
//!   README, `torch_policy.py`): inputs `obs [1, 1, 150]`, `hidden_states [1, H]`,
//!   `cell_states [1, H]`; outputs `output` (estimate in bit/s first, e.g. `[1, 1, 2]` mean and
//!   std), `state_out [1, H]`, `cell_out [1, H]`, fed back as the next step's states;
//! * ratelab's R3Net signature (`obs [1, 4]`, `h [1, 1, H]`): recognised here and handed to the
//!   `r3net` controller (see [`Signature::R3Net`]).

use super::features::OBS_LEN;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::Factoid;

/// Input names of the challenge's stateful signature.
pub const STATEFUL_INPUTS: [&str; 3] = ["obs", "hidden_states", "cell_states"];

/// What the model's inputs look like.
#[derive(Clone, Debug, PartialEq)]
pub enum Signature {
    /// `obs → bps`, with the observation's shape.
    Stateless { obs: Vec<usize> },
    /// `(obs, hidden_states, cell_states) → (output, state_out, cell_out)`.
    Stateful { obs: Vec<usize>, hidden: Vec<usize>, cell: Vec<usize> },
    /// ratelab's R3Net policy (4 features every 50 ms, action in (0, 1)): run by `r3net`.
    R3Net,
}

impl Signature {
    pub fn name(&self) -> &'static str {
        match self { Signature::Stateless { .. } => "stateless", Signature::Stateful { .. } => "mmsys24-stateful", Signature::R3Net => "r3net" }
    }
}

/// A loaded estimator with its recurrent state (the state owns tract's optimised plan).
pub struct OnnxEstimatorModel {
    sig: Signature,
    state: TypedSimpleState,
    h: Vec<f32>,
    c: Vec<f32>,
}

impl OnnxEstimatorModel {
    /// The MMSys'24 challenge's own signature (observation, hidden and cell state): a model of the
    /// challenge, trained on calls that always carried its audio stream.
    pub fn is_challenge_stateful(&self) -> bool { matches!(self.sig, Signature::Stateful { .. }) }
}

impl std::fmt::Debug for OnnxEstimatorModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { write!(f, "OnnxEstimatorModel({:?})", self.sig) }
}

/// Declared dimensions of an input: concrete sizes, `None` where symbolic or unknown; `None`
/// overall when even the rank is unknown.
fn declared_dims(fact: &InferenceFact) -> Option<Vec<Option<usize>>> {
    fact.shape.rank().concretize()?;
    Some(fact.shape.dims().map(|d| d.concretize().and_then(|t| t.to_i64().ok()).and_then(|v| usize::try_from(v).ok())).collect())
}

fn show(d: &Option<Vec<Option<usize>>>) -> String {
    match d {
        None => "[?]".into(),
        Some(v) => format!("[{}]", v.iter().map(|x| x.map_or("?".to_string(), |n| n.to_string())).collect::<Vec<_>>().join(", ")),
    }
}

/// The observation's shape: the declared rank with unknown leading (batch, time) dims as 1 and
/// an unknown last dim as 150; it must hold exactly 150 values.
fn obs_shape(name: &str, d: &Option<Vec<Option<usize>>>) -> Result<Vec<usize>, String> {
    let shape: Vec<usize> = match d {
        None => vec![1, OBS_LEN],
        Some(v) if v.is_empty() => return Err(format!("input '{name}' is a scalar; the observation has {OBS_LEN} values")),
        Some(v) => v.iter().enumerate().map(|(i, x)| x.unwrap_or(if i + 1 == v.len() { OBS_LEN } else { 1 })).collect(),
    };
    if shape.iter().product::<usize>() != OBS_LEN {
        return Err(format!("input '{name}' has shape {}, which does not hold the {OBS_LEN}-value MMSys'24 observation (expected [1, {OBS_LEN}] or [1, 1, {OBS_LEN}])", show(d)));
    }
    Ok(shape)
}

/// A recurrent state input `[1, H]` (unknown batch = 1); H must be declared.
fn state_shape(name: &str, d: &Option<Vec<Option<usize>>>) -> Result<Vec<usize>, String> {
    let bad = || format!("input '{name}' has shape {}; the MMSys'24 signature needs [1, H] with H fixed in the model", show(d));
    let Some(v) = d else { return Err(bad()) };
    match v.as_slice() {
        [b, Some(h)] if b.is_none_or(|b| b == 1) && *h > 0 => Ok(vec![1, *h]),
        _ => Err(bad()),
    }
}

/// Classify a model's inputs (names and declared shapes).
pub fn classify(inputs: &[(String, Option<Vec<Option<usize>>>)]) -> Result<Signature, String> {
    let names: Vec<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
    match inputs {
        [(n, d)] => Ok(Signature::Stateless { obs: obs_shape(n, d)? }),
        [(_, Some(o)), (_, Some(h))] if o.as_slice() == [Some(1), Some(4)] && h.len() == 3 => Ok(Signature::R3Net),
        [(n0, d0), (_, d1), (_, d2)] if names == STATEFUL_INPUTS => {
            Ok(Signature::Stateful { obs: obs_shape(n0, d0)?, hidden: state_shape("hidden_states", d1)?, cell: state_shape("cell_states", d2)? })
        }
        _ => {
            let got: Vec<String> = inputs.iter().map(|(n, d)| format!("{n} {}", show(d))).collect();
            Err(format!(
                "unsupported model signature: inputs ({}); supported: obs [1, 150] → bps; (obs [1, 1, 150], hidden_states [1, H], cell_states [1, H]) → (output, state_out, cell_out) as the MMSys'24 challenge; R3Net (obs [1, 4], h [1, 1, H])",
                got.join(", ")
            ))
        }
    }
}

impl OnnxEstimatorModel {
    /// Read the model and its signature. `Ok(None)` for an R3Net model (run by `r3net`).
    pub fn load(bytes: &[u8]) -> Result<Option<OnnxEstimatorModel>, String> {
        let model = ReadModel::read(bytes)?;
        let sig = classify(&model.inputs)?;
        let shapes: Vec<Vec<usize>> = match &sig {
            Signature::R3Net => return Ok(None),
            Signature::Stateless { obs } => vec![obs.clone()],
            Signature::Stateful { obs, hidden, cell } => vec![obs.clone(), hidden.clone(), cell.clone()],
        };
        let n_out = model.outputs.len();
        if matches!(sig, Signature::Stateful { .. }) && n_out < 3 {
            return Err(format!("a stateful MMSys'24 model has 3 outputs (output, state_out, cell_out); this one has {n_out}"));
        }
        let state = model.into_state(&shapes)?;
        let (h, c) = match &sig {
            Signature::Stateful { hidden, cell, .. } => (vec![0.0; hidden[1]], vec![0.0; cell[1]]),
            _ => (Vec::new(), Vec::new()),
        };
        let mut m = OnnxEstimatorModel { sig, state, h, c };
        // Smoke-run once so that a model that cannot run, or answers NaN on an empty
        // observation, fails at load rather than mid-run.
        let est = m.step(&[0.0; OBS_LEN])?;
        if !est.is_finite() { return Err(format!("the model's estimate for an all-zero observation is {est} (must be a finite bit rate)")); }
        m.reset();
        Ok(Some(m))
    }

    pub fn signature(&self) -> &Signature { &self.sig }

    /// Zero the recurrent state.
    pub fn reset(&mut self) {
        self.h.iter_mut().for_each(|v| *v = 0.0);
        self.c.iter_mut().for_each(|v| *v = 0.0);
    }

    /// One decision: the observation → the estimate in bit/s (the first value of the first
    /// output); advances the recurrent state (kept when the model returns non-finite states).
    pub fn step(&mut self, obs: &[f32; OBS_LEN]) -> Result<f64, String> {
        let inputs: TVec<TValue> = match &self.sig {
            Signature::Stateless { obs: s } => tvec![tensor(s, obs)?],
            Signature::Stateful { obs: s, hidden, cell } => tvec![tensor(s, obs)?, tensor(hidden, &self.h)?, tensor(cell, &self.c)?],
            Signature::R3Net => return Err("an R3Net model runs in the r3net controller".into()),
        };
        let out = run(&mut self.state, inputs)?;
        let est = with_floats(out.first().ok_or("the model has no output")?, |v| v.first().copied().ok_or_else(|| "the model's first output is empty".to_string()))??;
        if matches!(self.sig, Signature::Stateful { .. }) {
            for (k, dst) in [(1usize, &mut self.h), (2, &mut self.c)] {
                with_floats(out.get(k).ok_or("missing state output")?, |s| {
                    if s.len() != dst.len() { return Err(format!("state output {k} has {} values, the state input {}", s.len(), dst.len())); }
                    if s.iter().all(|x| x.is_finite()) { dst.copy_from_slice(s); }
                    Ok(())
                })??;
            }
        }
        Ok(est as f64)
    }
}

/// An ONNX file as tract reads it, before its input shapes are fixed: the declared inputs and
/// outputs and the file's metadata. Both controllers that run ONNX models (`onnx` and `r3net`)
/// load through it, so a file is read, checked and optimised the same way for both.
pub struct ReadModel {
    model: InferenceModel,
    /// Graph inputs in order: name and declared dimensions ([`declared_dims`]).
    pub inputs: Vec<(String, Option<Vec<Option<usize>>>)>,
    /// Graph output names in order.
    pub outputs: Vec<String>,
}

impl ReadModel {
    pub fn read(bytes: &[u8]) -> Result<ReadModel, String> {
        let onnx = tract_onnx::onnx();
        let unreadable = |e: &dyn std::fmt::Display| format!("not a readable ONNX model: {e}");
        let proto = onnx.proto_model_for_read(&mut std::io::Cursor::new(bytes)).map_err(|e| unreadable(&root_cause(&e)))?;
        undefined_names(&proto).map_err(|e| unreadable(&e))?;
        let model = no_panic(|| onnx.model_for_proto_model(&proto)).map_err(|e| unreadable(&e))?;
        let mut inputs = Vec::new();
        for (i, o) in model.input_outlets().map_err(|e| e.to_string())?.iter().enumerate() {
            inputs.push((model.node(o.node).name.clone(), declared_dims(model.input_fact(i).map_err(|e| e.to_string())?)));
        }
        let outputs = model.output_outlets().map_err(|e| e.to_string())?.iter().map(|o| model.outlet_label(*o).map_or_else(|| model.node(o.node).name.clone(), str::to_owned)).collect();
        Ok(ReadModel { model, inputs, outputs })
    }

    /// The file's `metadata_props` as key → value (tract keeps the last of repeated keys).
    pub fn metadata(&self) -> std::collections::HashMap<String, String> {
        self.model.properties.iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("onnx.metadata_props.")?.to_owned(), v.try_as_plain_ram().ok()?.to_scalar::<String>().ok()?.clone())))
            .collect()
    }

    /// Fix the inputs to `shapes` (f32), optimise, and make the one reusable run state.
    pub fn into_state(mut self, shapes: &[Vec<usize>]) -> Result<TypedSimpleState, String> {
        for (i, s) in shapes.iter().enumerate() {
            self.model.set_input_fact(i, f32::fact(s).into()).map_err(|e| e.to_string())?;
        }
        let plan = no_panic(|| self.model.into_optimized().and_then(|m| m.into_runnable())).map_err(|e| format!("cannot prepare the model: {e}"))?;
        plan.spawn().map_err(|e| e.to_string())
    }
}

/// A node input or graph output that nothing in the graph defines (tract indexes its name table
/// with them and would panic instead of answering an error).
fn undefined_names(proto: &tract_onnx::pb::ModelProto) -> Result<(), String> {
    let Some(g) = proto.graph.as_ref() else { return Err("the file holds no graph".into()) };
    let mut known: std::collections::HashSet<&str> = g.input.iter().map(|i| i.name.as_str()).chain(g.initializer.iter().map(|t| t.name.as_str())).collect();
    known.extend(g.sparse_initializer.iter().filter_map(|t| t.values.as_ref()).map(|t| t.name.as_str()));
    known.extend(g.node.iter().flat_map(|n| n.output.iter().map(String::as_str)));
    known.insert("");
    let used = g.node.iter().flat_map(|n| n.input.iter()).chain(g.output.iter().map(|o| &o.name));
    match used.into_iter().find(|n| !known.contains(n.as_str())) {
        Some(n) => Err(format!("'{n}' is used but never defined in the graph")),
        None => Ok(()),
    }
}

/// A tract call whose panic on a malformed model becomes an error (a model file is user input).
/// The default panic hook is silenced meanwhile, so the user sees our one-line error and not a
/// "thread panicked at" line from inside tract first. (The hook is process-wide: a panic of
/// another thread within this window would lose its message, not its effect; models are loaded
/// once per flow, when a run is built.)
fn no_panic<T>(f: impl FnOnce() -> TractResult<T>) -> Result<T, String> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(previous);
    match outcome {
        Ok(r) => r.map_err(|e| root_cause(&e)),
        Err(p) => Err(format!("tract failed on this file ({})", p.downcast_ref::<String>().map(String::as_str).or_else(|| p.downcast_ref::<&str>().copied()).unwrap_or("panic"))),
    }
}

/// An f32 input tensor of `shape` holding `v`.
pub fn tensor(shape: &[usize], v: &[f32]) -> Result<TValue, String> { Tensor::from_shape(shape, v).map(|t| t.into_tvalue()).map_err(|e| e.to_string()) }

/// One inference with the state's plan.
pub fn run(state: &mut TypedSimpleState, inputs: TVec<TValue>) -> Result<TVec<TValue>, String> {
    state.run(inputs).map_err(|e| format!("inference failed: {}", root_cause(&e)))
}

/// Run `f` on a tensor's values as `f32` (cast when the model outputs another type).
pub fn with_floats<T>(t: &Tensor, f: impl FnOnce(&[f32]) -> T) -> Result<T, String> {
    let t = t.cast_to::<f32>().map_err(|e| e.to_string())?;
    let view = t.try_as_plain_ram().map_err(|e| e.to_string())?;
    Ok(f(view.as_slice::<f32>().map_err(|e| e.to_string())?))
}

/// The innermost message of a tract error chain (the useful line).
fn root_cause(e: &TractError) -> String { e.root_cause().to_string() }

#[cfg(test)]
mod tests {
    use super::*;

    fn d(v: &[Option<usize>]) -> Option<Vec<Option<usize>>> { Some(v.to_vec()) }

    #[test]
    fn classifies_the_three_signatures() {
        assert_eq!(classify(&[("x".into(), d(&[None, Some(150)]))]).unwrap(), Signature::Stateless { obs: vec![1, 150] });
        assert_eq!(classify(&[("obs".into(), d(&[Some(1), Some(1), Some(150)]))]).unwrap(), Signature::Stateless { obs: vec![1, 1, 150] });
        let st = classify(&[("obs".into(), d(&[Some(1), Some(1), Some(150)])), ("hidden_states".into(), d(&[None, Some(128)])), ("cell_states".into(), d(&[Some(1), Some(128)]))]).unwrap();
        assert_eq!(st, Signature::Stateful { obs: vec![1, 1, 150], hidden: vec![1, 128], cell: vec![1, 128] });
        assert_eq!(classify(&[("obs".into(), d(&[Some(1), Some(4)])), ("h".into(), d(&[Some(1), Some(1), Some(64)]))]).unwrap(), Signature::R3Net);
    }

    #[test]
    fn wrong_signatures_say_what_is_wrong() {
        let e = classify(&[("x".into(), d(&[Some(1), Some(149)]))]).unwrap_err();
        assert!(e.contains("'x' has shape [1, 149]") && e.contains("150"), "{e}");
        let e = classify(&[("obs".into(), d(&[Some(1), Some(1), Some(150)])), ("h".into(), d(&[Some(1), Some(8)])), ("c".into(), d(&[Some(1), Some(8)]))]).unwrap_err();
        assert!(e.contains("unsupported model signature") && e.contains("hidden_states"), "{e}");
        let e = classify(&[("obs".into(), d(&[Some(1), Some(1), Some(150)])), ("hidden_states".into(), d(&[Some(1), None])), ("cell_states".into(), d(&[Some(1), Some(8)]))]).unwrap_err();
        assert!(e.contains("H fixed"), "{e}");
    }

    #[test]
    fn garbage_is_not_a_model() {
        let e = OnnxEstimatorModel::load(b"definitely not protobuf").unwrap_err();
        assert!(e.starts_with("not a readable ONNX model"), "{e}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]
        /// Arbitrary bytes (and the shipped model cut short or with a byte flipped) are an
        /// error, never a panic: a model file is user input.
        #[test]
        fn never_panics_on_bad_files(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), cut in 0usize..4000, flip in 0usize..4000) {
            let _ = ReadModel::read(&b);
            let m = crate::controllers::r3net::SHIPPED_MODEL;
            let _ = ReadModel::read(&m[..cut.min(m.len())]);
            let mut f = m.to_vec();
            let i = flip % f.len();
            f[i] ^= 0x5a;
            if let Ok(r) = ReadModel::read(&f) { let _ = r.into_state(&[vec![1, 4], vec![1, 1, 64]]); }
        }
    }

    #[test]
    fn the_shipped_r3net_model_is_recognised() {
        assert!(OnnxEstimatorModel::load(crate::controllers::r3net::SHIPPED_MODEL).unwrap().is_none());
    }
}
