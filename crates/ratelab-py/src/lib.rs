#![allow(unexpected_cfgs)]
//! `ratelab._core`: the thin PyO3 layer over `ratelab-core`. It reads trace files (the core
//! does no I/O), converts errors into Python exceptions that name the field, releases the GIL
//! while simulating, and never lets a Rust panic cross into Python.

use numpy::{IntoPyArray, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use ratelab_core::scenario::Scenario;
use ratelab_core::sim::{build_simulation_ext, Simulation as CoreSim};
use std::sync::Arc;
use ratelab_core::{ConfigError, Time};
use std::panic::{catch_unwind, AssertUnwindSafe};

mod emulator_handle;
mod live;
mod pyctl;

create_exception!(_core, ScenarioError, PyValueError, "A scenario field is invalid (attributes: field, message).");
create_exception!(_core, TraceError, PyValueError, "A trace file cannot be used (attributes: path, line, message).");

fn config_err(py: Python<'_>, e: ConfigError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let v = err.value_bound(py);
    let _ = v.setattr("field", e.field.clone());
    let _ = v.setattr("message", e.message.clone());
    err
}

/// The binding is the I/O layer: controllers that name files (ONNX models) read them here.
fn file_reader() -> ratelab_core::controllers::FileReader {
    std::sync::Arc::new(|path: &str| std::fs::read(path).map_err(|e| e.to_string()))
}

fn panic_err(what: &str) -> PyErr { PyRuntimeError::new_err(format!("internal error in ratelab core during {what} (please report)")) }

/// Guard every call into the core: a panic becomes a Python RuntimeError.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|_| panic_err(what))
}

/// Parse a scenario and load its trace files (links, route changes) into `trace_content`.
fn load_scenario(py: Python<'_>, json: &str) -> PyResult<Scenario> {
    let mut sc = guarded("scenario parsing", || Scenario::from_json(json))?.map_err(|e| config_err(py, e))?;
    for link in sc.links_mut() { read_trace(py, link)?; }
    Ok(sc)
}

/// Read a link's trace file into `trace_content` and check that it parses.
fn read_trace(py: Python<'_>, link: &mut ratelab_core::scenario::LinkConfig) -> PyResult<()> {
    if link.trace_content.is_none() {
        if let Some(path) = link.trace.clone() {
            match std::fs::read_to_string(&path) {
                Ok(s) => link.trace_content = Some(s),
                Err(e) => {
                    let err = TraceError::new_err(format!("{path}: cannot read trace: {e}"));
                    let v = err.value_bound(py);
                    let _ = v.setattr("path", path.clone());
                    let _ = v.setattr("line", py.None());
                    let _ = v.setattr("message", format!("cannot read trace: {e}"));
                    return Err(err);
                }
            }
        }
    }
    if link.trace_content.is_some() {
        if let Err(e) = guarded("trace parsing", || ratelab_core::sim::build::load_trace(link))? {
            let path = link.trace.clone().unwrap_or_else(|| "<trace>".into());
            let err = TraceError::new_err(format!("{path}: {e}"));
            let v = err.value_bound(py);
            let _ = v.setattr("path", path);
            let _ = v.setattr("line", e.line);
            let _ = v.setattr("message", e.message.clone());
            return Err(err);
        }
    }
    Ok(())
}

fn json_to_py(py: Python<'_>, v: &serde_json::Value) -> PyResult<PyObject> {
    let json = py.import_bound("json")?;
    Ok(json.call_method1("loads", (v.to_string(),))?.unbind())
}

/// Controllers known to the core: name, summary and default parameters.
#[pyfunction]
fn controllers(py: Python<'_>) -> PyResult<Vec<PyObject>> {
    let mut out = Vec::new();
    for e in ratelab_core::controllers::registry() {
        let d = PyDict::new_bound(py);
        d.set_item("name", e.name)?;
        d.set_item("summary", e.summary)?;
        d.set_item("defaults", json_to_py(py, &guarded("controller defaults", || (e.defaults)())?)?)?;
        d.set_item("side", match e.side { ratelab_core::controllers::Side::Sender => "sender", ratelab_core::controllers::Side::Receiver => "receiver" })?;
        d.set_item("required_file", e.required_file)?;
        d.set_item("compared", e.compared)?;
        d.set_item("in_all", e.in_all())?;
        out.push(d.into_any().unbind());
    }
    Ok(out)
}

