#![allow(unexpected_cfgs)]
//! `ratelab._core`: the thin PyO3 layer over `ratelab-core`. It reads trace files (the core
//! does no I/O), converts errors into Python exceptions that name the field, releases the GIL
//! while simulating, and never lets a Rust panic cross into Python.

use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use ratelab_core::scenario::Scenario;
use ratelab_core::sim::{build_simulation, Simulation as CoreSim};
use ratelab_core::{ConfigError, Time};
use std::panic::{catch_unwind, AssertUnwindSafe};

create_exception!(_core, ScenarioError, PyValueError, "A scenario field is invalid (attributes: field, message).");
create_exception!(_core, TraceError, PyValueError, "A trace file cannot be used (attributes: path, line, message).");

fn config_err(py: Python<'_>, e: ConfigError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let v = err.value_bound(py);
    let _ = v.setattr("field", e.field.clone());
    let _ = v.setattr("message", e.message.clone());
    err
}

fn panic_err(what: &str) -> PyErr { PyRuntimeError::new_err(format!("internal error in ratelab core during {what} (please report)")) }

/// Guard every call into the core: a panic becomes a Python RuntimeError.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|_| panic_err(what))
}

/// Parse a scenario and load its trace file (if any) into `trace_content`.
fn load_scenario(py: Python<'_>, json: &str) -> PyResult<Scenario> {
    let mut sc = guarded("scenario parsing", || Scenario::from_json(json))?.map_err(|e| config_err(py, e))?;
    if sc.link.trace_content.is_none() {
        if let Some(path) = sc.link.trace.clone() {
            match std::fs::read_to_string(&path) {
                Ok(s) => sc.link.trace_content = Some(s),
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
    if sc.link.trace_content.is_some() {
        if let Err(e) = guarded("trace parsing", || ratelab_core::sim::build::load_trace(&sc.link))? {
            let path = sc.link.trace.clone().unwrap_or_else(|| "<trace>".into());
            let err = TraceError::new_err(format!("{path}: {e}"));
            let v = err.value_bound(py);
            let _ = v.setattr("path", path);
            let _ = v.setattr("line", e.line);
            let _ = v.setattr("message", e.message.clone());
            return Err(err);
        }
    }
    Ok(sc)
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
        out.push(d.into_any().unbind());
    }
    Ok(out)
}

/// Validate a scenario (JSON) completely, including building its controllers and trace.
#[pyfunction]
#[pyo3(signature = (scenario_json, controller=None))]
fn validate_scenario(py: Python<'_>, scenario_json: &str, controller: Option<&str>) -> PyResult<()> {
    let sc = load_scenario(py, scenario_json)?;
    guarded("scenario validation", || build_simulation(&sc, 1, controller).map(|_| ()))?.map_err(|e| config_err(py, e))
}

#[pyclass(module = "ratelab._core")]
struct Simulation {
    inner: CoreSim,
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (scenario_json, seed=1, controller=None))]
    fn new(py: Python<'_>, scenario_json: &str, seed: u64, controller: Option<&str>) -> PyResult<Self> {
        let sc = load_scenario(py, scenario_json)?;
        let inner = guarded("scenario build", || build_simulation(&sc, seed, controller))?.map_err(|e| config_err(py, e))?;
        Ok(Simulation { inner })
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
        py.allow_threads(|| catch_unwind(AssertUnwindSafe(|| inner.run_until(t)))).map_err(|_| panic_err("simulation"))
    }

    /// Drain the per-packet log: columns as numpy arrays.
    fn take_packets(&mut self, py: Python<'_>) -> PyResult<PyObject> {
        let log = self.inner.take_packets();
        let d = PyDict::new_bound(py);
        d.set_item("flow", log.flow.into_pyarray_bound(py))?;
        d.set_item("seq", log.seq.into_pyarray_bound(py))?;
        d.set_item("size", log.size.into_pyarray_bound(py))?;
        d.set_item("send_s", log.send_s.into_pyarray_bound(py))?;
        d.set_item("recv_s", log.recv_s.into_pyarray_bound(py))?;
        d.set_item("lost", log.lost.into_pyarray_bound(py))?;
        Ok(d.into_any().unbind())
    }

    /// Drain the time series: columns as numpy arrays.
    fn take_series(&mut self, py: Python<'_>) -> PyResult<PyObject> {
        let s = self.inner.take_series();
        let d = PyDict::new_bound(py);
        d.set_item("t_s", s.t_s.into_pyarray_bound(py))?;
        d.set_item("flow", s.flow.into_pyarray_bound(py))?;
        d.set_item("target_kbps", s.target_kbps.into_pyarray_bound(py))?;
        d.set_item("encoder_kbps", s.encoder_kbps.into_pyarray_bound(py))?;
        d.set_item("pacing_kbps", s.pacing_kbps.into_pyarray_bound(py))?;
        d.set_item("send_kbps", s.send_kbps.into_pyarray_bound(py))?;
        d.set_item("recv_kbps", s.recv_kbps.into_pyarray_bound(py))?;
        d.set_item("owd_ms", s.owd_ms.into_pyarray_bound(py))?;
        d.set_item("capacity_kbps", s.capacity_kbps.into_pyarray_bound(py))?;
        d.set_item("queue_ms", s.queue_ms.into_pyarray_bound(py))?;
        d.set_item("cwnd_bytes", s.cwnd_bytes.into_pyarray_bound(py))?;
        Ok(d.into_any().unbind())
    }

    /// Run summary (link and per-flow metrics) as a dict.
    fn summary(&self, py: Python<'_>) -> PyResult<PyObject> {
        let s = guarded("summary", || self.inner.summary())?;
        let v = serde_json::to_value(s).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        json_to_py(py, &v)
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ScenarioError", m.py().get_type_bound::<ScenarioError>())?;
    m.add("ConfigError", m.py().get_type_bound::<ScenarioError>())?;
    m.add("TraceError", m.py().get_type_bound::<TraceError>())?;
    m.add_function(wrap_pyfunction!(controllers, m)?)?;
    m.add_function(wrap_pyfunction!(validate_scenario, m)?)?;
    m.add_class::<Simulation>()?;
    Ok(())
}