/// Validate a scenario (JSON) completely, including building its controllers and trace.
#[pyfunction]
#[pyo3(signature = (scenario_json, controller=None))]
fn validate_scenario(py: Python<'_>, scenario_json: &str, controller: Option<&str>) -> PyResult<()> {
    let sc = load_scenario(py, scenario_json)?;
    let shared = Arc::new(pyctl::Shared::default());
    guarded("scenario validation", || build_simulation_ext(&sc, 1, controller, Some(file_reader()), Some(pyctl::factory(shared))).map(|_| ()))?.map_err(|e| config_err(py, e))
}

/// The declared range of every numeric scenario field (`scenario::limits::LIMITS`), for docs.
#[pyfunction]
fn scenario_limits(py: Python<'_>) -> PyResult<PyObject> {
    json_to_py(py, &ratelab_core::scenario::limits::limits_json())
}

#[pyclass(module = "ratelab._core")]
struct Simulation {
    inner: CoreSim,
    /// Failures of the run's Python controllers (none built: never looked at).
    python: Arc<pyctl::Shared>,
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (scenario_json, seed=1, controller=None))]
    fn new(py: Python<'_>, scenario_json: &str, seed: u64, controller: Option<&str>) -> PyResult<Self> {
        let sc = load_scenario(py, scenario_json)?;
        let python = Arc::new(pyctl::Shared::default());
        let ext = pyctl::factory(python.clone());
        let mut inner = guarded("scenario build", || build_simulation_ext(&sc, seed, controller, Some(file_reader()), Some(ext)))?.map_err(|e| config_err(py, e))?;
        if python.any_built() { inner.set_abort(python.abort.clone()); }
        Ok(Simulation { inner, python })
    }

    #[getter]
    fn duration_s(&self) -> f64 { self.inner.end().as_secs_f64() }
    #[getter]
    fn now_s(&self) -> f64 { self.inner.now().as_secs_f64() }
    #[getter]
    fn events(&self) -> u64 { self.inner.events_processed() }

    #[getter]
    fn flows(&self, py: Python<'_>) -> PyResult<PyObject> {
        let v = serde_json::to_value(self.inner.flow_infos()).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        json_to_py(py, &v)
    }

    /// Advance to `until_s` (default: the end) with the GIL released. True when finished.
    #[pyo3(signature = (until_s=None))]
    fn run(&mut self, py: Python<'_>, until_s: Option<f64>) -> PyResult<bool> {
        let t = match until_s {
            Some(s) if s.is_finite() => Time::from_secs_f64(s),
            Some(_) => return Err(PyValueError::new_err("until_s must be finite")),
            None => self.inner.end(),
        };
        let inner = &mut self.inner;
        let done = py.allow_threads(|| catch_unwind(AssertUnwindSafe(|| inner.run_until(t)))).map_err(|_| panic_err("simulation"))?;
        if let Some(e) = self.python.take_error(py) { return Err(e); }
        Ok(done)
    }

    /// Drain the per-packet log: columns as numpy arrays.
    fn take_packets(&mut self, py: Python<'_>) -> PyResult<PyObject> { live::packets_dict(py, self.inner.take_packets()) }

    /// Drain the time series: columns as numpy arrays.
    fn take_series(&mut self, py: Python<'_>) -> PyResult<PyObject> { live::series_dict(py, self.inner.take_series()) }

    /// Run summary (link and per-flow metrics) as a dict.
    fn summary(&self, py: Python<'_>) -> PyResult<PyObject> {
        let s = guarded("summary", || self.inner.summary())?;
        let v = serde_json::to_value(s).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        json_to_py(py, &v)
    }
}

/// Batched RL environment (issue 5): N simulators stepped in one call with the GIL released.
#[pyclass(module = "ratelab._core")]
struct RlVecEnv {
    inner: ratelab_core::sim::env::VecEnv,
    n: usize,
    /// Failures of a Python competitor controller (`EnvConfig::competitor`).
    python: Arc<pyctl::Shared>,
    /// Observation length (4 for R3Net's, 150 for the MMSys'24 one).
    dim: usize,
}

fn rl_err(py: Python<'_>, e: ConfigError) -> PyErr { config_err(py, e) }

type StepArrays = (Vec<f32>, Vec<f64>, Vec<bool>, Vec<bool>, Vec<f32>, Vec<f64>);

/// Raw features per row: recv_kbps, interval_ms, loss_pct, rtt_ms, capacity_kbps, estimate_kbps.
const RAW: usize = 6;

fn raw_row(o: &ratelab_core::sim::env::StepOut) -> [f64; RAW] {
    [o.raw.recv_kbps, o.raw.interval_ms, o.raw.loss_pct, o.raw.rtt_ms, o.capacity_kbps, o.estimate_kbps]
}

#[pymethods]
impl RlVecEnv {
    /// `config_json`: EnvConfig as JSON ("" = defaults). `traces`: list of (name, file content).
    #[new]
    #[pyo3(signature = (config_json, traces, num_envs, seed=0, threads=1, autoreset=true))]
    fn new(py: Python<'_>, config_json: &str, traces: Vec<(String, String)>, num_envs: usize, seed: u64, threads: usize, autoreset: bool) -> PyResult<Self> {
        use ratelab_core::sim::env::{CapacityTrace, EnvConfig, VecEnv};
        let cfg = guarded("env config", || EnvConfig::from_json(config_json))?.map_err(|e| rl_err(py, e))?;
        let dim = cfg.obs_dim();
        let mut parsed = Vec::with_capacity(traces.len());
        for (name, content) in &traces {
            match guarded("trace parsing", || CapacityTrace::parse(name, content))? {
                Ok(t) => parsed.push(t),
                Err(e) => {
                    let err = TraceError::new_err(format!("{name}: {e}"));
                    let v = err.value_bound(py);
                    let _ = v.setattr("path", name.clone());
                    let _ = v.setattr("line", e.line);
                    let _ = v.setattr("message", e.message.clone());
                    return Err(err);
                }
            }
        }
        let mut inner = guarded("env build", || VecEnv::new(cfg, parsed, num_envs, seed, threads, autoreset))?.map_err(|e| rl_err(py, e))?;
        let python = Arc::new(pyctl::Shared::default());
        inner.set_external(pyctl::factory(python.clone()));
        Ok(RlVecEnv { inner, n: num_envs, python, dim })
    }

    #[getter]
    fn num_envs(&self) -> usize { self.n }
    /// Length of one observation.
    #[getter]
    fn obs_dim(&self) -> usize { self.dim }
    #[getter]
    fn steps_per_episode(&self) -> u32 { self.inner.env(0).map_or(0, |e| e.max_steps()) }

    /// Reset all (seeds: one per env, or None to continue each env's RNG).
    /// Returns (obs [N, D] float32, raw [N, 6] float64); D = `obs_dim`.
    #[pyo3(signature = (seeds=None))]
    fn reset(&mut self, py: Python<'_>, seeds: Option<Vec<u64>>) -> PyResult<(PyObject, PyObject)> {
        if let Some(s) = &seeds { if s.len() != self.n { return Err(PyValueError::new_err(format!("expected {} seeds, got {}", self.n, s.len()))); } }
        let inner = &mut self.inner;
        let res = py.allow_threads(|| catch_unwind(AssertUnwindSafe(|| inner.reset(seeds.as_deref())))).map_err(|_| panic_err("env reset"))?;
        if let Some(e) = self.python.take_error(py) { return Err(e); }
        let outs = res.map_err(|e| rl_err(py, e))?;
        let obs: Vec<f32> = outs.iter().flat_map(|o| o.obs.iter().copied()).collect();
        let raw: Vec<f64> = outs.iter().flat_map(raw_row).collect();
        let obs = numpy::PyArray1::from_vec_bound(py, obs).reshape([self.n, self.dim])?;
        let raw = numpy::PyArray1::from_vec_bound(py, raw).reshape([self.n, RAW])?;
        Ok((obs.into_any().unbind(), raw.into_any().unbind()))
    }

    /// Step with actions (float32 array of N values in [0, 1]); GIL released while simulating.
    /// Returns (obs [N,D], reward [N], terminated [N], truncated [N], final_obs [N,D], raw [N,6]).
    /// With autoreset, rows whose episode ended hold the next episode's first observation and
    /// the ended episode's last observation in final_obs (same-step autoreset).
    fn step(&mut self, py: Python<'_>, actions: numpy::PyReadonlyArray1<'_, f32>) -> PyResult<PyObject> {
        let acts: Vec<f32> = actions.as_slice()?.to_vec();
        let inner = &mut self.inner;
        let res = py.allow_threads(|| catch_unwind(AssertUnwindSafe(|| -> Result<StepArrays, ConfigError> {
            let steps = inner.step(&acts)?;
            let n = steps.len();
            let (mut obs, mut rew, term, mut trunc, mut fin, mut raw) = (Vec::new(), Vec::with_capacity(n), vec![false; n], Vec::with_capacity(n), Vec::new(), Vec::with_capacity(RAW * n));
            for s in &steps {
                obs.extend_from_slice(&s.out.obs);
                rew.push(s.out.reward);
                trunc.push(s.out.truncated);
                let last = s.final_out.as_ref().unwrap_or(&s.out);
                fin.extend_from_slice(&last.obs);
                raw.extend_from_slice(&raw_row(last));
            }
            Ok((obs, rew, term, trunc, fin, raw))
        }))).map_err(|_| panic_err("env step"))?;
        if let Some(e) = self.python.take_error(py) { return Err(e); }
        let (obs, rew, term, trunc, fin, raw) = res.map_err(|e| rl_err(py, e))?;
        let (n, d) = (self.n, self.dim);
        let t = (
            numpy::PyArray1::from_vec_bound(py, obs).reshape([n, d])?,
            rew.into_pyarray_bound(py),
            term.into_pyarray_bound(py),
            trunc.into_pyarray_bound(py),
            numpy::PyArray1::from_vec_bound(py, fin).reshape([n, d])?,
            numpy::PyArray1::from_vec_bound(py, raw).reshape([n, RAW])?,
        );
        Ok(t.into_py(py))
    }

    /// What env `i`'s current episode was drawn as (trace, delays, queue, loss, competitors).
    fn episode(&self, py: Python<'_>, i: usize) -> PyResult<PyObject> {
        let e = self.inner.env(i).ok_or_else(|| PyValueError::new_err("env index out of range"))?;
        let v = serde_json::to_value(e.episode()).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        json_to_py(py, &v)
    }
}

/// Default environment configuration (JSON object as dict).
#[pyfunction]
fn rl_env_defaults(py: Python<'_>) -> PyResult<PyObject> {
    let v = serde_json::to_value(ratelab_core::sim::env::EnvConfig::default()).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    json_to_py(py, &v)
}

/// A synthetic capacity trace: (start_s array, kbps array).
#[pyfunction]
#[pyo3(signature = (kind, seed, duration_s, min_kbps=100.0, max_kbps=8000.0))]
fn synthetic_trace(py: Python<'_>, kind: &str, seed: u64, duration_s: f64, min_kbps: f64, max_kbps: f64) -> PyResult<(PyObject, PyObject)> {
    use rand::SeedableRng;
    let k = ratelab_core::sim::synth::SynthKind::parse(kind).ok_or_else(|| PyValueError::new_err(format!("unknown synthetic kind '{kind}' (markov, random-walk, step)")))?;
    if !(duration_s.is_finite() && (0.0..=1e6).contains(&duration_s)) { return Err(PyValueError::new_err("duration_s must be in [0, 1e6]")); }
    let steps = guarded("synthetic trace", || ratelab_core::sim::synth::generate(k, &mut rand_chacha::ChaCha8Rng::seed_from_u64(seed), duration_s, min_kbps, max_kbps))?;
    let (t, c): (Vec<f64>, Vec<f64>) = steps.into_iter().unzip();
    Ok((t.into_pyarray_bound(py).into_any().unbind(), c.into_pyarray_bound(py).into_any().unbind()))
}

/// Run an R3Net ONNX policy as the `r3net` controller does (tract-onnx in Rust) over a
/// sequence of scaled observations (float32 [T, 4]) from a zero hidden state; returns the
/// action means [T] (the controller's decisions before mapping). For parity tests against
/// onnxruntime.
#[pyfunction]
fn r3net_policy_steps(py: Python<'_>, model_path: &str, obs: numpy::PyReadonlyArray2<'_, f32>) -> PyResult<PyObject> {
    use ratelab_core::controllers::r3net::R3NetPolicy;
    let bytes = std::fs::read(model_path).map_err(|e| PyValueError::new_err(format!("{model_path}: {e}")))?;
    let shape = obs.shape().to_vec();
    if shape.len() != 2 || shape[1] != 4 { return Err(PyValueError::new_err("obs must be [T, 4]")); }
    let v: Vec<f32> = obs.as_array().iter().copied().collect();
    let out = py.allow_threads(|| catch_unwind(AssertUnwindSafe(|| -> Result<Vec<f32>, String> {
        let mut p = R3NetPolicy::load(&bytes)?;
        v.chunks_exact(4).map(|c| p.step(&[c[0], c[1], c[2], c[3]])).collect()
    }))).map_err(|_| panic_err("r3net policy"))?;
    let a = out.map_err(PyValueError::new_err)?;
    Ok(a.into_pyarray_bound(py).into_any().unbind())
}

/// Run a user's ONNX estimator (the `onnx` controller's model, tract-onnx in Rust) over a
/// sequence of MMSys'24 observations (float32 [T, 150]) from a zero recurrent state; returns
/// the estimates in bit/s [T] (float64). For parity tests against onnxruntime. A model error is
/// a ValueError with the controller's message.
#[pyfunction]
fn onnx_policy_steps(py: Python<'_>, model_path: &str, obs: numpy::PyReadonlyArray2<'_, f32>) -> PyResult<PyObject> {
    use ratelab_core::controllers::onnx::{features::OBS_LEN, model::OnnxEstimatorModel};
    let bytes = std::fs::read(model_path).map_err(|e| PyValueError::new_err(format!("{model_path}: {e}")))?;
    let shape = obs.shape().to_vec();
    if shape.len() != 2 || shape[1] != OBS_LEN { return Err(PyValueError::new_err(format!("obs must be [T, {OBS_LEN}]"))); }
    let v: Vec<f32> = obs.as_array().iter().copied().collect();
    let out = py.allow_threads(|| catch_unwind(AssertUnwindSafe(|| -> Result<Vec<f64>, String> {
        let mut m = OnnxEstimatorModel::load(&bytes)?.ok_or("an R3Net model: use r3net_policy_steps")?;
        v.chunks_exact(OBS_LEN).map(|c| m.step(c.try_into().expect("chunk of OBS_LEN"))).collect()
    }))).map_err(|_| panic_err("onnx policy"))?;
    let a = out.map_err(|e| PyValueError::new_err(format!("{model_path}: {e}")))?;
    Ok(a.into_pyarray_bound(py).into_any().unbind())
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ScenarioError", m.py().get_type_bound::<ScenarioError>())?;
    m.add("ConfigError", m.py().get_type_bound::<ScenarioError>())?;
    m.add("TraceError", m.py().get_type_bound::<TraceError>())?;
    m.add_function(wrap_pyfunction!(controllers, m)?)?;
    m.add_function(wrap_pyfunction!(validate_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_limits, m)?)?;
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(live::live_run, m)?)?;
    m.add_function(wrap_pyfunction!(live::live_send, m)?)?;
    m.add_function(wrap_pyfunction!(live::live_recv, m)?)?;
    m.add_function(wrap_pyfunction!(live::emulate, m)?)?;
    m.add_function(wrap_pyfunction!(emulator_handle::emulator_start, m)?)?;
    m.add_class::<emulator_handle::EmulatorHandle>()?;
    m.add_class::<RlVecEnv>()?;
    m.add_function(wrap_pyfunction!(rl_env_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(synthetic_trace, m)?)?;
    m.add_function(wrap_pyfunction!(r3net_policy_steps, m)?)?;
    m.add_function(wrap_pyfunction!(onnx_policy_steps, m)?)?;
    Ok(())
}
